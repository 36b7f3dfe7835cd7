#!/usr/bin/env bash
# Installs every Debian package memstage needs to build, test and run its demo.
# Idempotent: a second run installs nothing new. Needs root (or sudo).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libunwind-dev libdw-dev libelf-dev libzstd-dev zstd libncurses-dev
  libjemalloc-dev libjemalloc2 libtcmalloc-minimal4 libgoogle-perftools-dev libmimalloc-dev
  nlohmann-json3-dev libcli11-dev libfmt-dev catch2 libbenchmark-dev libabsl-dev
  libprotobuf-dev protobuf-compiler golang-go golang-github-google-pprof-dev zlib1g-dev
  libcpp-httplib-dev prometheus
  heaptrack valgrind python3 python3-jsonschema sqlite3
  gdb util-linux tmux
  clang libclang-rt-dev
  python3-pytest python3-pytest-xdist python3-nbclient python3-ipykernel python3-numpy python3-scipy python3-pandas python3-sklearn python3-torch python3-venv python3-setuptools python3-pip
  chromium
  fasttext
)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# Node.js drives the browser test; machines that ship their own node keep it.
if ! command -v node >/dev/null 2>&1; then missing+=(nodejs npm); fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages already installed"
  exit 0
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
