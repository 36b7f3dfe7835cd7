#!/usr/bin/env bash
# `memstage report` loads libdw's debuginfod client (and libcurl, gnutls, kerberos with it)
# only when asked to use a server (MEMSTAGE_DEBUGINFOD, DEBUGINFOD_URLS): LD_DEBUG=files
# lists what a process loads. PROGRAM's stacks go through libstdc++, which has no debug
# information here, so libdw looks for a client. Without libdebuginfod on the machine only
# the first half can be checked. No symbol cache: libdw reads the modules each time.
# Usage: check_debuginfod_client.sh MEMSTAGE PROGRAM WORK_DIR
set -euo pipefail
memstage=$1 program=$2 work=$3
rm -rf "$work"
mkdir -p "$work/home"
"$memstage" run -q -o "$work/run" -- "$program" 1 1000 > /dev/null
loads_client() {
  env "$@" HOME="$work/home" MEMSTAGE_SYMBOL_CACHE=off LD_DEBUG=files "$memstage" report -f json -o "$work/report.json" "$work/run" 2>&1 |
    grep -c "file=libdebuginfod" || true
}
unasked=$(loads_client -u MEMSTAGE_DEBUGINFOD -u DEBUGINFOD_URLS)
if [ "$unasked" != 0 ]; then
  echo "FAIL: the debuginfod client was loaded with no server asked for"
  exit 1
fi
if /sbin/ldconfig -p | grep -q 'libdebuginfod\.so\.1 '; then
  asked=$(loads_client MEMSTAGE_DEBUGINFOD=1 DEBUGINFOD_URLS=http://127.0.0.1:9)
  if [ "$asked" = 0 ]; then
    echo "FAIL: the debuginfod client was not loaded though a server was asked for"
    exit 1
  fi
fi
echo "debuginfod client: ok"
