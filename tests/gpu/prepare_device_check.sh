#!/usr/bin/env bash
# Run HERE (the Debian build machine) before device_check.sh: builds memstage and copies
# what the GPU machine needs into build-gpu/ (about 15 MiB): the memstage binary, the
# preload library and its Python bootstrap, and every shared library they need beyond
# glibc's own (that machine has no Debian packages), without debug information. Then, with the device tool:
#   run(command="bash tests/gpu/device_check.sh", carry=["build-gpu"], timeout_s=420)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${MEMSTAGE_BUILD:-build}
cmake --build "$build" --target memstage memstage_preload >/dev/null
dest=build-gpu
rm -rf "$dest"
mkdir -p "$dest/bin" "$dest/lib/memstage" "$dest/deps"
cp "$build/bin/memstage" "$dest/bin/"
cp -r "$build/lib/memstage/." "$dest/lib/memstage/"
for binary in "$dest/bin/memstage" "$dest/lib/memstage/libmemstage_preload.so"; do
  ldd "$binary" | awk '/=> \// { print $3 }' |
    grep -v -E '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' |
    while read -r lib; do cp -L -n "$lib" "$dest/deps/"; done
done
# Debug information is most of the size; the carry limit is 64 MiB in all.
find "$dest" -type f \( -name 'memstage' -o -name '*.so*' \) -exec strip --strip-debug {} +
du -sh "$dest"
ls "$dest/deps"
