"""Runs frames_program.py under memstage and checks the Python frames in its stacks:
which lines, in which order, where the native frames fall between them, in the main
thread and in a thread; the pymalloc / PYTHONMALLOC=malloc switch; --no-python-frames."""
import os
import subprocess
import sys
import tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from memstage_scenarios import read_report  # noqa: E402

memstage = sys.argv[1]
here = os.path.dirname(os.path.abspath(__file__))
program = os.path.join(here, "frames_program.py")
lines = {}
for number, text in enumerate(open(program), 1):
    if "# frame: " in text:
        lines[text.split("# frame: ")[1].strip()] = number


def run(*flags, args=()):
    with tempfile.TemporaryDirectory() as out:
        done = subprocess.run([memstage, "run", "-q", "-o", out, *flags, "--", "/usr/bin/python3", program, *args],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("done 2 "), done.stdout
        return read_report(os.path.join(out, "report.json"))


def stack_of(report, size):
    """The stack holding the one block of `size` bytes at the peak."""
    for s in report["totals"]["top_stacks_at_peak"]:
        if s["bytes"] == size:
            return s["stack"]
    raise AssertionError(f"no stack of {size} bytes at the peak")


def python_frames(stack):
    """(function, line, native frames since the previous Python frame) per Python frame."""
    result, native = [], 0
    for f in stack:
        if f.get("kind") == "python":
            assert f["file"] == program or f["file"].endswith("/threading.py"), f
            result.append((f["function"], f["line"], native))
            native = 0
        else:
            native += 1
    return result


report = run()
assert report["python"]["allocator"] == "pymalloc", report["python"]
assert report["python"]["version"].startswith(f"{sys.version_info.major}.{sys.version_info.minor}"), report["python"]
# bytearray(n) asks for n + 1 bytes. Innermost first: leaf's line under native frames of
# bytearray; map's C code between leaf and middle; middle, outer and the module body run
# in one run of the evaluation loop (no native frames between them).
main = python_frames(stack_of(report, 10_000_001))
assert [(f, l) for f, l, _ in main] == [("leaf", lines["leaf"]), ("middle", lines["middle"]),
                                       ("outer", lines["outer"]), ("<module>", lines["module"])], main
assert main[0][2] >= 1 and main[1][2] >= 1, main
assert main[2][2] == 0 and main[3][2] == 0, main
worker = python_frames(stack_of(report, 20_000_001))
assert [(f, l) for f, l, _ in worker[:2]] == [("leaf", lines["leaf"]), ("worker", lines["worker"])], worker
assert [f for f, _, _ in worker[2:]] == ["Thread.run", "Thread._bootstrap_inner", "Thread._bootstrap"], worker
# pymalloc's arenas are anonymous mmaps: counted apart from the heap.
assert report["totals"]["mmap_peak_bytes"] >= 256 * 1024, report["totals"]

# 200,000 small strings: under pymalloc the heap never sees them one by one; with
# PYTHONMALLOC=malloc every one is an allocation at the comprehension's line.
pymalloc = run(args=("200000",))
malloc = run("--python-allocator", "malloc", args=("200000",))
assert malloc["python"]["allocator"] == "malloc", malloc["python"]
assert malloc["totals"]["allocations"] >= pymalloc["totals"]["allocations"] + 200_000, (
    malloc["totals"]["allocations"], pymalloc["totals"]["allocations"])
small = [s for s in malloc["totals"]["top_stacks_at_peak"] if any(
    f.get("kind") == "python" and f["line"] == lines["small"] for f in s["stack"])]
assert small and sum(s["blocks"] for s in small) >= 200_000, small[:1]

native_only = run("--no-python-frames")
assert native_only["python"] is None
assert not any(f.get("kind") == "python" for s in native_only["totals"]["top_stacks_at_peak"] for f in s["stack"])
print("python frames: ok")
