"""hooked_functions.h's list against the functions libmemstage_preload.so exports.

Every listed function must be defined by the library, once; every function it defines must
be listed, but for those the list's header names as left out (the CUDA functions and dlsym,
the signal functions, the attach and Python entry points (the flush the notebook magic calls), the stage API's aliases).
Usage: check_hooked_functions.py HOOKED_NAMES_PROGRAM LIBRARY NM
"""
import re
import subprocess
import sys

NOT_LISTED = {
    "dlsym", "sigaction", "signal", "bsd_signal", "ssignal", "sysv_signal", "__sysv_signal",
    "memstage_attach_start", "memstage_attach_stop", "memstage_python_attach", "memstage_tracer_flush",
    "memstage_stage_begin", "memstage_stage_end",
}
CUDA = re.compile(r"^cu[A-Z]|^cuda[A-Z]")


def main():
    program, library, nm = sys.argv[1:4]
    listed = {}
    for line in subprocess.run([program], check=True, capture_output=True, text=True).stdout.splitlines():
        name, how, attach = line.split()
        if name in listed:
            sys.exit(f"{name} is listed twice")
        listed[name] = (how, attach)
    exported = set()
    for line in subprocess.run([nm, "-D", "--defined-only", library], check=True, capture_output=True,
                               text=True).stdout.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[1] in ("T", "W", "i"):
            exported.add(fields[2])
    problems = [f"{name}: listed, not defined by the library" for name in sorted(set(listed) - exported)]
    problems += [f"{name}: defined by the library, not listed" for name in sorted(exported - set(listed))
                 if name not in NOT_LISTED and not CUDA.match(name)]
    problems += [f"{name}: listed, yet named as left out" for name in sorted(set(listed) & NOT_LISTED)]
    # libunwind reads, writes and closes its pipe through its own slots: all four or none.
    pipe = {name: listed[name][1] for name in ("pipe2", "read", "write", "close") if name in listed}
    if len(set(pipe.values())) > 1:
        problems.append(f"libunwind's pipe calls hooked unlike one another when attached: {pipe}")
    if problems:
        sys.exit("\n".join(problems))
    attached = sum(1 for how, attach in listed.values() if attach != "preload-only")
    print(f"{len(listed)} functions listed, all defined; {attached} hooked when attached")


if __name__ == "__main__":
    main()
