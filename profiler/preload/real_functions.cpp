// The real functions behind the interposed ones, their lookup, the bootstrap arena and
// the loader's code (real_functions.h).
#include "profiler/preload/real_functions.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <string.h>
#include <sys/auxv.h>

namespace memstage::preload {

RealFunctions g_real;
std::atomic<int> g_resolve_state{0};
alignas(64) uint8_t g_bootstrap_arena[kBootstrapBytes];
uint64_t g_loader_text_start = 0;
uint64_t g_loader_text_bytes = 0;
bool g_glibc_allocator = false;

namespace {

std::atomic<size_t> g_bootstrap_used{0};

// True when `f` is where a defined symbol starts. An executable that is not PIE and takes
// a function's address (Debian's python3 does with malloc and free) exports it as an
// undefined symbol whose value is its PLT stub (a "canonical PLT entry"): dladdr names
// that symbol, undefined (SHN_UNDEF), for the stub's address.
bool is_definition(void* f) {
  Dl_info info;
  ElfW(Sym)* symbol = nullptr;
  return dladdr1(f, &info, reinterpret_cast<void**>(&symbol), RTLD_DL_SYMENT) != 0 && info.dli_saddr == f &&
         symbol && symbol->st_shndx != SHN_UNDEF;
}

// The first loaded object, in load order (the global scope's, for what the program loaded
// at start), that defines `name` itself, this library aside; nullptr when none does.
void* first_definition(const char* name) {
  Dl_info self;
  if (!dladdr(reinterpret_cast<void*>(&first_definition), &self)) return nullptr;
  link_map* map = nullptr;
  void* program = dlopen(nullptr, RTLD_LAZY | RTLD_NOLOAD);
  if (!program || dlinfo(program, RTLD_DI_LINKMAP, &map) != 0) map = nullptr;
  if (program) dlclose(program);
  for (link_map* l = map ? map->l_next : nullptr; l; l = l->l_next) {
    void* handle = l->l_name && *l->l_name ? dlopen(l->l_name, RTLD_LAZY | RTLD_NOLOAD) : nullptr;
    if (!handle) continue;
    void* f = dlsym(handle, name);
    dlclose(handle);
    link_map* owner = nullptr;
    Dl_info info;
    if (f && is_definition(f) && dladdr1(f, &info, reinterpret_cast<void**>(&owner), RTLD_DL_LINKMAP) && owner == l &&
        info.dli_fbase != self.dli_fbase) {
      return f;
    }
  }
  return nullptr;
}

// `scope`: RTLD_NEXT when preloaded (the definitions after this library's); RTLD_DEFAULT
// when attached (got_hooks.cpp: loaded late, outside the global scope, RTLD_NEXT would
// search only this library's own dependencies and find libc's, while the program may
// call another allocator's). A name not found there keeps what it had. Attached, a
// canonical PLT stub (is_definition) is a jump through a slot that now holds the tracer's
// function, which would call itself: the definition behind the stub is taken instead.
template <typename F>
void resolve_one(void* scope, F& slot, const char* name) {
  void* f = dlsym(scope, name);
  if (f && scope == RTLD_DEFAULT && !is_definition(f)) f = first_definition(name);
  if (f) slot = reinterpret_cast<F>(f);
}

void resolve_all(void* scope) {
#define MEMSTAGE_RESOLVE(field, symbol, attach, result, parameters) resolve_one(scope, g_real.field, symbol);
#define MEMSTAGE_NOTHING_TO_RESOLVE(symbol, attach)
  MEMSTAGE_HOOKED_FUNCTIONS(MEMSTAGE_RESOLVE, MEMSTAGE_NOTHING_TO_RESOLVE)
#undef MEMSTAGE_RESOLVE
#undef MEMSTAGE_NOTHING_TO_RESOLVE
  Dl_info info;
  g_glibc_allocator = g_real.malloc_usable_size &&
                      dladdr(reinterpret_cast<void*>(g_real.malloc_usable_size), &info) && info.dli_fname &&
                      strstr(info.dli_fname, "/libc.so");
}

void find_loader_text() {
  // From ld.so's own headers, mapped at its base: no loader lock (the first allocation
  // may come from inside the loader, holding it).
  const uint64_t base = getauxval(AT_BASE);
  if (!base) return;
  const auto* header = reinterpret_cast<const ElfW(Ehdr)*>(base);
  const auto* phdrs = reinterpret_cast<const ElfW(Phdr)*>(base + header->e_phoff);
  for (int i = 0; i < header->e_phnum; ++i) {
    const ElfW(Phdr)& ph = phdrs[i];
    if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
    g_loader_text_bytes = ph.p_memsz;
    g_loader_text_start = base + ph.p_vaddr;
    return;
  }
}

}  // namespace

bool resolve_slow() {
  int expected = 0;
  if (!g_resolve_state.compare_exchange_strong(expected, 1)) return false;
  resolve_all(RTLD_NEXT);
  find_loader_text();
  g_resolve_state.store(2, std::memory_order_release);
  return true;
}

void resolve_from_program() {
  resolve();
  resolve_all(RTLD_DEFAULT);
}

void* bootstrap_alloc(size_t size, size_t alignment) {
  if (alignment < 16) alignment = 16;
  const size_t total = size + alignment + 16;
  const size_t start = g_bootstrap_used.fetch_add(total, std::memory_order_relaxed);
  if (start + total > kBootstrapBytes) {
    errno = ENOMEM;
    return nullptr;
  }
  uintptr_t p = reinterpret_cast<uintptr_t>(g_bootstrap_arena + start) + 16;
  p = (p + alignment - 1) & ~(uintptr_t)(alignment - 1);
  reinterpret_cast<size_t*>(p)[-1] = size;
  return reinterpret_cast<void*>(p);
}


}  // namespace memstage::preload
