#!/usr/bin/env bash
# Replayed peak RSS against measured, per allocator (docs/compare.md, "replay against compare"):
# each program run under `memstage compare --allocators glibc,jemalloc,tcmalloc,mimalloc`, and
# its full-mode run replayed under the same allocators by `memstage replay` (with the program's
# memory outside its heap held, and --heap-only); prints one table row per program and
# allocator (stats runs' median peak RSS of each) and whether the allocators come in the same
# order.
#   harness/bench/replay_vs_compare.sh [BUILD_DIR (build)] [WORK_DIR (/tmp/replay_vs_compare)] [REPEAT (3)]
#                                      [PROGRAMS ("trainer window sqlite handoff")]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:-$here/../../build}" && pwd)"
work="${2:-/tmp/replay_vs_compare}"
repeat="${3:-3}"
programs="${4:-trainer window sqlite handoff}"
memstage="$build/bin/memstage"
allocators=glibc,jemalloc,tcmalloc,mimalloc
mkdir -p "$work"

# The trainer's naive pipeline on a small corpus; the fragmenting sliding window of variable
# sizes (tests/compare/programs/fragment.cpp); sqlite3's inserts (overhead.sh's workload);
# threads handing blocks to one another through a bounded queue, freed by another thread than
# their allocator's (tests/compare/programs/handoff.cpp: 4 producers, 2 consumers).
corpus="$work/corpus.csv"
[[ -f "$corpus" ]] || "$build/reference_trainer/memstage-corpus-gen" --lines 4000 -o "$corpus" >/dev/null
for name in $programs; do
  case "$name" in
    trainer) cmd=("$build/reference_trainer/memstage-trainer" --pipeline naive --data "$corpus" --epochs 1 --max-rows 2000) ;;
    window) cmd=("$build/tests/compare/programs/fragment" 40000) ;;
    sqlite) cmd=(sqlite3 :memory: ".read $here/sqlite_inserts.sql") ;;
    handoff) cmd=("$build/tests/compare/programs/handoff" 30000 4 2) ;;
    *) echo "replay_vs_compare.sh: no program $name" >&2; exit 2 ;;
  esac
  dir="$work/$name"
  rm -rf "$dir"
  echo "== $name: ${cmd[*]}" >&2
  "$memstage" compare --allocators "$allocators" --repeat "$repeat" -o "$dir/compare" -- "${cmd[@]}" >/dev/null 2>&1
  "$memstage" run -q --mode full -o "$dir/run" -- "${cmd[@]}" >/dev/null
  "$memstage" replay "$dir/run" --allocators "$allocators" --repeat "$repeat" -o "$dir/replay" >/dev/null 2>&1
  "$memstage" replay "$dir/run" --heap-only --allocators "$allocators" --repeat "$repeat" -o "$dir/replay-heap" >/dev/null 2>&1
done

/usr/bin/python3 - "$work" $programs <<'PY'
import json, os, sys
work, programs = sys.argv[1], sys.argv[2:]
MiB = 1 << 20
def medians(path):
    c = json.load(open(path))
    return {s["name"]: s["totals"]["stats_peak_rss_bytes"]["median"] for s in c["subjects"]}
print("| program | allocator | measured peak RSS (compare) | replayed peak RSS | replayed / measured | replayed, --heap-only | heap-only / measured |")
print("| --- | --- | --- | --- | --- | --- | --- |")
orders = {}
for name in programs:
    measured = medians(os.path.join(work, name, "compare", "compare.json"))
    replayed = medians(os.path.join(work, name, "replay", "compare.json"))
    heap = medians(os.path.join(work, name, "replay-heap", "compare.json"))
    for a in measured:
        print("| %s | %s | %.1f MiB | %.1f MiB | %.3f | %.1f MiB | %.3f |" % (name, a, measured[a] / MiB, replayed[a] / MiB,
              replayed[a] / measured[a], heap[a] / MiB, heap[a] / measured[a]))
    orders[name] = (sorted(measured, key=measured.get), sorted(replayed, key=replayed.get))
    notes = json.load(open(os.path.join(work, name, "replay", "compare.json")))["notes"]
    print("%s: %s" % (name, notes[0][:160]))
for name, (m, r) in orders.items():
    print("%s: measured order %s; replayed %s; %s" % (name, " < ".join(m), " < ".join(r), "same" if m == r else "different"))
PY
