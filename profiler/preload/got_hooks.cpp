// Attaching to a running process: the tracer's functions put into every loaded object's
// relocation slots for the functions it stands in front of, and taken out again at detach
// (got_hooks.h). Only slots the dynamic linker fills with a function's address are
// touched: R_*_JUMP_SLOT (calls through the PLT) and R_*_GLOB_DAT (calls without a PLT,
// and addresses taken, such as the weak stage API references of <memstage/stage.h>).
#include "profiler/preload/got_hooks.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <type_traits>

#include "profiler/preload/hooked_functions.h"
#include "profiler/preload/python_frames.h"
#include "profiler/preload/real_functions.h"
#include "profiler/preload/recording.h"
#include "profiler/preload/samplers.h"
#include "profiler/preload/tracer.h"
#include "profiler/preload/tracer_memory.h"
#include "profiler/trace/trace_records.h"

#define MEMSTAGE_EXPORT extern "C" __attribute__((visibility("default")))

namespace memstage::preload {

namespace {

#if defined(__x86_64__)
constexpr uint32_t kJumpSlot = R_X86_64_JUMP_SLOT;
constexpr uint32_t kGlobDat = R_X86_64_GLOB_DAT;
#elif defined(__aarch64__)
constexpr uint32_t kJumpSlot = R_AARCH64_JUMP_SLOT;
constexpr uint32_t kGlobDat = R_AARCH64_GLOB_DAT;
#else
#error "got_hooks.cpp: relocation types of this architecture"
#endif

// The functions the preloaded tracer stands in front of, each with whether it is hooked
// when attached (hooked_functions.h). The stage API's slots (weak references: null until
// now) are set and never put back (AttachHook::kKept): a program tests the reference and
// then calls through it, which must never find null in between; after detach the stage
// functions do nothing.
struct HookedName {
  const char* name;
  AttachHook attach;
};
#define MEMSTAGE_FORWARDED_NAME(field, symbol, attach, result, parameters) {symbol, attach},
#define MEMSTAGE_OWN_NAME(symbol, attach) {symbol, attach},
constexpr HookedName kHooked[] = {MEMSTAGE_HOOKED_FUNCTIONS(MEMSTAGE_FORWARDED_NAME, MEMSTAGE_OWN_NAME)};
#undef MEMSTAGE_FORWARDED_NAME
#undef MEMSTAGE_OWN_NAME
constexpr size_t kHookedCount = sizeof(kHooked) / sizeof(kHooked[0]);
static_assert(kHooked[0].attach == AttachHook::kYes, "find_replacements checks the first (malloc)");

// The tracer's definition of each name, found in its own symbol table.
void* g_replacement[kHookedCount] = {};

// Every slot changed, by address: what it held before (open addressing; 0: empty). A slot
// of an object unloaded since is only ever overwritten by the same slot of an object
// loaded later at that address; put back are only slots found in objects loaded now that
// still hold the tracer's function.
struct SavedSlot {
  uintptr_t slot;
  void* original;
};
constexpr size_t kSavedSlots = 1u << 16;
SavedSlot* g_saved = nullptr;
size_t g_saved_count = 0;

pthread_mutex_t g_hooks_mutex = PTHREAD_MUTEX_INITIALIZER;
std::atomic<bool> g_active{false};

uintptr_t g_own_base = 0;

SavedSlot* find_saved(uintptr_t slot, bool insert) {
  size_t i = (slot >> 3) * 0x9E3779B97F4A7C15ull >> 48;
  for (size_t probes = 0; probes < kSavedSlots; ++probes, i = (i + 1) & (kSavedSlots - 1)) {
    if (g_saved[i].slot == slot) return &g_saved[i];
    if (g_saved[i].slot == 0) {
      // At most 3/4 full, so a probe for a slot not there ends soon.
      if (!insert || g_saved_count >= kSavedSlots / 4 * 3) return nullptr;
      g_saved[i].slot = slot;
      ++g_saved_count;
      return &g_saved[i];
    }
  }
  return nullptr;
}

int hooked_index(const char* name) {
  for (size_t i = 0; i < kHookedCount; ++i) {
    if (kHooked[i].attach != AttachHook::kNo && strcmp(name, kHooked[i].name) == 0) return static_cast<int>(i);
  }
  return -1;
}

int replacement_index(void* value) {
  for (size_t i = 0; i < kHookedCount; ++i) {
    if (value && g_replacement[i] == value) return static_cast<int>(i);
  }
  return -1;
}

// Writes a slot, making its page writable for the moment when it is in the object's
// read-only-after-relocation part (RELRO: every slot under -z now).
void write_slot(uintptr_t slot, void* value, uintptr_t relro_start, uintptr_t relro_end) {
  const uintptr_t page_bytes = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t page = slot & ~(page_bytes - 1);
  const bool read_only = slot >= relro_start && slot < relro_end;
  if (read_only) syscall(SYS_mprotect, page, page_bytes, PROT_READ | PROT_WRITE);
  // One aligned store: a thread calling through the slot meanwhile finds the old function
  // or the new one, both whole.
  __atomic_store_n(reinterpret_cast<void**>(slot), value, __ATOMIC_RELEASE);
  if (read_only) syscall(SYS_mprotect, page, page_bytes, PROT_READ);
}

enum class Walk { kHook, kRestore };

struct ObjectTables {
  const ElfW(Sym)* symbols = nullptr;
  const char* strings = nullptr;
  const ElfW(Rela)* relocations[2] = {};
  size_t relocation_bytes[2] = {};
};

// The dynamic section holds addresses; the dynamic linker has relocated them in place on
// most systems, not in every object (the vDSO's, read-only dynamic sections): a value
// below the load address is still an offset.
uintptr_t dynamic_address(uintptr_t value, uintptr_t base) { return value < base ? value + base : value; }

bool read_tables(const dl_phdr_info* info, ObjectTables& t) {
  const ElfW(Dyn)* dynamic = nullptr;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) {
      dynamic = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    }
  }
  if (!dynamic) return false;
  const uintptr_t base = info->dlpi_addr;
  bool plt_is_rela = true;
  for (const ElfW(Dyn)* d = dynamic; d->d_tag != DT_NULL; ++d) {
    switch (d->d_tag) {
      case DT_SYMTAB: t.symbols = reinterpret_cast<const ElfW(Sym)*>(dynamic_address(d->d_un.d_ptr, base)); break;
      case DT_STRTAB: t.strings = reinterpret_cast<const char*>(dynamic_address(d->d_un.d_ptr, base)); break;
      case DT_RELA: t.relocations[0] = reinterpret_cast<const ElfW(Rela)*>(dynamic_address(d->d_un.d_ptr, base)); break;
      case DT_RELASZ: t.relocation_bytes[0] = d->d_un.d_val; break;
      case DT_JMPREL: t.relocations[1] = reinterpret_cast<const ElfW(Rela)*>(dynamic_address(d->d_un.d_ptr, base)); break;
      case DT_PLTRELSZ: t.relocation_bytes[1] = d->d_un.d_val; break;
      case DT_PLTREL: plt_is_rela = d->d_un.d_val == DT_RELA; break;
      default: break;
    }
  }
  if (!plt_is_rela) t.relocations[1] = nullptr;
  return t.symbols && t.strings;
}

int walk_object(dl_phdr_info* info, size_t, void* data) {
  const Walk walk = *static_cast<Walk*>(data);
  const uintptr_t base = info->dlpi_addr;
  // The tracer itself, and the dynamic loader (its bookkeeping is never traced, tracer.h).
  if (base == g_own_base || (base != 0 && base == getauxval(AT_BASE))) return 0;
  ObjectTables t;
  if (!read_tables(info, t)) return 0;
  uintptr_t relro_start = 0, relro_end = 0;
  const uintptr_t page_bytes = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_GNU_RELRO) continue;
    // As the dynamic linker protects it: whole pages, the last partial one left writable.
    relro_start = (base + ph.p_vaddr) & ~(page_bytes - 1);
    relro_end = (base + ph.p_vaddr + ph.p_memsz) & ~(page_bytes - 1);
  }
  for (int table = 0; table < 2; ++table) {
    if (!t.relocations[table]) continue;
    const size_t count = t.relocation_bytes[table] / sizeof(ElfW(Rela));
    for (size_t r = 0; r < count; ++r) {
      const ElfW(Rela)& rela = t.relocations[table][r];
      const uint32_t type = static_cast<uint32_t>(ELF64_R_TYPE(rela.r_info));
      if (type != kJumpSlot && type != kGlobDat) continue;
      const size_t symbol = ELF64_R_SYM(rela.r_info);
      if (symbol == 0) continue;
      const int index = hooked_index(t.strings + t.symbols[symbol].st_name);
      if (index < 0 || !g_replacement[index]) continue;
      const uintptr_t slot = base + rela.r_offset;
      void* const current = __atomic_load_n(reinterpret_cast<void**>(slot), __ATOMIC_ACQUIRE);
      if (walk == Walk::kHook) {
        if (replacement_index(current) >= 0) continue;  // hooked already
        SavedSlot* saved = find_saved(slot, true);
        if (!saved) continue;  // full: this slot stays as it was
        saved->original = current;
        write_slot(slot, g_replacement[index], relro_start, relro_end);
      } else {
        if (current != g_replacement[index] || kHooked[index].attach == AttachHook::kKept) continue;
        const SavedSlot* saved = find_saved(slot, false);
        if (saved) write_slot(slot, saved->original, relro_start, relro_end);
      }
    }
  }
  return 0;
}

void walk_objects(Walk walk) {
  pthread_mutex_lock(&g_hooks_mutex);
  // A dlopen that saw the tracer attached may get here after the detach put every slot
  // back: it must not hook them again.
  if (walk == Walk::kRestore || g_active.load(std::memory_order_acquire)) dl_iterate_phdr(walk_object, &walk);
  pthread_mutex_unlock(&g_hooks_mutex);
}

// The tracer's own definitions, by name, from its own symbol table (a lookup from here
// by plain name would find the program's: this library is not in the global scope).
bool find_replacements() {
  Dl_info self{};
  if (!dladdr(reinterpret_cast<void*>(&find_replacements), &self) || !self.dli_fname) return false;
  g_own_base = reinterpret_cast<uintptr_t>(self.dli_fbase);
  void* handle = dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  if (!handle) return false;
  for (size_t i = 0; i < kHookedCount; ++i) {
    void* f = kHooked[i].attach == AttachHook::kNo ? nullptr : dlsym(handle, kHooked[i].name);
    Dl_info where{};
    // Names the tracer does not define resolve to a dependency's: not a replacement.
    g_replacement[i] = f && dladdr(f, &where) && where.dli_fbase == self.dli_fbase ? f : nullptr;
  }
  dlclose(handle);
  return g_replacement[0] != nullptr;
}

// "key=value" lines into options; false on an unknown key or a bad value.
bool parse_options(const char* text, Options& o) {
  o.follow_fork = false;  // a child forked while attached is not detached from later
  bool have_output = false;
  while (text && *text) {
    const char* end = strchr(text, '\n');
    const size_t length = end ? static_cast<size_t>(end - text) : strlen(text);
    const char* equals = static_cast<const char*>(memchr(text, '=', length));
    if (!equals) return false;
    const size_t key_length = static_cast<size_t>(equals - text);
    const char* value = equals + 1;
    const size_t value_length = length - key_length - 1;
    auto key_is = [&](const char* key) { return strlen(key) == key_length && memcmp(text, key, key_length) == 0; };
    auto number = [&](uint64_t min, uint64_t max, auto& out) {
      char digits[24];
      if (value_length == 0 || value_length >= sizeof(digits)) return false;
      memcpy(digits, value, value_length);
      digits[value_length] = '\0';
      char* stop = nullptr;
      const unsigned long long n = strtoull(digits, &stop, 10);
      if (*stop || n < min || n > max) return false;
      out = static_cast<std::remove_reference_t<decltype(out)>>(n);
      return true;
    };
    if (key_is("output")) {
      if (value_length == 0 || value_length > kMaxOutputDirBytes) return false;
      memcpy(o.output_dir, value, value_length);
      o.output_dir[value_length] = '\0';
      have_output = true;
    } else if (key_is("mode")) {
      if (value_length == 4 && memcmp(value, "full", 4) == 0) {
        o.mode = trace::Mode::kFull;
      } else if (value_length == 5 && memcmp(value, "stats", 5) == 0) {
        o.mode = trace::Mode::kStats;
      } else if (value_length == 9 && memcmp(value, "aggregate", 9) == 0) {
        o.mode = trace::Mode::kAggregate;
      } else if (value_length == 6 && memcmp(value, "sample", 6) == 0) {
        o.mode = trace::Mode::kSample;
      } else {
        return false;
      }
    } else if (key_is("max_depth")) {
      if (!number(1, 256, o.max_depth)) return false;
    } else if (key_is("sample_interval_ms")) {
      if (!number(1, 10000, o.sample_interval_ms)) return false;
    } else if (key_is("sample_rate_bytes")) {
      if (!number(1, 1ull << 40, o.sample_rate_bytes)) return false;
    } else {
      return false;
    }
    text = end ? end + 1 : nullptr;
  }
  return have_output;
}

}  // namespace

bool got_hooks_active() { return g_active.load(std::memory_order_acquire); }

void got_hooks_after_dlopen() {
  if (!got_hooks_active()) return;
  RecordingGuard guard;
  walk_objects(Walk::kHook);
}

}  // namespace memstage::preload

using namespace memstage::preload;

MEMSTAGE_EXPORT int memstage_attach_start(const char* options_text) {
  RecordingGuard guard;
  Options options;
  if (!parse_options(options_text, options)) return kAttachBadOptions;
  if (recording() || got_hooks_active()) return kAttachAlreadyRecording;
  // The trace's state (stack table, writer) is made once per process.
  if (g_tracer.start_monotonic_ns != 0) return kAttachAttachedBefore;
  if (!find_replacements()) return kAttachCannotStart;
  if (!g_saved) {
    g_saved = static_cast<SavedSlot*>(tracer_map(kSavedSlots * sizeof(SavedSlot)));
    if (!g_saved) return kAttachCannotStart;
  }
  resolve_from_program();
  start_tracer_with(options, true);
  if (!recording()) {
    // Nothing was recorded: a later attach may try again (its trace file somewhere else).
    remove_signal_handlers();
    g_tracer.start_monotonic_ns = 0;
    return kAttachCannotStart;
  }
  // Stats and sample modes count the live heap on every call; blocks from before attach
  // are freed into that count too, so it starts from what the allocator says is in use now
  // (with its rounding: the report says the heap from before attach is the allocator's figure).
  if (counting_mode()) {
    const AllocatorStats allocator = read_allocator_stats();
    const auto in_use = static_cast<int64_t>(allocator.valid ? allocator.in_use_bytes : 0);
    g_tracer.heap_live_bytes.store(in_use);
    g_tracer.heap_high_bytes.store(in_use);
  }
  if (ThreadState* ts = current_thread_state()) push_record(ts, memstage::trace::records::Attached{trace_time_ns()});
  g_active.store(true, std::memory_order_release);
  walk_objects(Walk::kHook);
  // Stats mode walks no stack: no Python frames to merge.
  if (!stats_mode()) python_attach_later();
  return kAttachOk;
}

MEMSTAGE_EXPORT int memstage_attach_stop(void) {
  RecordingGuard guard;
  if (!got_hooks_active()) return kAttachNotAttached;
  g_active.store(false, std::memory_order_release);
  walk_objects(Walk::kRestore);
  // A call already inside a tracer function finds recording off from here on and passes
  // straight through.
  finish_trace();
  remove_signal_handlers();
  python_detach_later();
  return kAttachOk;
}
