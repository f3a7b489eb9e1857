#!/bin/sh
# Copies files of one npm package, at the version its folder's
# package-lock.json pins, into a directory the binary embeds, so pages load
# nothing from another origin. Only the package's own tarball is fetched,
# with npm pack, and its integrity checked against the lockfile's; its
# dependency tree is not installed (the files copied are self-contained).
#
# usage: fetch-npm-files.sh LOCKDIR PACKAGE DEST FILE...
# Each FILE is a path inside the package; it is copied to DEST under its
# base name.
set -eu
lockdir=$(cd "$1" && pwd)
pkg=$2
dest=$3
shift 3
entry="require('$lockdir/package-lock.json').packages['node_modules/$pkg']"
version=$(node -p "$entry.version")
want=$(node -p "$entry.integrity")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent --json "$pkg@$version" >pack.json)
got=$(node -p "require('$tmp/pack.json')[0].integrity")
if [ "$got" != "$want" ]; then
	echo "$pkg@$version: integrity $got, package-lock.json pins $want" >&2
	exit 1
fi
tar -xzf "$tmp"/*.tgz -C "$tmp"
for f in "$@"; do
	cp "$tmp/package/$f" "$dest/$(basename "$f")"
done
