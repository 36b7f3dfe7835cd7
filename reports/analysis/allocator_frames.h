// Which symbolized functions are allocation plumbing rather than the program's own code.
#pragma once

#include <string_view>

namespace memstage::reports {

inline bool is_allocator_function(std::string_view f) {
  for (std::string_view name : {"malloc", "calloc", "realloc", "reallocarray", "posix_memalign", "aligned_alloc",
                                "memalign", "valloc", "pvalloc", "__libc_malloc", "__libc_calloc", "__libc_realloc",
                                "__libc_memalign", "mmap", "mmap64", "mremap"}) {
    if (f == name) return true;
  }
  for (std::string_view prefix : {"operator new", "std::__new_allocator<", "__gnu_cxx::new_allocator<",
                                  "std::allocator<", "std::allocator_traits<", "std::_Vector_base<",
                                  "std::__allocated_ptr<", "std::__allocate_guarded<"}) {
    if (f.starts_with(prefix)) return true;
  }
  return false;
}

}  // namespace memstage::reports
