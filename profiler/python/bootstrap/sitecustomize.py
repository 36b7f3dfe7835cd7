"""memstage's Python bootstrap.

`memstage run` puts this folder first on PYTHONPATH, so every Python process it starts
imports this module at startup (the `site` module imports `sitecustomize`). It asks the
preloaded tracer to record the Python frames of each allocation, in this thread and in
every thread started later, then runs the sitecustomize this one shadows, if any.
Without the tracer in the process it does nothing.

What it does before attaching (its imports) is the tracer's work: the tracer records
nothing of this thread from the import of this module until the attach call. So every
import and lookup comes first, and the shadowed sitecustomize, which is the program's,
runs after.
"""


def _memstage_shadowed_sitecustomize():
    import importlib.machinery
    import importlib.util
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return None
    return lambda: _memstage_run_spec(spec)


def _memstage_run_spec(spec):
    import importlib.util
    import sys

    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


def _memstage_attach():
    import ctypes
    import threading

    try:
        # PyDLL: the call keeps the GIL, which the tracer needs to read Python's frames.
        attach = ctypes.PyDLL(None).memstage_python_attach
    except (OSError, AttributeError):
        return
    attach.argtypes = [ctypes.c_int]
    attach.restype = ctypes.c_int

    def thread_hook(*_):
        # The first profile event of a new thread: the tracer's own profile function
        # replaces this one; skip this hook's frame.
        attach(1)

    threading.setprofile(thread_hook)
    if not attach(0):
        threading.setprofile(None)


_memstage_run_shadowed = None
try:
    _memstage_run_shadowed = _memstage_shadowed_sitecustomize()
    _memstage_attach()
finally:
    if _memstage_run_shadowed is not None:
        _memstage_run_shadowed()
