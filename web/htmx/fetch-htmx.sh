#!/bin/sh
# Copies htmx's minified script, at the version package-lock.json pins, into
# the directory the web UI embeds (the first argument), so pages load no
# script from any other origin. Only the package's tarball is fetched, with
# npm pack, and its integrity checked against the lockfile's; htmx has no
# dependencies.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dest=$1
entry="require('$here/package-lock.json').packages['node_modules/htmx.org']"
version=$(node -p "$entry.version")
want=$(node -p "$entry.integrity")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent --json "htmx.org@$version" >pack.json)
got=$(node -p "require('$tmp/pack.json')[0].integrity")
if [ "$got" != "$want" ]; then
	echo "htmx.org@$version: integrity $got, package-lock.json pins $want" >&2
	exit 1
fi
tar -xzf "$tmp"/*.tgz -C "$tmp"
cp "$tmp/package/dist/htmx.min.js" "$dest/htmx.min.js"
