"""The same C++ program under glibc, jemalloc, tcmalloc and mimalloc: equal figures."""
import os
import subprocess
import sys
import tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from memstage_scenarios import read_report  # noqa: E402

memstage, program = sys.argv[1], sys.argv[2]
libs = {"glibc": None,
        "jemalloc": "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
        "tcmalloc": "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4",
        "mimalloc": "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2"}
figures = {}
for name, lib in libs.items():
    env = {"PATH": "/usr/bin:/bin"}
    if lib:
        env["LD_PRELOAD"] = lib
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([memstage, "run", "-q", "-o", out, "--", program], env=env, check=True, capture_output=True)
        r = read_report(f"{out}/report.json")
    assert r["allocator"] == name, (name, r["allocator"])
    work = next(s for s in r["stages"] if s["name"] == "work")
    # What the allocator library allocates for itself in its constructor (tcmalloc's
    # TCMallocGuard: 16 bytes, kept) is live through the stage: part of its peak, not of
    # the program's figures.
    own = sum(g["bytes"] for g in r["leaks"] if g["stage"] is None and lib and
              any(os.path.realpath(f.get("module") or "/") == os.path.realpath(lib) for f in g["stack"]))
    figures[name] = (work["peak_heap_bytes"] - own, work["allocations"], work["leaked_bytes"], work["leaked_blocks"])
    print(name, figures[name])
# The program's own allocations are identical under every allocator; only what the
# allocator library itself allocates through malloc at start-up may differ, and it does
# so outside the stage.
assert len(set(figures.values())) == 1, figures
peak, allocations, leaked, blocks = figures["glibc"]
assert peak >= 8 * 2**20 and allocations >= 1000 + 100 + 100 + 100 + 1 + 1
assert leaked == 100 * 1000 + 8192 and blocks == 101, (leaked, blocks)
print("allocators agree: ok")
