// The Python side of the tracer: the CPython API found at run time, the profile function
// that keeps each thread's shadow stack of Python frames, code object names, and the
// merge of Python frames into native stacks. See python_frames.h.
#include "profiler/preload/python_frames.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <atomic>

#include "profiler/preload/recording.h"
#include "profiler/preload/recording_core.h"
#include "profiler/preload/tracer_memory.h"
#include "profiler/trace/trace_records.h"

namespace memstage::preload {

namespace {

// Opaque CPython objects: only pointers to them are handled, through the API.
struct PyObject;
struct PyFrameObject;
using ProfileFunction = int (*)(PyObject*, PyFrameObject*, int, PyObject*);
using CFunction = PyObject* (*)(PyObject*, PyObject*);
using AuditHook = int (*)(const char*, PyObject*, void*);

// PyMethodDef (Include/methodobject.h), unchanged since Python 2.
struct MethodDef {
  const char* name;
  CFunction function;
  int flags;
  const char* doc;
};
constexpr int kMethOneArgument = 0x0008;  // METH_O

// The profile events (Include/cpython/pystate.h), stable since Python 2.
constexpr int kPyTraceCall = 0;
constexpr int kPyTraceReturn = 3;

// The C API used, all in the stable ABI or public since 3.9.
struct PythonApi {
  void (*PyEval_SetProfile)(ProfileFunction, PyObject*);
  PyFrameObject* (*PyEval_GetFrame)();           // borrowed
  PyFrameObject* (*PyFrame_GetBack)(PyFrameObject*);  // new reference
  PyObject* (*PyFrame_GetCode)(PyFrameObject*);       // new reference
  int (*PyFrame_GetLineNumber)(PyFrameObject*);
  PyObject* (*PyObject_GetAttrString)(PyObject*, const char*);
  const char* (*PyUnicode_AsUTF8AndSize)(PyObject*, long*);
  long (*PyLong_AsLong)(PyObject*);
  void (*PyErr_Clear)();
  void (*Py_IncRef)(PyObject*);
  void (*Py_DecRef)(PyObject*);
  const char* (*Py_GetVersion)();
  PyObject* (*PyWeakref_NewRef)(PyObject*, PyObject*);
  PyObject* (*PyCFunction_NewEx)(MethodDef*, PyObject*, PyObject*);
  PyObject* (*PyLong_FromLong)(long);
  PyObject* none;  // _Py_NoneStruct
  // The evaluation loop's code: native frames in it are where Python frames belong.
  uint64_t eval_start = 0;
  uint64_t eval_end = 0;
};

PythonApi g_api;
std::atomic<int> g_api_state{0};  // 0: not tried, 1: resolved, -1: not a usable Python
pthread_mutex_t g_attach_mutex = PTHREAD_MUTEX_INITIALIZER;

template <typename F>
bool resolve(F& f, const char* name) {
  f = reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
  return f != nullptr;
}

bool resolve_api() {
  PythonApi& a = g_api;
  bool ok = resolve(a.PyEval_SetProfile, "PyEval_SetProfile") && resolve(a.PyEval_GetFrame, "PyEval_GetFrame") &&
            resolve(a.PyFrame_GetBack, "PyFrame_GetBack") && resolve(a.PyFrame_GetCode, "PyFrame_GetCode") &&
            resolve(a.PyFrame_GetLineNumber, "PyFrame_GetLineNumber") &&
            resolve(a.PyObject_GetAttrString, "PyObject_GetAttrString") &&
            resolve(a.PyUnicode_AsUTF8AndSize, "PyUnicode_AsUTF8AndSize") &&
            resolve(a.PyLong_AsLong, "PyLong_AsLong") && resolve(a.PyErr_Clear, "PyErr_Clear") &&
            resolve(a.Py_IncRef, "Py_IncRef") && resolve(a.Py_DecRef, "Py_DecRef") &&
            resolve(a.Py_GetVersion, "Py_GetVersion") && resolve(a.PyWeakref_NewRef, "PyWeakref_NewRef") &&
            resolve(a.PyCFunction_NewEx, "PyCFunction_NewEx") && resolve(a.PyLong_FromLong, "PyLong_FromLong") &&
            resolve(a.none, "_Py_NoneStruct");
  if (!ok) return false;
  void* eval = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
  Dl_info info;
  ElfW(Sym)* sym = nullptr;
  if (eval && dladdr1(eval, &info, reinterpret_cast<void**>(&sym), RTLD_DL_SYMENT) && sym && sym->st_size) {
    a.eval_start = reinterpret_cast<uint64_t>(eval);
    a.eval_end = a.eval_start + sym->st_size;
  }
  return true;
}

// ---- code objects: each gets an id and one kPythonCode record naming it ----

// Open addressing over code object addresses, sized to what the program has: a table for
// the most a program could have (half a million) would spread a few thousand code objects
// over every page of 24 MiB. Doubled when half full, up to kMaxCodeSlots; read and
// changed under the GIL only (intern_code, the weak references' callback). The tracer
// never keeps a code object alive (generated code, exec, notebooks would keep every one
// and its constants): it holds a weak reference whose callback marks the code object's
// slot dead when the object goes. Its address may then be given to another code object,
// which gets an id of its own.
constexpr uint32_t kFirstCodeSlots = 1u << 12;
constexpr uint32_t kMaxCodeSlots = 1u << 20;
constexpr uint32_t kNoCode = 0xffffffffu;
struct CodeSlot {
  std::atomic<uint64_t> code;  // 0: empty; stays once set (probing relies on it)
  std::atomic<uint32_t> id;    // kNoCode once the code object died
  PyObject* weakref;           // ours; nullptr once handed to g_dead_weakrefs
};
CodeSlot* g_code_slots = nullptr;
uint32_t g_code_slot_count = 0;  // a power of two
uint32_t g_code_count = 0;       // ids given; guarded by g_attach_mutex
uint32_t g_code_slots_used = 0;  // addresses seen; half the table at most

// Weak references whose code object died, released on the next new code object: not
// inside their own callback, while CPython still uses them. Under the GIL.
constexpr uint32_t kMaxDeadWeakrefs = 4096;
PyObject* g_dead_weakrefs[kMaxDeadWeakrefs];
uint32_t g_dead_weakref_count = 0;

uint32_t code_slot_of(uint64_t code) {
  return static_cast<uint32_t>((code >> 4) * 0x9E3779B97F4A7C15ull >> 32) & (g_code_slot_count - 1);
}

// The slot of `code`, or the empty slot where it goes; g_code_slot_count when the table is full.
uint32_t find_slot(uint64_t code) {
  const uint32_t mask = g_code_slot_count - 1;
  for (uint32_t i = code_slot_of(code), probes = 0; probes < g_code_slot_count; i = (i + 1) & mask, ++probes) {
    const uint64_t c = g_code_slots[i].code.load(std::memory_order_acquire);
    if (c == code || c == 0) return i;
  }
  return g_code_slot_count;
}

uint32_t find_code(uint64_t code) {
  const uint32_t slot = find_slot(code);
  if (slot == g_code_slot_count || g_code_slots[slot].code.load(std::memory_order_acquire) != code) return kNoCode;
  return g_code_slots[slot].id.load(std::memory_order_acquire);
}

// The table, empty, at its first size; false when it cannot be had.
bool map_code_slots() {
  g_code_slots = static_cast<CodeSlot*>(tracer_map(sizeof(CodeSlot) * kFirstCodeSlots));
  g_code_slot_count = g_code_slots ? kFirstCodeSlots : 0;
  return g_code_slots != nullptr;
}

// Twice the slots, every slot used moved over (dead ones too: a dead one may still hold
// its weak reference); false (the table as it was) when the memory cannot be had. Pure
// C: no callback runs meanwhile. With g_attach_mutex held.
bool grow_code_slots() {
  const uint32_t count = g_code_slot_count * 2;
  auto* bigger = static_cast<CodeSlot*>(tracer_map(sizeof(CodeSlot) * count));
  if (!bigger) return false;
  CodeSlot* old = g_code_slots;
  const uint32_t old_count = g_code_slot_count;
  g_code_slots = bigger;
  g_code_slot_count = count;
  for (uint32_t i = 0; i < old_count; ++i) {
    const uint64_t code = old[i].code.load(std::memory_order_relaxed);
    if (code == 0) continue;
    CodeSlot& s = bigger[find_slot(code)];
    s.id.store(old[i].id.load(std::memory_order_relaxed), std::memory_order_relaxed);
    s.weakref = old[i].weakref;
    s.code.store(code, std::memory_order_release);
  }
  tracer_unmap(old, sizeof(CodeSlot) * old_count);
  return true;
}

// The callback's argument is the code object's address: its slot moves when the table grows.
PyObject* on_code_died(PyObject* code_address, PyObject*) {
  const auto code = static_cast<uint64_t>(g_api.PyLong_AsLong(code_address));
  const uint32_t slot = code ? find_slot(code) : g_code_slot_count;
  if (slot < g_code_slot_count && g_code_slots[slot].code.load(std::memory_order_relaxed) == code) {
    CodeSlot& s = g_code_slots[slot];
    s.id.store(kNoCode, std::memory_order_release);
    if (s.weakref && g_dead_weakref_count < kMaxDeadWeakrefs) {
      g_dead_weakrefs[g_dead_weakref_count++] = s.weakref;
      s.weakref = nullptr;
    }
  }
  g_api.Py_IncRef(g_api.none);
  return g_api.none;
}
MethodDef g_on_code_died{"memstage_code_died", on_code_died, kMethOneArgument, nullptr};

// A weak reference to `code` that tells on_code_died when it dies; nullptr if none can be had.
PyObject* watch_code(PyObject* code) {
  PyObject* address = g_api.PyLong_FromLong(static_cast<long>(reinterpret_cast<uintptr_t>(code)));
  PyObject* callback = address ? g_api.PyCFunction_NewEx(&g_on_code_died, address, nullptr) : nullptr;
  PyObject* weakref = callback ? g_api.PyWeakref_NewRef(code, callback) : nullptr;
  if (!weakref) g_api.PyErr_Clear();
  if (callback) g_api.Py_DecRef(callback);  // the weak reference holds it
  if (address) g_api.Py_DecRef(address);
  return weakref;
}

// Copies a str attribute of `object` as UTF-8; empty when it has none.
size_t copy_str_attribute(PyObject* object, const char* name, char* out, size_t capacity) {
  PyObject* value = g_api.PyObject_GetAttrString(object, name);
  if (!value) {
    g_api.PyErr_Clear();
    return 0;
  }
  long length = 0;
  const char* utf8 = g_api.PyUnicode_AsUTF8AndSize(value, &length);
  size_t n = 0;
  if (utf8 && length > 0) {
    n = static_cast<size_t>(length) < capacity ? static_cast<size_t>(length) : capacity;
    memcpy(out, utf8, n);
  } else if (!utf8) {
    g_api.PyErr_Clear();
  }
  g_api.Py_DecRef(value);
  return n;
}

long int_attribute(PyObject* object, const char* name) {
  PyObject* value = g_api.PyObject_GetAttrString(object, name);
  if (!value) {
    g_api.PyErr_Clear();
    return 0;
  }
  long v = g_api.PyLong_AsLong(value);
  if (v == -1) g_api.PyErr_Clear();
  g_api.Py_DecRef(value);
  return v < 0 ? 0 : v;
}

// Takes (and drops) the reference the caller holds on `code`. With the GIL held.
uint32_t intern_code(PyObject* code) {
  const uint64_t key = reinterpret_cast<uint64_t>(code);
  uint32_t id = find_code(key);
  if (id != kNoCode) {
    g_api.Py_DecRef(code);
    return id;
  }
  RecordingGuard guard;  // the names' UTF-8 caches are CPython's, not the program's
  pthread_mutex_lock(&g_attach_mutex);
  while (g_dead_weakref_count > 0) g_api.Py_DecRef(g_dead_weakrefs[--g_dead_weakref_count]);
  id = find_code(key);
  if (id == kNoCode && g_code_slots_used >= g_code_slot_count / 2 && g_code_slot_count < kMaxCodeSlots) {
    grow_code_slots();
  }
  // Slot numbers hold from here on: the Python calls below may run callbacks, which only mark slots dead.
  const uint32_t slot = find_slot(key);  // a dead code object's slot, or an empty one
  const bool fresh = slot < g_code_slot_count && g_code_slots[slot].code.load(std::memory_order_relaxed) == 0;
  if (id == kNoCode && slot < g_code_slot_count && (!fresh || g_code_slots_used < g_code_slot_count / 2)) {
    g_code_slots_used += fresh;
    constexpr size_t kMaxName = 4096;
    uint8_t record[1 + 3 * trace::kMaxVarintBytes + 2 * (kMaxName + trace::kMaxVarintBytes)];
    char file[kMaxName], function[kMaxName];
    const size_t file_len = copy_str_attribute(code, "co_filename", file, kMaxName);
    size_t function_len = copy_str_attribute(code, "co_qualname", function, kMaxName);  // 3.11+
    if (function_len == 0) function_len = copy_str_attribute(code, "co_name", function, kMaxName);
    const long first_line = int_attribute(code, "co_firstlineno");
    id = g_code_count++;
    uint8_t* out = trace::records::encode(
        record, trace::records::PythonCode{id, static_cast<uint64_t>(first_line), std::string_view(file, file_len),
                                           std::string_view(function, function_len)});
    // The record is numbered before the id is published: every stack that uses the id
    // comes after it in the trace.
    if (ThreadState* ts = current_thread_state()) push_encoded(ts, record, static_cast<uint32_t>(out - record));
    CodeSlot& s = g_code_slots[slot];
    if (s.weakref) g_api.Py_DecRef(s.weakref);  // dead, not handed over (the list was full)
    s.weakref = watch_code(code);
    s.id.store(id, std::memory_order_release);
    s.code.store(key, std::memory_order_release);
  }
  pthread_mutex_unlock(&g_attach_mutex);
  g_api.Py_DecRef(code);
  return id;
}

// ---- the bootstrap ----

enum : int { kNoBootstrap, kBootstrapAwaited, kBootstrapRunning, kBootstrapDone };
std::atomic<int> g_bootstrap{kNoBootstrap};
__thread bool t_in_bootstrap __attribute__((tls_model("initial-exec"))) = false;
PyObject* (*g_tuple_item)(PyObject*, long) = nullptr;             // PyTuple_GetItem, borrowed
const char* (*g_str_utf8)(PyObject*, long*) = nullptr;            // PyUnicode_AsUTF8AndSize
void (*g_error_clear)() = nullptr;                                 // PyErr_Clear

void end_bootstrap() {
  if (!t_in_bootstrap) return;
  t_in_bootstrap = false;
  leave_tracer(false);
  g_bootstrap.store(kBootstrapDone, std::memory_order_relaxed);
}

int bootstrap_audit_hook(const char* event, PyObject* args, void*) {
  const int state = g_bootstrap.load(std::memory_order_relaxed);
  if (state == kBootstrapAwaited && strcmp(event, "import") == 0) {
    PyObject* module = g_tuple_item(args, 0);
    long length = 0;
    const char* name = module ? g_str_utf8(module, &length) : nullptr;
    if (name && length == 13 && memcmp(name, "sitecustomize", 13) == 0) {
      g_bootstrap.store(kBootstrapRunning, std::memory_order_relaxed);
      t_in_bootstrap = true;
      t_thread.in_tracer = true;
    } else if (!name) {
      g_error_clear();
    }
  } else if (state == kBootstrapRunning && strncmp(event, "cpython.run_", 12) == 0) {
    end_bootstrap();  // the program's code starts: the bootstrap did not attach
  }
  return 0;
}

}  // namespace

void python_watch_bootstrap() {
  const char* env = getenv("MEMSTAGE_PYTHON_BOOTSTRAP");
  if (!env || strcmp(env, "1") != 0) return;
  using AddAuditHook = int (*)(AuditHook, void*);
  auto add = reinterpret_cast<AddAuditHook>(dlsym(RTLD_DEFAULT, "PySys_AddAuditHook"));
  g_tuple_item = reinterpret_cast<decltype(g_tuple_item)>(dlsym(RTLD_DEFAULT, "PyTuple_GetItem"));
  g_str_utf8 = reinterpret_cast<decltype(g_str_utf8)>(dlsym(RTLD_DEFAULT, "PyUnicode_AsUTF8AndSize"));
  g_error_clear = reinterpret_cast<decltype(g_error_clear)>(dlsym(RTLD_DEFAULT, "PyErr_Clear"));
  if (!add || !g_tuple_item || !g_str_utf8 || !g_error_clear) return;
  g_bootstrap.store(kBootstrapAwaited, std::memory_order_relaxed);
  if (add(bootstrap_audit_hook, nullptr) != 0) g_bootstrap.store(kNoBootstrap, std::memory_order_relaxed);
}

void python_bootstrap_attached() { end_bootstrap(); }

// ---- the shadow stack ----

struct PythonFrame {
  PyFrameObject* frame;  // one reference held while on the stack
  uint32_t code_id;
  uint32_t line;         // the call site's, fixed when a callee is pushed
  uint64_t c_frame;      // the profile function's frame address at the call event
  bool entry;            // begins a new run of the evaluation loop (a new native frame)
};

struct PythonStack {
  static constexpr uint32_t kMaxFrames = 2048;
  uint32_t depth = 0;
  uint32_t overflow = 0;  // calls deeper than kMaxFrames, counted only
  PythonFrame frames[kMaxFrames];
};

__thread PythonStack* t_python_stack __attribute__((tls_model("initial-exec"))) = nullptr;

bool python_frames_pending(const PythonStack* stack) { return stack->depth > 0; }

namespace {

void push_frame(PythonStack* s, PyFrameObject* frame, uint64_t c_frame) {
  if (s->depth == PythonStack::kMaxFrames) {
    ++s->overflow;
    return;
  }
  PyObject* code = g_api.PyFrame_GetCode(frame);
  const uint32_t code_id = code ? intern_code(code) : kNoCode;
  PythonFrame* caller = s->depth ? &s->frames[s->depth - 1] : nullptr;
  // The caller's line no longer changes until this frame returns.
  if (caller) caller->line = static_cast<uint32_t>(g_api.PyFrame_GetLineNumber(caller->frame));
  g_api.Py_IncRef(reinterpret_cast<PyObject*>(frame));
  // Calls that stay in the same run of the evaluation loop (Python calling Python,
  // inlined since 3.11) reach the profile function at the same C stack depth; a call
  // through C code (map, sorted's key, __init__ via type(), generators) enters a new
  // run deeper down.
  s->frames[s->depth++] = PythonFrame{frame, code_id, 0, c_frame, !caller || caller->c_frame != c_frame};
}

void pop_frame(PythonStack* s, PyFrameObject* frame) {
  if (s->overflow) {
    --s->overflow;
    return;
  }
  // Normally the top; after events were missed (a profiler swapped in and out), the
  // innermost entry of this frame, dropping what is above it.
  uint32_t i = s->depth;
  while (i > 0 && s->frames[i - 1].frame != frame) --i;
  if (i == 0) return;
  while (s->depth >= i) {
    g_api.Py_DecRef(reinterpret_cast<PyObject*>(s->frames[s->depth - 1].frame));
    --s->depth;
  }
}

int profile_function(PyObject*, PyFrameObject* frame, int what, PyObject*) {
  PythonStack* s = t_python_stack;
  // Once the trace has ended (a detach) nothing more is recorded: the stack is dropped
  // whole at the detach's pending call (python_detach_later).
  if (!s || !frame || !recording()) return 0;
  if (what == kPyTraceCall) {
    push_frame(s, frame, reinterpret_cast<uint64_t>(__builtin_frame_address(0)));
  } else if (what == kPyTraceReturn) {
    pop_frame(s, frame);
  }
  return 0;
}

void push_python_info() {
  ThreadState* ts = current_thread_state();
  if (!ts) return;
  const char* version = g_api.Py_GetVersion();
  const char* env = getenv("PYTHONMALLOC");
  // PYTHONMALLOC=malloc / malloc_debug hand every object to malloc; otherwise objects up
  // to 512 bytes come from pymalloc's arenas, which the trace sees as anonymous mmaps.
  const char* allocator = env && strncmp(env, "malloc", 6) == 0 ? "malloc" : "pymalloc";
  const size_t version_len = version ? strnlen(version, 256) : 0;
  uint8_t record[1 + 2 * trace::kMaxVarintBytes + 256 + 16];
  uint8_t* out = trace::records::encode(
      record, trace::records::PythonInfo{std::string_view(version ? version : "", version_len), allocator});
  push_encoded(ts, record, static_cast<uint32_t>(out - record));
}

}  // namespace

uint32_t merge_python_frames(const uint64_t* native, uint32_t depth, uint64_t* out, uint32_t capacity) {
  const PythonStack* s = t_python_stack;
  uint32_t n = 0;
  // Python frames from the innermost out; `next` is the next one to place.
  int64_t next = static_cast<int64_t>(s->depth) - 1;
  const auto line_of = [s](int64_t i) -> uint32_t {
    // Outer frames' lines were fixed when they called; only the innermost moves on.
    return i == static_cast<int64_t>(s->depth) - 1
               ? static_cast<uint32_t>(g_api.PyFrame_GetLineNumber(s->frames[i].frame))
               : s->frames[i].line;
  };
  // Places one run of the evaluation loop: the frames down to and including an entry.
  const auto place_run = [&]() {
    while (next >= 0 && n < capacity) {
      const PythonFrame& f = s->frames[next];
      if (f.code_id != kNoCode) out[n++] = trace::python_frame_address(f.code_id, line_of(next));
      --next;
      if (f.entry) break;
    }
  };
  for (uint32_t i = 0; i < depth && n < capacity; ++i) {
    const uint64_t ip = native[i];
    if (next >= 0 && ip >= g_api.eval_start && ip < g_api.eval_end) {
      place_run();
    } else {
      out[n++] = ip;
    }
  }
  while (next >= 0 && n < capacity) place_run();
  return n;
}

int python_attach(int skip_frames) {
  RecordingGuard guard;
  if (!recording() || stats_mode()) return 0;
  pthread_mutex_lock(&g_attach_mutex);
  if (g_api_state.load() == 0) {
    const bool ok = map_code_slots() && resolve_api();
    g_api_state.store(ok ? 1 : -1);
    if (ok) push_python_info();
  }
  pthread_mutex_unlock(&g_attach_mutex);
  if (g_api_state.load() != 1) return 0;
  ThreadState* ts = current_thread_state();
  if (!ts) return 0;
  if (!ts->python) ts->python = static_cast<PythonStack*>(tracer_map(sizeof(PythonStack)));
  PythonStack* s = ts->python;
  if (!s) return 0;
  // A thread state reused from an exited thread: its frames are gone with it.
  s->depth = 0;
  s->overflow = 0;
  t_python_stack = nullptr;  // no merging while the stack is rebuilt

  // The frames already running, outermost first; they get no entry marks of their own
  // (their calls were not seen), so they count as one run of the loop.
  PyFrameObject* chain[PythonStack::kMaxFrames];
  uint32_t count = 0;
  PyFrameObject* f = g_api.PyEval_GetFrame();
  if (f) g_api.Py_IncRef(reinterpret_cast<PyObject*>(f));
  while (f && count < PythonStack::kMaxFrames) {
    chain[count++] = f;
    f = g_api.PyFrame_GetBack(f);
  }
  if (f) g_api.Py_DecRef(reinterpret_cast<PyObject*>(f));
  const uint32_t skip = skip_frames > 0 ? static_cast<uint32_t>(skip_frames) : 0;
  for (uint32_t i = count; i-- > 0;) {
    if (i >= skip) {
      PyObject* code = g_api.PyFrame_GetCode(chain[i]);
      const uint32_t code_id = code ? intern_code(code) : kNoCode;
      const bool outermost = s->depth == 0;
      const auto line = static_cast<uint32_t>(g_api.PyFrame_GetLineNumber(chain[i]));
      // The reference taken above moves to the stack.
      s->frames[s->depth++] = PythonFrame{chain[i], code_id, line, 0, outermost};
    } else {
      g_api.Py_DecRef(reinterpret_cast<PyObject*>(chain[i]));
    }
  }
  t_python_stack = s;
  g_api.PyEval_SetProfile(profile_function, nullptr);
  return 1;
}

namespace {

// The interpreter's entry points for a process the tracer was loaded into late.
struct LateApi {
  int (*Py_IsInitialized)();
  int (*Py_AddPendingCall)(int (*)(void*), void*);
  PyObject* (*PyImport_ImportModule)(const char*);
  PyObject* (*PyObject_CallMethod)(PyObject*, const char*, const char*, ...);
};

bool resolve_late_api(LateApi& a) {
  return resolve(a.Py_IsInitialized, "Py_IsInitialized") && resolve(a.Py_AddPendingCall, "Py_AddPendingCall") &&
         resolve(a.PyImport_ImportModule, "PyImport_ImportModule") &&
         resolve(a.PyObject_CallMethod, "PyObject_CallMethod") && a.Py_IsInitialized();
}

// True when the program profiles this thread itself (cProfile, sys.setprofile): the tracer's
// profile function would take its place. With the GIL held.
bool program_profiles(const LateApi& a) {
  PyObject* sys = a.PyImport_ImportModule("sys");
  PyObject* current = sys ? a.PyObject_CallMethod(sys, "getprofile", nullptr) : nullptr;
  const bool profiled = !current || current != g_api.none;
  if (!current) g_api.PyErr_Clear();
  if (current) g_api.Py_DecRef(current);
  if (sys) g_api.Py_DecRef(sys);
  return profiled;
}

LateApi g_late;

// Run by the main thread at its next safe point, with the GIL held.
int attach_main_thread(void*) {
  RecordingGuard guard;
  // resolve_api for program_profiles' calls; python_attach resolves it again, harmlessly.
  if (!recording() || stats_mode() || !resolve_api()) return 0;
  if (!program_profiles(g_late)) python_attach(0);
  return 0;
}

// The profile function taken out and the frames' references given back: the program's
// frames must not outlive it because the tracer held them. A profiler the program set
// meanwhile stays. With the GIL held.
int detach_main_thread(void*) {
  PythonStack* s = t_python_stack;
  if (!s) return 0;
  t_python_stack = nullptr;
  if (!program_profiles(g_late)) g_api.PyEval_SetProfile(nullptr, nullptr);
  while (s->depth > 0) g_api.Py_DecRef(reinterpret_cast<PyObject*>(s->frames[--s->depth].frame));
  s->overflow = 0;
  return 0;
}

}  // namespace

bool python_attach_later() {
  if (!resolve_late_api(g_late)) return false;
  return g_late.Py_AddPendingCall(attach_main_thread, nullptr) == 0;
}

void python_detach_later() {
  if (g_late.Py_AddPendingCall) g_late.Py_AddPendingCall(detach_main_thread, nullptr);
}

}  // namespace memstage::preload
