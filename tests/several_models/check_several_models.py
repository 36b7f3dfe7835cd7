"""Runs examples/several_models/several_models.py under `memstage run` and checks the
report against what torch says the script made:

- MODEL/fp32 retains the model's tensors (torch's numel x element size), within 2 %;
- MODEL/int8 (quantize_dynamic) retains at most 0.35 x what MODEL/fp32 retains;
- MODEL/infer_no_grad's peak heap is below MODEL/infer_grad's;
- the stacks holding memory at MODEL/fp32's peak name the script's lines that allocate
  the weights (`# weights: MODEL`) as Python frames, and those stacks hold the weights;
- pruning: prune/mask retains more than it started with (weight_orig + mask), prune/remove
  nothing, prune/sparse_csr less than the dense weights;
- cleanup: `del` alone leaves the model caught in a reference cycle, gc.collect() frees it.

Usage: check_several_models.py MEMSTAGE SCRIPT WORK_DIR"""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from memstage_scenarios import Checks, fresh_folder, read_report  # noqa: E402

memstage, script, work = sys.argv[1:4]
work = fresh_folder(work)
figures_file = os.path.join(work, "figures.json")
out = os.path.join(work, "run")
done = subprocess.run([memstage, "run", "-q", "-o", out, "--", "/usr/bin/python3", script,
                       "--figures-out", figures_file], capture_output=True, text=True)
assert done.returncode == 0, "exit %d\n%s\n%s" % (done.returncode, done.stdout[-2000:], done.stderr[-4000:])
made = json.load(open(figures_file))
report = read_report(os.path.join(out, "report.json"))
stages = {s["path"]: s for s in report["stages"]}
weight_lines = {}
for number, text in enumerate(open(script), start=1):
    m = re.search(r"# weights: (\w+)", text)
    if m:
        weight_lines.setdefault(m.group(1), set()).add(number)
CHECKS = Checks(show_passes=True)
check = CHECKS.check
INT8_QUARTER = ("textbag",)  # every weight quantized, none kept twice


def weight_frames(stack, model):
    return [f for f in stack if f.get("kind") == "python" and f["line"] in weight_lines[model]
            and os.path.realpath(f["file"]) == os.path.realpath(script)]


def live_at_end(stage):
    return stage["rss_breakdown"]["live_bytes"]


for model in ("mlp", "transformer", "textbag"):
    fp32, int8 = stages[model + "/fp32"], stages[model + "/int8"]
    truth = made[model]["fp32_tensor_bytes"]
    check(abs(fp32["retained_bytes"] - truth) <= 0.02 * truth,
          "%s/fp32 retains %d bytes, its tensors are %d (%+.2f%%)"
          % (model, fp32["retained_bytes"], truth, 100.0 * (fp32["retained_bytes"] - truth) / truth))
    expected = made[model]["int8_expected_bytes"]
    ratio = int8["retained_bytes"] / fp32["retained_bytes"]
    check(abs(int8["retained_bytes"] - expected) <= 0.05 * expected,
          "%s/int8 retains %d bytes = %.3f x fp32; expected %d (%+.2f%%): int8 Linear weights twice, "
          "8-bit embedding rows, the rest fp32" % (model, int8["retained_bytes"], ratio, expected,
                                                   100.0 * (int8["retained_bytes"] - expected) / expected))
    if model in INT8_QUARTER:
        check(ratio <= 0.35, "%s/int8 retains at most 0.35 x fp32: %.3f" % (model, ratio))
    garbage = truth - made[model]["fp32_left_in_int8_bytes"]
    freed = live_at_end(stages[model + "/int8/quantize"]) - live_at_end(stages[model + "/int8/gc_collect"])
    check(abs(freed - garbage) <= 0.05 * garbage,
          "%s/int8/gc_collect frees %d bytes: quantize_dynamic's copy of the fp32 weights it replaced, %d"
          % (model, freed, garbage))
    grad, no_grad = stages[model + "/infer_grad"], stages[model + "/infer_no_grad"]
    check(no_grad["peak_heap_bytes"] < grad["peak_heap_bytes"],
          "%s: infer_no_grad peak %d < infer_grad peak %d (activations kept for backward: %d)"
          % (model, no_grad["peak_heap_bytes"], grad["peak_heap_bytes"],
             grad["peak_heap_bytes"] - no_grad["peak_heap_bytes"]))
    named = [s for s in fp32["top_stacks_at_peak"] if weight_frames(s["stack"], model)]
    lines = sorted({f["line"] for s in named for f in weight_frames(s["stack"], model)})
    held = sum(s["bytes"] for s in named)
    check(bool(named) and held >= 0.95 * truth,
          "%s/fp32: stacks at its peak through the script's weights lines %s hold %d bytes of %d"
          % (model, lines, held, truth))

mask, remove, csr = stages["prune/mask"], stages["prune/remove"], stages["prune/sparse_csr"]
dense = made["prune"]["dense_weight_bytes"]
check(mask["retained_bytes"] >= 1.9 * dense,
      "prune/mask retains %d bytes >= 2 x the dense weights %d less a little (weight_orig and mask stay)"
      % (mask["retained_bytes"], dense))
check(live_at_end(remove) < live_at_end(mask) - 0.9 * dense,
      "prune/remove: live heap %d -> %d at its end" % (live_at_end(mask), live_at_end(remove)))
check(csr["retained_bytes"] < 0.5 * dense and made["prune"]["max_abs_difference"] < 1e-4,
      "prune/sparse_csr retains %d bytes for %d of dense weights (%d nonzero), same outputs"
      % (csr["retained_bytes"], dense, made["prune"]["nonzero"]))

deleted, collected = stages["cleanup/del"], stages["cleanup/gc_collect"]
cycle = made["transformer"]["fp32_tensor_bytes"]
check(live_at_end(collected) <= live_at_end(deleted) - 0.95 * cycle,
      "cleanup: del leaves %d bytes live, gc.collect() frees %d more (the transformer in a cycle, %d)"
      % (live_at_end(deleted), live_at_end(deleted) - live_at_end(collected), cycle))
sys.exit(CHECKS.summary())
