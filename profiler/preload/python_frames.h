// Python frames in the stacks of Python programs.
//
// A native stack of a Python program is mostly the interpreter's own loop; the user needs
// the lines of their script. `memstage run` puts a sitecustomize.py on PYTHONPATH that
// calls memstage_python_attach() (ctypes, GIL held) at startup and in every new thread.
// Attaching finds the CPython C API in the process with dlsym (no build against one
// Python version) and installs a C profile function that keeps, per thread, a shadow
// stack of the Python frames being executed. Each allocation's stack then gets those
// frames merged in where the interpreter's evaluation loop appears among the native
// frames, as memray does.
//
// Programs that never attach pay one thread-local load per allocation.
#pragma once

#include <cstdint>

namespace memstage::preload {

struct PythonStack;
extern __thread PythonStack* t_python_stack __attribute__((tls_model("initial-exec")));

// True when this thread is inside Python code the profile function has seen.
bool python_frames_pending(const PythonStack* stack);
inline bool python_frames_active() {
  const PythonStack* stack = t_python_stack;
  return __builtin_expect(stack != nullptr, 0) && python_frames_pending(stack);
}

// Writes `native` (innermost first, `depth` frames) with this thread's Python frames
// merged in to `out` (room for `capacity`): each run of the evaluation loop's native
// frames is replaced by the Python frames it was executing; Python frames whose native
// frames lie beyond the captured depth go at the outer end. Returns the merged depth.
// Allocation-free; called on the allocating thread with the recording guard set.
uint32_t merge_python_frames(const uint64_t* native, uint32_t depth, uint64_t* out, uint32_t capacity);

// Attaches the calling thread (must hold the GIL). `skip_frames`: innermost Python
// frames of the caller to leave out (the frame of a profile hook that calls this).
// Returns 1 when Python frames are recorded for this thread, 0 when they cannot be.
int python_attach(int skip_frames);

// The bootstrap's own work (importing ctypes and threading to attach) is the tracer's,
// not the program's. At start, when `memstage run` put the bootstrap on PYTHONPATH
// (MEMSTAGE_PYTHON_BOOTSTRAP) and the process is a Python, an audit hook (CPython allows
// adding one before the interpreter starts) sees the import of sitecustomize begin: the
// thread records nothing from there until python_bootstrap_attached() (the bootstrap
// attaching) or until the program's own code starts, if it never attaches.
void python_watch_bootstrap();
void python_bootstrap_attached();

// Attached to a running process (`memstage attach`, got_hooks.cpp) that is a Python: the
// interpreter is asked (Py_AddPendingCall) to attach its main thread at its next safe
// point between bytecodes, with the GIL held, unless the program profiles that thread
// itself. Other threads keep native frames only. False when the process is no Python.
bool python_attach_later();
// At detach: the main thread's profile function is taken out and the frame references
// the tracer held are dropped, at its next safe point.
void python_detach_later();

}  // namespace memstage::preload
