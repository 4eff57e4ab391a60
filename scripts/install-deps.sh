#!/usr/bin/env bash
# Installs the Debian 12 packages PReCCL builds, tests and benchmarks with; does nothing when all are present.
set -euo pipefail
pkgs=(cmake make g++ pkg-config libfmt-dev catch2 libhwloc-dev openmpi-bin libopenmpi-dev libgloo-dev iproute2 python3
      python3-torch libtorch-dev pybind11-dev python3-setuptools ninja-build)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
