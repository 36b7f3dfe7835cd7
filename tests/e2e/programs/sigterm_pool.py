"""e2e.sigterm_pool: a multiprocessing Pool (fork) of two workers; each holds a bytearray of
21 MiB + its index from hold() and then keeps allocating small objects, never idle, until
Pool.terminate() ends it with SIGTERM. Each worker writes its truth (pid, bytes held) to
TRUTH_DIR/<pid>.json once it holds them; the parent terminates the pool when both have."""
import json
import multiprocessing
import os
import sys
import time

HELD = 21 * 1024 * 1024
kept = []


def hold(index, truth_dir):
    kept.append(bytearray(HELD + index))
    with open(os.path.join(truth_dir, "%d.json" % os.getpid()), "w") as f:
        json.dump({"pid": os.getpid(), "held": HELD + index}, f)
    churn = []
    while True:  # busy: the SIGTERM comes in the middle of allocating
        churn.append(bytes(64))
        if len(churn) > 1000:
            churn.clear()


def main():
    truth_dir = sys.argv[1]
    pool = multiprocessing.get_context("fork").Pool(2)
    for i in range(2):
        pool.apply_async(hold, (i, truth_dir))
    deadline = time.monotonic() + 60
    while len(os.listdir(truth_dir)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    pool.terminate()
    pool.join()


if __name__ == "__main__":
    main()
