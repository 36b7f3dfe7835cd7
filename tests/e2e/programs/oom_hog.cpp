// e2e.oom_cgroup: mallocs and touches blocks of 10 MiB until the kernel's OOM killer ends it
// (run under a cgroup memory limit), printing nothing: the report must say who killed it.
#include <stdlib.h>
#include <string.h>

#include "e2e_common.h"

E2E_FRAME void* hold_ten_mib() {
  void* p = malloc(10u << 20);
  escape(p);
  if (p) memset(p, 1, 10u << 20);
  return p;
}

int main() {
  for (int i = 0; i < 100000; ++i) {
    if (!hold_ten_mib()) return 3;
  }
  return 0;
}
