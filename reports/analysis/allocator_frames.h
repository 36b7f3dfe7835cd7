// Is a frame allocation plumbing (the allocator, or the C and C++ runtimes allocating on
// the program's behalf) rather than the program's own code? The one answer: the analysis
// sets Frame::allocator from it, and every renderer (the text summary, the page, the pprof
// export) and every test reads that flag, never a list of its own.
#pragma once

#include <string_view>

namespace memstage::reports {

namespace allocator_frames_detail {

inline std::string_view basename(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// The qualified name of a demangled function: without the return type that function
// templates are demangled with ("void std::vector<int>::_M_realloc_insert<int>(...)"), and
// without the parameters.
inline std::string_view qualified_name(std::string_view function) {
  int depth = 0;  // of template arguments
  size_t start = 0;
  for (size_t i = 0; i < function.size(); ++i) {
    const char c = function[i];
    if (c == '<') {
      ++depth;
    } else if (c == '>' && depth > 0) {
      --depth;
    } else if (depth == 0 && c == ' ' && !function.substr(start, i - start).ends_with("operator")) {
      start = i + 1;  // what came before was the return type ("operator std::string" is one name)
    } else if (depth == 0 && c == '(' && !function.substr(i).starts_with("(anonymous namespace)")) {
      return function.substr(start, i - start);
    }
  }
  return function.substr(start);
}

}  // namespace allocator_frames_detail

// `function` demangled (may be empty), `module` the path of the object it is in.
inline bool is_allocation_plumbing(std::string_view function, std::string_view module) {
  // The allocator's entry points, wherever they are linked from.
  for (std::string_view name : {"malloc", "calloc", "realloc", "reallocarray", "free", "posix_memalign",
                                "aligned_alloc", "memalign", "valloc", "pvalloc", "mmap", "mmap64", "mremap"}) {
    if (function == name) return true;
  }
  // operator new and new[] (any overload); the C++ standard library's templates, which are
  // compiled into the program (std::vector<double>::_M_realloc_insert,
  // std::__new_allocator<double>::allocate, std::__cxx11::basic_string::_M_construct);
  // glibc's internal names (a static program has no libc.so to tell them by).
  if (function.starts_with("operator new")) return true;
  const std::string_view name = allocator_frames_detail::qualified_name(function);
  for (std::string_view prefix : {"std::", "__gnu_cxx::", "__libc_"}) {
    if (name.starts_with(prefix)) return true;
  }
  // What the C library, the C++ runtime, an allocator library or the tracer does is theirs
  // (strdup, fopen's buffer, getline), whatever the function is called.
  const std::string_view file = allocator_frames_detail::basename(module);
  for (std::string_view library : {"libc.so", "libstdc++.so", "libjemalloc.so", "libtcmalloc", "libmimalloc.so",
                                   "libmemstage_preload.so"}) {
    if (file.starts_with(library)) return true;
  }
  return false;
}

}  // namespace memstage::reports
