"""Allocations at known Python lines, for check_python_frames.py: a call through C code
(map), calls inlined by the interpreter, a thread, and many small objects."""
import sys
import threading


def leaf(n):
    return bytearray(n)  # frame: leaf


def middle(n):
    return list(map(leaf, [n]))[0]  # frame: middle


def outer(n):
    return middle(n)  # frame: outer


keep = [outer(10_000_000)]  # frame: module


def worker():
    keep.append(leaf(20_000_000))  # frame: worker


thread = threading.Thread(target=worker)
thread.start()
thread.join()
small = [str(i) * 3 for i in range(int(sys.argv[1]) if len(sys.argv) > 1 else 0)]  # frame: small
print("done", len(keep), len(small))
