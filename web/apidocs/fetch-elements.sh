#!/bin/sh
# Copies Stoplight Elements' browser bundle, at the version package-lock.json
# pins, into the directory the host embeds (the first argument), so /docs
# needs no other origin. Only the package's own tarball is fetched, with npm
# pack, and its integrity checked against the lockfile's: the bundle is
# self-contained, and installing the package's dependency tree (about 1 GB)
# would add nothing to it.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dest=$1
entry="require('$here/package-lock.json').packages['node_modules/@stoplight/elements']"
version=$(node -p "$entry.version")
want=$(node -p "$entry.integrity")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent --json "@stoplight/elements@$version" >pack.json)
got=$(node -p "require('$tmp/pack.json')[0].integrity")
if [ "$got" != "$want" ]; then
	echo "@stoplight/elements@$version: integrity $got, package-lock.json pins $want" >&2
	exit 1
fi
tar -xzf "$tmp"/*.tgz -C "$tmp"
for f in web-components.min.js web-components.min.js.LICENSE.txt styles.min.css; do
	cp "$tmp/package/$f" "$dest/$f"
done
