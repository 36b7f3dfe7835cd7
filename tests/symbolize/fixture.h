// Functions in small shared libraries built for the symbolizer tests. Each returns a
// return address that lies inside itself and reports, through its int* parameters, the
// source lines (__LINE__) the symbolizer must find for it.
#pragma once

namespace memstage_fixture {

// Built with -g -O2 (fixture_debug.cpp).
void* plain_function(int* call_line);
// inlining_caller -> (inlined) middle_inline -> (inlined) innermost_inline -> call.
void* inlining_caller(int* innermost_line, int* middle_call_line, int* caller_call_line);
void* member_of_class_in_anonymous_namespace(int* call_line);  // calls Widget::method
void* function_with_lambda(int* call_line);  // the address lies in the lambda
template <typename T>
void* templated_function(T value, int* call_line);
extern template void* templated_function<long>(long value, int* call_line);

}  // namespace memstage_fixture

namespace memstage_fixture_nodebug {

// Built with -g0 -O2 (fixture_nodebug.cpp): only the ELF symbol table names it.
void* function_without_debug_info();

}  // namespace memstage_fixture_nodebug

// Built with -g -O2, its DWARF then moved to a separate file found by .gnu_debuglink
// (fixture_separate_debug.cpp). extern "C": a name the DWARF gives without demangling.
extern "C" void* memstage_fixture_separate_debug(int* call_line);
