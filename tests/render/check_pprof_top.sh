#!/bin/sh
# check_pprof_top.sh GO PROFILE FUNCTION: `go tool pprof -top -sample_index=leaked_space`
# reads PROFILE and lists FUNCTION first. go runs offline with a throwaway HOME and caches.
set -eu
go=$1 profile=$2 expected=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export HOME="$tmp" GOPATH="$tmp/gopath" GOCACHE="$tmp/gocache" GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local
export PPROF_TMPDIR="$tmp/pprof" PPROF_BINARY_PATH="$tmp/none"
"$go" tool pprof -top -sample_index=leaked_space "$profile" > "$tmp/top.txt" 2> "$tmp/err.txt" || {
  cat "$tmp/err.txt" "$tmp/top.txt"
  echo "check_pprof_top: go tool pprof failed"
  exit 1
}
cat "$tmp/top.txt"
# The rows follow the header line "flat  flat%   sum%        cum   cum%"; the name is last.
first=$(awk 'seen && NF { for (i = 6; i <= NF; i++) printf "%s%s", $i, (i < NF ? " " : "\n"); exit } /flat%/ { seen = 1 }' "$tmp/top.txt")
if [ "$first" != "$expected" ]; then
  echo "check_pprof_top: first function is '$first', expected '$expected'"
  exit 1
fi
echo "check_pprof_top: $expected is first"
