#!/usr/bin/env python3
"""Benchmarks of the reference trainer (not a test): accuracy, wall time, lines per second
and peak RSS of each pipeline, beside Debian's `fasttext supervised`.

Parts (all by default; pick with --parts):
  debian   the Debian descriptions set from ../shared/data: fastText (single thread), the
           optimized pipeline (vocabulary and hashing trick), the naive one on the first
           --naive-rows rows (all 57k rows would need a 34 GB dense matrix); same split,
           same epochs.
  scaling  the optimized pipeline's peak RSS on 25,000 and 250,000 synthetic lines.
  naive    the naive pipeline's peak RSS on growing synthetic corpora: rows x vocabulary.

    python3 reference_trainer/bench/bench.py --bin build/reference_trainer

Peak RSS is the child's ru_maxrss (wait4). Wall times and RSS are medians of --repeats runs.
"""
import argparse
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_DATA = os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared", "data"))


def measure(cmd):
    """Runs cmd; returns (stdout text, wall seconds, peak RSS bytes). Exits on failure."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall_s = time.monotonic() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text = out.read().decode()
        if proc.returncode != 0:
            sys.exit(f"bench: {' '.join(cmd)} failed ({proc.returncode}):\n{err.read().decode()}")
        return text + err.read().decode(), wall_s, usage.ru_maxrss * 1024


def repeated(cmd, repeats):
    runs = [measure(cmd) for _ in range(repeats)]
    return runs[0][0], statistics.median(r[1] for r in runs), statistics.median(r[2] for r in runs)


def field(text, key):
    for line in text.splitlines():
        if line.startswith(key + ":"):
            return line.split(":", 1)[1].strip()
    sys.exit(f"bench: no '{key}' in output:\n{text}")


def mib(n):
    return f"{n / 2**20:,.0f} MiB"


def trainer_row(name, text, wall_s, rss, epochs):
    rows = int(field(text, "train_rows"))
    return (name, rows, float(field(text, "accuracy")), float(field(text, "macro_f1")), wall_s,
            rows * epochs / wall_s, rss)


def print_table(rows):
    print("| run | train rows | accuracy | macro-F1 | wall s | lines/s | peak RSS |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, n, acc, f1, wall, lps, rss in rows:
        f1_text = "–" if f1 is None else f"{f1:.3f}"
        print(f"| {name} | {n:,} | {acc:.3f} | {f1_text} | {wall:.2f} | {lps:,.0f} | {mib(rss)} |")
    print()


def part_debian(args, work):
    data = args.data
    train_ft_gz = os.path.join(data, "debian_descriptions.train.ft.gz")
    test_ft = os.path.join(data, "debian_descriptions.test.ft")
    epochs = args.epochs
    rows = []
    print(f"## Debian descriptions ({epochs} epochs, 1 thread, median of {args.repeats})\n")
    if shutil.which("fasttext") and not args.skip_fasttext:
        train_ft = os.path.join(work, "debian.train.ft")
        with open(train_ft, "wb") as out:
            subprocess.run(["zcat", train_ft_gz], stdout=out, check=True)
        model = os.path.join(work, "ft")
        _, wall_s, rss = repeated(["fasttext", "supervised", "-input", train_ft, "-output", model,
                                   "-thread", "1", "-epoch", str(epochs)], args.repeats)
        test_text, _, _ = measure(["fasttext", "test", model + ".bin", test_ft])
        accuracy = float(field(test_text.replace("\t", ":"), "P@1"))
        train_rows = sum(1 for _ in open(train_ft, encoding="utf-8"))
        rows.append(("fastText 0.9.2 supervised", train_rows, accuracy, None, wall_s,
                     train_rows * epochs / wall_s, rss))
    trainer = os.path.join(args.bin, "memstage-trainer")
    base = [trainer, "--data", train_ft_gz, "--test", test_ft, "--epochs", str(epochs), "--quiet"]
    for name, extra in (("optimized, vocabulary", []),
                        ("optimized, hashing 2^20", ["--hash-bits", "20"]),
                        ("optimized, vocabulary, int8 eval", ["--quantize"]),
                        ("optimized, vocabulary, --threads 2 (reader thread)", ["--threads", "2"])):
        text, wall_s, rss = repeated(base + ["--pipeline", "optimized"] + extra, args.repeats)
        rows.append(trainer_row(name, text, wall_s, rss, epochs))
    text, wall_s, rss = repeated(base + ["--pipeline", "naive", "--max-rows", str(args.naive_rows)],
                                 args.repeats)
    rows.append(trainer_row(f"naive, first {args.naive_rows:,} rows only", text, wall_s, rss, epochs))
    features = int(field(text, "features"))
    print_table(rows)
    print(f"The naive run fitted {features:,} terms on {args.naive_rows:,} rows. "
          "Wall time covers the whole process (load, training, evaluation) for every row; "
          "lines/s = train rows x epochs / wall s.\n")


def generate(args, work, lines, seed=1):
    path = os.path.join(work, f"synthetic.{lines}.csv")
    if not os.path.exists(path):
        subprocess.run([os.path.join(args.bin, "memstage-corpus-gen"), "--lines", str(lines),
                        "--seed", str(seed), "-o", path], check=True)
    return path


def part_scaling(args, work):
    print(f"## Optimized pipeline: peak RSS at 25,000 and 250,000 synthetic lines "
          f"({args.scaling_epochs} epoch(s), median of {args.repeats})\n")
    print("| configuration | peak RSS, 25k lines | peak RSS, 250k lines | ratio | accuracy 25k / 250k | lines/s 250k |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    trainer = os.path.join(args.bin, "memstage-trainer")
    for name, extra in (("hashing 2^18", ["--hash-bits", "18"]),
                        ("vocabulary, --max-features 20000", ["--max-features", "20000"])):
        results = []
        for lines in (25000, 250000):
            cmd = [trainer, "--data", generate(args, work, lines), "--epochs", str(args.scaling_epochs),
                   "--quiet"] + extra
            text, wall_s, rss = repeated(cmd, args.repeats)
            results.append((rss, float(field(text, "accuracy")),
                            int(field(text, "train_rows")) * args.scaling_epochs / wall_s))
        ratio = results[1][0] / results[0][0]
        print(f"| {name} | {mib(results[0][0])} | {mib(results[1][0])} | {ratio:.3f} | "
              f"{results[0][1]:.3f} / {results[1][1]:.3f} | {results[1][2]:,.0f} |")
    print()


def part_naive(args, work):
    print("## Naive pipeline: peak RSS against rows x vocabulary (synthetic, 1 epoch)\n")
    print("| rows | vocabulary | rows x vocabulary | peak RSS | bytes per cell | optimized peak RSS |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    trainer = os.path.join(args.bin, "memstage-trainer")
    points = []
    for lines in args.naive_sizes:
        path = generate(args, work, lines)
        text, _, rss = measure([trainer, "--pipeline", "naive", "--data", path, "--epochs", "1", "--quiet"])
        _, _, opt_rss = measure([trainer, "--data", path, "--epochs", "1", "--quiet"])
        vocab = int(field(text, "features"))
        cells = lines * vocab
        points.append((lines, rss))
        print(f"| {lines:,} | {vocab:,} | {cells:,} | {mib(rss)} | {rss / cells:.1f} | {mib(opt_rss)} |")
    if len(points) >= 2:
        (n0, r0), (n1, r1) = points[0], points[-1]
        slope = math.log(r1 / r0) / math.log(n1 / n0)
        print(f"\nPeak RSS grows as rows^{slope:.2f} between {n0:,} and {n1:,} rows (linear would be 1.00).")
    print()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", required=True, help="folder with memstage-trainer and memstage-corpus-gen")
    parser.add_argument("--data", default=DEFAULT_DATA, help="the shared data folder")
    parser.add_argument("--parts", default="debian,scaling,naive")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--scaling-epochs", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--naive-rows", type=int, default=2000)
    parser.add_argument("--naive-sizes", type=lambda s: [int(x) for x in s.split(",")],
                        default=[500, 1000, 2000, 4000])
    parser.add_argument("--skip-fasttext", action="store_true")
    parser.add_argument("--work", help="keep generated files here (default: a temporary folder)")
    args = parser.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="trainer-bench-")
    os.makedirs(work, exist_ok=True)
    try:
        for part in args.parts.split(","):
            {"debian": part_debian, "scaling": part_scaling, "naive": part_naive}[part](args, work)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
