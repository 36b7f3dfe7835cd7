// e2e.cxx_local's module: operator new and delete from a C++ module loaded RTLD_LOCAL
// by a C program. Keeps (leaks) a 234567-byte array; a vector comes and goes.
#include <vector>

#include "e2e_common.h"

extern "C" E2E_FRAME void* cxx_module_new() {
  auto* kept = new char[234567];
  memset(kept, 1, 234567);
  auto* temporary = new std::vector<int>(1000, 7);
  escape(temporary->data());
  delete temporary;
  escape(kept);
  return kept;
}
