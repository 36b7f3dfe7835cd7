"""Leaks 256 KiB every 50 ms in leak_more() until the file named by its argument exists
(at most 60 s): a program the live view must name while it leaks."""
import os
import sys
import time

HELD = []


def leak_more():
    HELD.append(bytearray(256 * 1024))


def main():
    stop = sys.argv[1]
    end = time.monotonic() + 60
    while not os.path.exists(stop) and time.monotonic() < end:
        leak_more()
        time.sleep(0.05)
    print("leaker held %d blocks" % len(HELD))


if __name__ == "__main__":
    main()
