#!/usr/bin/env bash
# Fetches the API reference's script from npm into this directory: Redoc's
# standalone bundle, pinned to one version and checked against the sha256
# below, and its licence notices. The result is committed and embedded by
# site/docs.go, so building and running matrixd needs no Node; run this
# only to change the version (then update the sums).
set -euo pipefail
cd "$(dirname "$0")"

version=2.5.4
bundle_sha256=dcaf76612bc4a3fbcc923a8966dee2f6146a5f32e5ce1b6f02dd60cbbf89500b
license_sha256=eed602ec32e00b2b9df1984fbcc26a687b1b3193ec01961389c4b8439e6edf73

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tarball=$(npm pack --silent --pack-destination "$tmp" "redoc@$version")
tar -xzf "$tmp/$tarball" -C "$tmp" package/bundles/redoc.standalone.js package/bundles/redoc.standalone.js.LICENSE.txt package/LICENSE
echo "$bundle_sha256  $tmp/package/bundles/redoc.standalone.js" | sha256sum --check --quiet
echo "$license_sha256  $tmp/package/bundles/redoc.standalone.js.LICENSE.txt" | sha256sum --check --quiet
cp "$tmp/package/bundles/redoc.standalone.js" redoc.standalone.js
{
  cat "$tmp/package/LICENSE"
  printf '\n\nThird-party notices bundled in redoc.standalone.js:\n\n'
  cat "$tmp/package/bundles/redoc.standalone.js.LICENSE.txt"
} >redoc.LICENSE.txt
echo "redoc $version: $(wc -c <redoc.standalone.js) bytes"
