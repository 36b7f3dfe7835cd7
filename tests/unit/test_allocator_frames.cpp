// The one classifier of allocation plumbing (reports/analysis/allocator_frames.h): what
// the analysis flags in Frame::allocator and every renderer and test reads.
#include <catch2/catch.hpp>

#include "reports/analysis/allocator_frames.h"

using memstage::reports::is_allocation_plumbing;

namespace {
const char* const kProgram = "/opt/app/bin/app";
const char* const kLibc = "/usr/lib/x86_64-linux-gnu/libc.so.6";
const char* const kLibstdcxx = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6";
}  // namespace

TEST_CASE("allocation plumbing: the allocator's entry points, wherever they are") {
  for (const char* f : {"malloc", "calloc", "realloc", "free", "posix_memalign", "aligned_alloc", "mmap", "mremap"}) {
    CHECK(is_allocation_plumbing(f, kLibc));
    CHECK(is_allocation_plumbing(f, kProgram));  // a program with its own malloc is still the allocator
  }
  CHECK(is_allocation_plumbing("operator new(unsigned long)", kLibstdcxx));
  CHECK(is_allocation_plumbing("operator new[](unsigned long, std::align_val_t)", "/usr/lib/libjemalloc.so.2"));
  CHECK(is_allocation_plumbing("__libc_malloc", "/opt/static/app"));
}

TEST_CASE("allocation plumbing: the C++ standard library compiled into the program") {
  CHECK(is_allocation_plumbing("std::__new_allocator<double>::allocate(unsigned long, void const*)", kProgram));
  CHECK(is_allocation_plumbing(
      "void std::vector<double, std::allocator<double> >::_M_realloc_insert<double const&>(__gnu_cxx::__normal_"
      "iterator<double*, std::vector<double, std::allocator<double> > >, double const&)",
      kProgram));  // a function template: demangled with its return type first
  CHECK(is_allocation_plumbing("std::vector<double, std::allocator<double> >::_M_default_append(unsigned long)",
                               kProgram));
  CHECK(is_allocation_plumbing(
      "void std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >::_M_construct<char "
      "const*>(char const*, char const*, std::forward_iterator_tag)",
      kLibstdcxx));  // libstdc++'s own instance
  CHECK(is_allocation_plumbing("__gnu_cxx::new_allocator<int>::allocate(unsigned long, void const*)", kProgram));
}

TEST_CASE("allocation plumbing: the C runtime and allocator libraries, whatever the function") {
  CHECK(is_allocation_plumbing("strdup", kLibc));
  CHECK(is_allocation_plumbing("_IO_file_doallocate", kLibc));
  CHECK(is_allocation_plumbing("", kLibc));
  CHECK(is_allocation_plumbing("je_malloc_default", "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"));
  CHECK(is_allocation_plumbing("tc_new", "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"));
}

TEST_CASE("the program's own frames are not plumbing") {
  CHECK_FALSE(is_allocation_plumbing("build_matrix(unsigned long)", kProgram));
  CHECK_FALSE(is_allocation_plumbing("main", kProgram));
  CHECK_FALSE(is_allocation_plumbing("Matrix::resize(unsigned long)", "/opt/app/lib/libmatrix.so"));
  CHECK_FALSE(is_allocation_plumbing("", kProgram));  // unsymbolized program code
  CHECK_FALSE(is_allocation_plumbing("mallocator_init", kProgram));  // names are matched whole
  CHECK_FALSE(is_allocation_plumbing("stdio_wrapper", kProgram));
  // The standard library in a return type or in the arguments does not make it the library's.
  CHECK_FALSE(is_allocation_plumbing("std::vector<int, std::allocator<int> > make_rows<int>(unsigned long)", kProgram));
  CHECK_FALSE(is_allocation_plumbing("load(std::__cxx11::basic_string<char> const&)", kProgram));
  CHECK_FALSE(is_allocation_plumbing("Table::operator std::__cxx11::basic_string<char>() const", kProgram));
  CHECK_FALSE(is_allocation_plumbing("(anonymous namespace)::fill(std::vector<int>&)", kProgram));
  CHECK_FALSE(is_allocation_plumbing("PyList_Append", "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0"));
  CHECK_FALSE(is_allocation_plumbing("<module>", "/opt/app/train.py"));
  // A library whose name begins like the C library's is not it.
  CHECK_FALSE(is_allocation_plumbing("compress", "/usr/lib/x86_64-linux-gnu/libc++abi-helper.so"));
}
