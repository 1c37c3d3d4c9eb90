#!/usr/bin/env bash
# Builds magpie's HTML documentation: the API reference (from the public headers; detail/ is
# excluded) and the guide (docs/guide/), with README.md as the front page. Installs Doxygen if it
# is missing. Any Doxygen warning fails the build: an undocumented public name, a broken link.
# Usage: scripts/docs.sh [OUTPUT_DIR]   (default build/docs; open OUTPUT_DIR/html/index.html)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh docs

out=${1:-build/docs}
mkdir -p "$out"
# The version is defined once, in project() of CMakeLists.txt.
version=$(sed -n 's/^project(magpie VERSION \([0-9][0-9.]*\).*/\1/p' CMakeLists.txt)
if [ -z "$version" ]; then
  echo "docs.sh: no version found in CMakeLists.txt's project()" >&2
  exit 1
fi
rm -rf "$out/html"
MAGPIE_VERSION=$version MAGPIE_DOCS_OUT=$out doxygen docs/Doxyfile
echo "magpie docs $version: $out/html/index.html"
