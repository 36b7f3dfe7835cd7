"""Runs stages_demo.py under memstage and checks the Python stages in the report."""
import json
import os
import subprocess
import sys
import tempfile

memstage, here = sys.argv[1], os.path.dirname(os.path.abspath(__file__))
env = dict(os.environ, PYTHONPATH=os.path.join(here, "..", "..", "profiler", "python"))
plain = subprocess.run(["/usr/bin/python3", os.path.join(here, "stages_demo.py")], env=env,
                       capture_output=True, text=True, check=True)
assert plain.stdout == "tracer loaded: False\n", plain.stdout
with tempfile.TemporaryDirectory() as out:
    traced = subprocess.run([memstage, "run", "-q", "-o", out, "--", "/usr/bin/python3",
                             os.path.join(here, "stages_demo.py")], env=env, capture_output=True, text=True)
    assert traced.returncode == 0, traced.stderr
    assert traced.stdout == "tracer loaded: True\n", traced.stdout
    report = json.load(open(os.path.join(out, "report.json")))
stages = {s["path"]: s for s in report["stages"]}
assert list(stages) == ["build", "decorated"], list(stages)
assert stages["build"]["retained_bytes"] >= 256 * 4096, stages["build"]
assert stages["decorated"]["retained_bytes"] < 64 * 1024, stages["decorated"]
assert stages["decorated"]["peak_heap_bytes"] >= stages["build"]["peak_heap_bytes"] + 2 * 1024 * 1024 - 64 * 1024
print("python stages: ok")
