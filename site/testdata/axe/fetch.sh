#!/usr/bin/env bash
# Fetches axe-core, the accessibility checker the browser tests run in
# Chromium, from npm into this directory: axe.min.js pinned to one version
# and checked against the sha256 below, and its licence (MPL-2.0, which lets
# the unmodified file be redistributed with its notice). The result is
# committed and read by site/a11y_test.go, so the tests need no Node and
# no network; run this only to change the version (then update the sums).
set -euo pipefail
cd "$(dirname "$0")"

version=4.14.1
script_sha256=29348999450cdf2849a8e70b7912fc2da85a849da39c0d0d5394f51d4a9ed95c
license_sha256=af175b9d96ee93c21a036152e1b905b0b95304d4ae8c2c921c7609100ba8df7e
notices_sha256=4f8563870d0fca38bbc3e00b6f670cb7fa9f380ba9f26a7f7d1184a6b18b1653

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tarball=$(npm pack --silent --pack-destination "$tmp" "axe-core@$version")
tar -xzf "$tmp/$tarball" -C "$tmp" package/axe.min.js package/LICENSE package/LICENSE-3RD-PARTY.txt
echo "$script_sha256  $tmp/package/axe.min.js" | sha256sum --check --quiet
echo "$license_sha256  $tmp/package/LICENSE" | sha256sum --check --quiet
echo "$notices_sha256  $tmp/package/LICENSE-3RD-PARTY.txt" | sha256sum --check --quiet
cp "$tmp/package/axe.min.js" axe.min.js
{
  cat "$tmp/package/LICENSE"
  printf '\n\nThird-party notices for axe.min.js:\n\n'
  cat "$tmp/package/LICENSE-3RD-PARTY.txt"
} >axe.LICENSE.txt
echo "axe-core $version: $(wc -c <axe.min.js) bytes"
