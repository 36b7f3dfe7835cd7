#!/usr/bin/env python3
"""The preload's object-level call graph: which .cpp defines what each .cpp calls or reads.

Usage: check_call_graph.py NM OBJECT...   (the object files of libmemstage_preload and of
memstage_preload_structures). Prints, for each object, the objects that define the symbols
it uses, and exits 1 when the graph has a cycle (the preload is meant to call one way down).
Only strong definitions (T, D, B, R) of the preload's own namespace count: an inline
function or template emitted weak in several objects is nobody's in particular, and the
hooked C functions (malloc, dlopen, pthread_create...) are the C library's to a caller
inside the preload, which only stands in front of them.
"""
import os
import subprocess
import sys


OWN_NAMESPACE = "8memstage7preload"


def symbols(nm, path):
    out = subprocess.run([nm, path], check=True, capture_output=True, text=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U" and OWN_NAMESPACE in parts[1]:
            used.add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBR" and OWN_NAMESPACE in parts[2]:
            defined.add(parts[2])
    return defined, used


def name(path):
    return os.path.basename(path).removesuffix(".o").removesuffix(".cpp")


def find_cycle(graph):
    """One cycle as a list of nodes, or None (depth-first search, colours)."""
    state, stack = {}, []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def main():
    # CMake hands the objects over as one ;-separated argument.
    nm, objects = sys.argv[1], [o for arg in sys.argv[2:] for o in arg.split(";") if o]
    table = {name(o): symbols(nm, o) for o in objects}
    owner = {}
    for obj, (defined, _) in table.items():
        for sym in defined:
            owner.setdefault(sym, obj)
    graph = {obj: {owner[s] for s in used if s in owner and owner[s] != obj} for obj, (_, used) in table.items()}
    for obj in sorted(graph):
        print(f"{obj} -> {', '.join(sorted(graph[obj])) or '(none)'}")
    cycle = find_cycle(graph)
    if cycle:
        print("cycle: " + " -> ".join(cycle))
        return 1
    print("no cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
