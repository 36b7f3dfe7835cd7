"""The live view in a real terminal (tmux), while a program leaks:

    /usr/bin/python3 check_live_view.py MEMSTAGE WORK_DIR

1. `memstage run --live -o DIR -- python3 leaker.py STOP`: the screen names leak_more among
   the stacks holding most now, and among those growing fastest after `v`; `q` leaves the
   view and the program runs on; once it ends the report is written, memstage exits 0 and
   the terminal is a shell's again (its summary and the next command's line are there).
2. `memstage live DIR` from another terminal, of an aggregate-mode run without --live: the
   same stack named, also after the terminal shrank; Ctrl-C leaves the terminal as found, exit 0.
In both, leak_more's line holds 256 KiB a block, as the program allocates them.
3. Without a terminal both say so in one line, exit 2.
Exit 0: passed; 77: skipped (no tmux); anything else: failed.
"""
import os
import shutil
import subprocess
import sys
import time

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
LEAKER = os.path.join(HERE, "leaker.py")
PYTHON = "/usr/bin/python3"


def fail(message, screen=""):
    print(screen)
    print("FAIL: " + message)
    sys.exit(1)


def screen_of(session):
    return subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True).stdout


def wait_for(session, text, timeout_s=30):
    screen = ""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        screen = screen_of(session)
        if text in screen:
            return screen
        time.sleep(0.2)
    fail("the screen never showed %r" % text, screen)


def keys(session, *pressed):
    subprocess.run(["tmux", "send-keys", "-t", session] + list(pressed), check=True)


def check_held_per_block(screen):
    """leak_more's line, "B in N blocks leak_more": B / N is the 256 KiB each bytearray holds
    (B has three figures: within 2 %)."""
    units = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
    for line in screen.splitlines():
        words = line.split()
        if words[-1:] == ["leak_more"] and len(words) == 6 and words[2] == "in" and words[4] == "blocks":
            per_block = float(words[0]) * units[words[1]] / int(words[3])
            if abs(per_block - 256 * 1024) > 0.02 * 256 * 1024:
                fail("leak_more holds %.0f bytes a block, not 256 KiB" % per_block, screen)
            return
    fail("no line of leak_more's bytes and blocks", screen)


def check_run_live(memstage, work):
    out, stop = os.path.join(work, "run-live"), os.path.join(work, "stop-1")
    session = "memstage-live-%d" % os.getpid()
    command = "%s run -q --live -o %s -- %s %s %s; echo RUN-DONE rc=$?; sleep 60" % (memstage, out, PYTHON, LEAKER, stop)
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "160", "-y", "50", command], check=True)
    try:
        screen = wait_for(session, "leak_more")
        if "stacks holding most now" not in screen or "memstage live" not in screen:
            fail("the live view does not list the stacks holding most", screen)
        check_held_per_block(screen)
        keys(session, "v")
        wait_for(session, "stacks growing fastest")
        wait_for(session, "leak_more")
        keys(session, "q")
        time.sleep(1.5)
        if "memstage live" in screen_of(session):
            fail("q did not leave the view", screen_of(session))
        open(stop, "w").close()
        screen = wait_for(session, "RUN-DONE")
        if "RUN-DONE rc=0" not in screen or "leaker held" not in screen:
            fail("after q the program did not run on to its end, or memstage failed", screen)
        if not os.path.isfile(os.path.join(out, "report.json")):
            fail("no report after the live view")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session])


def check_live_command(memstage, work):
    out, stop = os.path.join(work, "run-plain"), os.path.join(work, "stop-2")
    run = subprocess.Popen([memstage, "run", "-q", "--mode", "aggregate", "-o", out, "--", PYTHON, LEAKER, stop],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    session = "memstage-live2-%d" % os.getpid()
    try:
        while not os.path.isdir(out):
            time.sleep(0.1)
        subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "160", "-y", "50",
                        "%s live %s; echo LIVE-DONE rc=$?; sleep 60" % (memstage, out)], check=True)
        check_held_per_block(wait_for(session, "leak_more"))
        # A smaller terminal: the view goes on drawing (ncurses follows the size).
        subprocess.run(["tmux", "resize-window", "-t", session, "-x", "90", "-y", "30"], check=True)
        time.sleep(1.5)
        wait_for(session, "leak_more")
        keys(session, "C-c")
        screen = wait_for(session, "LIVE-DONE")
        if "LIVE-DONE rc=0" not in screen or "memstage live" in screen:
            fail("memstage live did not leave the terminal as found on Ctrl-C", screen)
    finally:
        open(stop, "w").close()
        run.wait(timeout=60)
        subprocess.run(["tmux", "kill-session", "-t", session])


def check_without_terminal(memstage, work):
    """Without a terminal, one line and exit 2, and the command is not run."""
    for command in ([memstage, "run", "--live", "-o", os.path.join(work, "no-tty"), "--", "true"],
                    [memstage, "live", work]):
        done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True)
        if done.returncode != 2 or "needs a terminal" not in done.stderr:
            fail("%s without a terminal: exit %d, %r" % (" ".join(command[1:3]), done.returncode, done.stderr))


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    if not shutil.which("tmux"):
        print("SKIP: tmux is not installed")
        return SKIP
    memstage, work = (os.path.abspath(a) for a in sys.argv[1:])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    check_without_terminal(memstage, work)
    check_run_live(memstage, work)
    check_live_command(memstage, work)
    print("live view: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
