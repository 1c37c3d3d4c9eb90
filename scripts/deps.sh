#!/usr/bin/env bash
# Installs the Debian packages magpie needs for a purpose, if any are missing.
# Usage: scripts/deps.sh test|bench|docs|build   (sourced or executed; needs root or sudo for apt-get)
set -euo pipefail

common=(cmake ninja-build g++-12 clang-16 libclang-rt-16-dev libhwloc-dev pkg-config libasio-dev)
case "${1:-test}" in
  test)  wanted=("${common[@]}" libgtest-dev spin gcc clang-format-16 clang-tidy-16 libc++-16-dev
                 libc++abi-16-dev libopenmpi-dev openmpi-bin pkg-config doxygen python3 gdb chromium fonts-dejavu-core) ;;
  bench) wanted=("${common[@]}" libtbb-dev libomp-16-dev libbenchmark-dev python3 python3-matplotlib time
                 libopenmpi-dev openmpi-bin) ;;
  docs)  wanted=(doxygen) ;;
  build) wanted=("${common[@]}") ;;
  *) echo "usage: $0 test|bench|docs|build" >&2; exit 2 ;;
esac

missing=()
for pkg in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "magpie: installing ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
