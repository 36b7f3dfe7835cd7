#!/usr/bin/env bash
# What stats and sample modes cost per malloc/free, held against the floor of any malloc
# interposer on this machine. Build first (scripts/build.sh: the shims are build/bench's
# libmemstage_floor_forward.so and libmemstage_floor_counting.so).
#  1. Whole process: the churn program (2 threads x ITERATIONS malloc/free), ROUNDS rounds
#     with every variant interleaved inside each round, so that a noisy machine slows all
#     alike; prints each variant's median wall time and its ratio to the untraced median,
#     and the same of its CPU time (user + system, its children's included: steadier than
#     wall time where other work shares the cores):
#       untraced    the program alone
#       forward     under a preload whose malloc and free only forward to glibc's
#                   (floor_forward_shim.c): the price of interposing at all
#       counting    the same plus per-thread counters (floor_counting_shim.c): the least a
#                   counting tracer can do
#       stats       under libmemstage_preload.so in stats mode, no report (what the program
#                   itself pays)
#       sample      the same in sample mode at the default rate
#       run-stats   memstage run --mode stats: the preload, then the report
#       run-sample  memstage run --mode sample
#  2. Per call (Google Benchmark, when built): ns per malloc/free pair of 32 bytes, one
#     thread and two, under the same preloads, the median of ROUNDS interleaved runs.
# Usage: [MEMSTAGE_BUILD=build] [VARIANTS="untraced stats"] harness/bench/interpose_floor.sh [ITERATIONS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/../.."
iterations=${1:-7500000}
rounds=${2:-7}
build=${MEMSTAGE_BUILD:-build}
variants=${VARIANTS:-untraced forward counting stats sample run-stats run-sample}
for f in "$build/bin/memstage" "$build/bench/memstage_churn" "$build/lib/memstage/libmemstage_preload.so" \
         "$build/bench/libmemstage_floor_forward.so" "$build/bench/libmemstage_floor_counting.so"; do
  [ -e "$f" ] || { echo "interpose_floor.sh: $f missing: build first (scripts/build.sh)" >&2; exit 1; }
done
echo "load before: $(uptime | sed 's/.*load average/load average/')"
python3 - "$build" "$iterations" "$rounds" "$variants" <<'PY'
import csv, io, os, shutil, statistics, subprocess, sys, tempfile, time

build, iterations, rounds, variants = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4].split()
memstage = f"{build}/bin/memstage"
churn = [f"{build}/bench/memstage_churn", "2", iterations]
bench = f"{build}/bench/memstage_bench_traced_malloc"
preloads = {
    "forward": f"{build}/bench/libmemstage_floor_forward.so",
    "counting": f"{build}/bench/libmemstage_floor_counting.so",
    "stats": f"{build}/lib/memstage/libmemstage_preload.so",
    "sample": f"{build}/lib/memstage/libmemstage_preload.so",
}
work = tempfile.mkdtemp(prefix="interpose_floor.")

def command(variant, program, out):
    """The command line and environment that run `program` as `variant`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSTAGE_") and k != "LD_PRELOAD"}
    if variant == "untraced":
        return program, env
    if variant.startswith("run-"):
        return [memstage, "run", "-q", "--mode", variant[4:], "-o", out, "--"] + program, env
    env["LD_PRELOAD"] = os.path.abspath(preloads[variant])
    if variant in ("stats", "sample"):
        env["MEMSTAGE_OUTPUT"] = out
        env["MEMSTAGE_MODE"] = variant
    return program, env

def run(variant, program):
    out = f"{work}/out"
    shutil.rmtree(out, ignore_errors=True)
    os.mkdir(out)
    argv, env = command(variant, program, out)
    start = time.perf_counter()
    child = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    stdout = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        sys.exit(f"interpose_floor.sh: {variant} exited {child.returncode}: {' '.join(argv)}")
    return seconds, usage.ru_utime + usage.ru_stime, stdout

try:
    print(f"== whole process: churn, 2 threads x {iterations} malloc/free, {rounds} rounds interleaved")
    times = {v: [] for v in variants}
    cpu_times = {v: [] for v in variants}
    checksums = set()
    for _ in range(rounds):
        for v in variants:
            seconds, cpu_seconds, stdout = run(v, churn)
            times[v].append(seconds)
            cpu_times[v].append(cpu_seconds)
            checksums.add(stdout.strip())
    if len(checksums) != 1:
        sys.exit(f"interpose_floor.sh: the variants computed different results: {sorted(checksums)}")
    base = statistics.median(times[variants[0]])
    cpu_base = statistics.median(cpu_times[variants[0]])
    print(f"  {'variant':<11} {'wall median':>11} {'min':>8} {'max':>8} {'ratio':>6}   {'cpu median':>10} {'ratio':>6}"
          f"   (ratios to {variants[0]})")
    for v, ts in times.items():
        m, c = statistics.median(ts), statistics.median(cpu_times[v])
        print(f"  {v:<11} {m * 1000:9.1f}ms {min(ts) * 1000:6.1f}ms {max(ts) * 1000:6.1f}ms {m / base:6.3f}"
              f"   {c * 1000:8.1f}ms {c / cpu_base:6.3f}")

    if os.path.exists(bench):
        per_call = [v for v in variants if not v.startswith("run-")]
        print(f"\n== per call: Google Benchmark BM_malloc_free/32, ns per pair, median of {rounds} interleaved runs")
        ns = {}
        for _ in range(rounds):
            for v in per_call:
                _, _, stdout = run(v, [bench, "--benchmark_filter=BM_malloc_free/32/", "--benchmark_format=csv"])
                lines = [l for l in stdout.splitlines() if l.startswith('"') or l.startswith("name")]
                for row in csv.DictReader(io.StringIO("\n".join(lines))):
                    ns.setdefault(row["name"], {}).setdefault(v, []).append(float(row["cpu_time"]))
        print(f"  {'benchmark':<34}" + "".join(f" {v:>9}" for v in per_call))
        for name, by_variant in ns.items():
            print(f"  {name:<34}" + "".join(f" {statistics.median(by_variant[v]):9.2f}" for v in per_call))
finally:
    shutil.rmtree(work, ignore_errors=True)
PY
echo "load after: $(uptime | sed 's/.*load average/load average/')"
