"""Runs examples/python_pipeline/train_naive.py under `memstage run` on real data and
checks the report against what the script says it made:

- the worst stage (highest peak heap) is vectorize;
- the stack holding the most memory at vectorize's peak has the script's `.toarray()`
  line as a Python frame;
- the peak heap is the dense float64 matrix plus its float32 copy (both alive while
  astype runs), rows x vocabulary x (8 + 4) bytes, within 5 %.

Usage: check_naive_pipeline.py MEMSTAGE EXAMPLE_DIR DATA_CSV WORK_DIR"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from memstage_scenarios import Checks, fresh_folder, read_report  # noqa: E402

memstage, example, data, work = sys.argv[1:5]
ROWS = 5000
script = os.path.join(example, "train_naive.py")
if not os.path.exists(data):
    print("no data set at %s" % data)
    sys.exit(1)
work = fresh_folder(work)
shape_file = os.path.join(work, "shape.json")
out = os.path.join(work, "run")
done = subprocess.run([memstage, "run", "-q", "-o", out, "--", "/usr/bin/python3", script, "--data", data,
                       "--rows", str(ROWS), "--epochs", "1", "--shape-out", shape_file],
                      capture_output=True, text=True)
assert done.returncode == 0, "exit %d\n%s\n%s" % (done.returncode, done.stdout[-2000:], done.stderr[-4000:])
shape = json.load(open(shape_file))
report = read_report(os.path.join(out, "report.json"))
CHECKS = Checks(show_passes=True)
check = CHECKS.check


check(report["python"] is not None and report["python"]["allocator"] == "pymalloc",
      "the report names the Python run: %s" % report["python"])
check(shape["rows"] == ROWS, "the script read %d rows" % shape["rows"])
top_level = [s for s in report["stages"] if "/" not in s["path"]]
check([s["name"] for s in top_level] == ["load", "vectorize", "split", "train"],
      "stages in order: %s" % [s["name"] for s in top_level])
worst = max(top_level, key=lambda s: s["peak_heap_bytes"])
check(worst["name"] == "vectorize", "worst stage is %s (%d bytes)" % (worst["name"], worst["peak_heap_bytes"]))

vectorize = next(s for s in top_level if s["name"] == "vectorize")
top = max(vectorize["top_stacks_at_peak"], key=lambda s: s["bytes"])
python = [f for f in top["stack"] if f.get("kind") == "python"]
toarray = [f for f in python if os.path.realpath(f["file"]) == os.path.realpath(script)
           and f["line"] == shape["toarray_line"]]
check(bool(toarray), "vectorize's top stack (%d bytes) has %s:%d as a Python frame; its Python frames: %s"
      % (top["bytes"], os.path.basename(script), shape["toarray_line"],
         ["%s:%d" % (f["function"], f["line"]) for f in python]))
check(top["bytes"] == shape["dense_float64_bytes"],
      "that stack holds the float64 matrix: %d == rows x vocabulary x 8 = %d" % (top["bytes"], shape["dense_float64_bytes"]))

expected = shape["dense_float64_bytes"] + shape["dense_float32_bytes"]
peak = report["totals"]["peak_heap_bytes"]
check(abs(peak - expected) <= 0.05 * expected,
      "peak heap %d within 5%% of float64 + float32 matrices %d (%d x %d x 12 bytes): %+.2f%%"
      % (peak, expected, shape["rows"], shape["vocabulary"], 100.0 * (peak - expected) / expected))
sys.exit(CHECKS.summary())
