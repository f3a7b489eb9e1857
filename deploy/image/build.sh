#!/bin/sh
# Builds Steward's container image with buildah, from scratch: the tree
# rootfs.sh completed in STAGE (static binaries, /etc, /tmp) and /data
# owned by the image's user, 65532. Nothing runs inside the image while it
# is built, so neither a base image nor a registry is needed.
#
# usage: build.sh STAGE IMAGE VERSION
# buildah's storage is its own default; where overlay is not available
# (a container without fuse), STORAGE_DRIVER=vfs selects the portable one.
set -eu
[ $# -eq 3 ] || { echo "usage: $0 STAGE IMAGE VERSION" >&2; exit 2; }
stage=$1
image=$2
version=$3
revision=$(git -C "$(dirname "$0")" rev-parse HEAD 2>/dev/null || echo unknown)
oci=org.opencontainers.image

ctr=$(buildah from scratch)
trap 'buildah rm "$ctr" >/dev/null' EXIT
buildah copy --quiet "$ctr" "$stage/rootfs" /
buildah copy --quiet --chown 65532:65532 "$ctr" "$stage/owned" /
buildah config \
	--user 65532:65532 \
	--entrypoint '["/steward"]' \
	--cmd serve \
	--env STEWARD_ENV=production \
	--env STEWARD_HTTP_ADDR=:8000 \
	--env STEWARD_DATA_DIR=/data \
	--env STEWARD_PLUGINS_FILE=/etc/steward/plugins.hcl \
	--port 8000/tcp \
	--volume /data \
	--label "$oci.title=steward" \
	--label "$oci.description=Multi-tenant cloud governance hub: the host and its plugins" \
	--label "$oci.source=https://github.com/stewardhq/steward" \
	--label "$oci.version=$version" \
	--label "$oci.revision=$revision" \
	--label "$oci.created=$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
	"$ctr"
buildah commit --quiet "$ctr" "$image"
buildah images --format '{{.Name}}:{{.Tag}} {{.ID}} {{.Size}}' "$image"
