// e2e.address_space: under a 1 GB address-space limit (as `ulimit -v` or `prlimit --as`
// set it), allocates 10 MB blocks until malloc fails, then frees them. The tracer's own
// mappings count against the same limit: they must be small, so that the program gets
// about as many blocks traced as untraced. Prints only what does not depend on the count;
// the count goes to the truth file.
// Usage: address_space TRUTH
#include <sys/resource.h>

#include "e2e_common.h"

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  constexpr rlim_t kLimitBytes = 1'000'000'000;
  constexpr size_t kBlockBytes = 10'000'000;
  const rlimit limit{kLimitBytes, kLimitBytes};
  if (setrlimit(RLIMIT_AS, &limit) != 0) return 3;
  static void* blocks[200];
  int count = 0;
  while (count < 200) {
    void* p = malloc(kBlockBytes);
    if (!p) break;
    escape(p);
    blocks[count++] = p;
  }
  for (int i = 0; i < count; ++i) free(blocks[i]);
  printf("malloc failed under the limit after at least 50 blocks: %s\n", count >= 50 ? "yes" : "no");
  Truth truth;
  truth.add("blocks", count);
  truth.write_to(argv[1]);
  return count >= 50 ? 0 : 1;
}
