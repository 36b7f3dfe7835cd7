"""e2e.vfork: Python's subprocess.run (vfork, close_fds=True, execve) between two large
allocations. The parent holds 16 MiB, runs `true`, then holds 64 MiB more: the peak is
at least their sum. Writes out.txt and prints what it did.
Usage: vfork_subprocess.py TRUTH_FILE"""
import json
import subprocess
import sys

MIB = 1 << 20
first = bytearray(16 * MIB)
done = subprocess.run(["true"])
second = bytearray(64 * MIB)
with open("out.txt", "w") as f:
    f.write("true exited %d\n" % done.returncode)
    f.write("held %d bytes\n" % (len(first) + len(second)))
print("true exited", done.returncode)
with open(sys.argv[1], "w") as f:
    json.dump({"peak_bytes": len(first) + len(second), "returncode": done.returncode}, f)
sys.exit(done.returncode)
