"""memstage's Python bootstrap.

`memstage run` puts this folder first on PYTHONPATH, so every Python process it starts
imports this module at startup (the `site` module imports `sitecustomize`). It asks the
preloaded tracer to record the Python frames of each allocation, in this thread and in
every thread started later, then runs the sitecustomize this one shadows, if any.
Without the tracer in the process it does nothing.
"""


def _memstage_attach():
    import ctypes

    try:
        # PyDLL: the call keeps the GIL, which the tracer needs to read Python's frames.
        attach = ctypes.PyDLL(None).memstage_python_attach
    except (OSError, AttributeError):
        return
    attach.argtypes = [ctypes.c_int]
    attach.restype = ctypes.c_int
    if not attach(0):
        return
    import threading

    def thread_hook(*_):
        # The first profile event of a new thread: the tracer's own profile function
        # replaces this one; skip this hook's frame.
        attach(1)

    threading.setprofile(thread_hook)


def _run_shadowed_sitecustomize():
    import importlib.machinery
    import importlib.util
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


try:
    _memstage_attach()
finally:
    _run_shadowed_sitecustomize()
