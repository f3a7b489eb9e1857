#!/bin/sh
# Completes the tree of Steward's container image in STAGE, whose
# rootfs/steward and rootfs/plugins/<name> make image has built (static
# binaries): adds /etc (users, name service, CA certificates, plugins.hcl,
# the partner plugin's example catalogue), /tmp, and /data owned by the
# image's user. build.sh and deploy/Containerfile copy the result as it is.
#
# usage: rootfs.sh STAGE
set -eu
[ $# -eq 1 ] || { echo "usage: $0 STAGE" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
root=$1/rootfs
owned=$1/owned
ca=/etc/ssl/certs/ca-certificates.crt

# Every plugin built is declared at /plugins/<name>, and every declared
# binary is built: the image starts no plugin it lacks.
declared=$(sed -n 's|^ *binary *= *"/plugins/\([^"]*\)".*|\1|p' "$here/etc/steward/plugins.hcl" | sort)
built=$(ls "$root/plugins" | sort)
if [ "$declared" != "$built" ]; then
	echo "rootfs.sh: deploy/image/etc/steward/plugins.hcl declares [$(echo $declared)], the image holds [$(echo $built)]" >&2
	exit 1
fi
[ -r "$ca" ] || { echo "rootfs.sh: $ca is missing (Debian: apt-get install ca-certificates)" >&2; exit 1; }

mkdir -p "$root/etc/ssl/certs" "$root/etc/steward/partner" "$root/tmp" "$owned/data"
cp -R "$here/etc/." "$root/etc/"
cp "$ca" "$root/etc/ssl/certs/ca-certificates.crt"
cp "$repo/plugins/partner/catalogue.example.hcl" "$root/etc/steward/partner/"
find "$root/etc" -type d -exec chmod 0755 {} +
find "$root/etc" -type f -exec chmod 0644 {} +
chmod 0755 "$root/steward" "$root"/plugins/*
chmod 1777 "$root/tmp"
chmod 0700 "$owned/data"
