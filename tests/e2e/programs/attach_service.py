"""A small Python service for e2e.attach_python: rounds of 20 ms that allocate and free
(churn), and a function that keeps a 64 KiB block per round (leak_block). Run by
/usr/bin/python3 without memstage; memstage attaches to it while it runs.

Usage: attach_service.py TRUTH READY ROUNDS [segv]. Writes TRUTH (the leaking function's
line) and READY once its loop runs; prints one line per 100 rounds and exits 7, or with
`segv` dies of SIGSEGV after its rounds (a service that crashes while attached).
"""
import json
import os
import signal
import sys
import time

LEAK_BYTES = 64 * 1024
kept = []


def leak_block():
    kept.append(bytearray(LEAK_BYTES))  # never freed: the report's leak


def churn():
    # Blocks past pymalloc's 512 bytes come from malloc; all freed before the round ends.
    return sum(len(bytes(2048 + i)) for i in range(20))


def main():
    truth, ready, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with open(truth, "w") as f:
        json.dump({"leak_function": "leak_block", "leak_line": leak_block.__code__.co_firstlineno + 1,
                   "leak_bytes": LEAK_BYTES}, f)
    total = 0
    for r in range(rounds):
        if r == 1:
            open(ready, "w").close()
        leak_block()
        total += churn()
        if (r + 1) % 100 == 0:
            print("round %d: %d blocks kept, %d bytes churned" % (r + 1, len(kept), total), flush=True)
        time.sleep(0.02)
    print("done, %d blocks kept" % len(kept), flush=True)
    if sys.argv[4:] == ["segv"]:
        os.kill(os.getpid(), signal.SIGSEGV)
    sys.exit(7)


if __name__ == "__main__":
    main()
