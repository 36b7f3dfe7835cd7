"""e2e.python_code: generated code, compiled and run, then dropped (templating, exec,
dataclasses, notebooks do this). Each of 16 modules holds a 512 KiB str constant and a
function `make` that allocates bytearray(200000 + i) (200001 + i bytes), kept; the
module, its code objects and its constant are dropped after. Nothing must keep them
alive: the script counts the code objects still alive (weak references) and prints it.
It ends with os._exit, so the kept blocks are live at the end, each with the generated
module's frame in its stack. Truth: block sizes, the module names and lines, the
constant's size.
Usage: generated_code.py TRUTH_FILE"""
import json
import os
import sys
import weakref

MODULES = 16
CONSTANT_CHARS = 1 << 19
kept = []
code_refs = []
for i in range(MODULES):
    source = "BIG = %r\ndef make():\n    return bytearray(%d)\nBLOCK = make()\n" % ("x" * CONSTANT_CHARS, 200000 + i)
    code = compile(source, "<generated-%d>" % i, "exec")
    code_refs.append(weakref.ref(code))
    namespace = {}
    exec(code, namespace)
    kept.append(namespace["BLOCK"])
    del code, namespace, source
alive = sum(ref() is not None for ref in code_refs)
print("code objects alive:", alive)
print("kept:", sum(len(b) for b in kept))
with open(sys.argv[1], "w") as f:
    json.dump({"modules": MODULES, "block_bytes": [200001 + i for i in range(MODULES)],
               "files": ["<generated-%d>" % i for i in range(MODULES)], "make_line": 3,
               "constant_bytes": CONSTANT_CHARS, "alive": alive}, f)
sys.stdout.flush()
os._exit(0)
