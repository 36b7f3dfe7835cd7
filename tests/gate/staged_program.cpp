// gate.e2e's program: known stages and sizes, so budgets can sit clearly under or over.
//   staged_program LOAD_MIB EXIT_CODE
//   load        LOAD_MIB allocated, touched (so it is resident) and held until the end
//   train/epoch twice: 1 MiB allocated and freed
//   8 x 512 bytes leaked; exits with EXIT_CODE
#include <memstage/stage.h>

#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  const size_t load_bytes = static_cast<size_t>(argc > 1 ? atoi(argv[1]) : 8) << 20;
  const int exit_code = argc > 2 ? atoi(argv[2]) : 0;
  char* data = nullptr;
  {
    memstage::Stage stage{"load"};
    data = static_cast<char*>(malloc(load_bytes));
    memset(data, 1, load_bytes);
  }
  {
    memstage::Stage stage{"train"};
    for (int epoch = 0; epoch < 2; ++epoch) {
      memstage::Stage epoch_stage{"epoch"};
      char* batch = static_cast<char*>(malloc(1 << 20));
      memset(batch, 2, 1 << 20);
      free(batch);
    }
  }
  for (int i = 0; i < 8; ++i) {
    volatile char* leak = static_cast<char*>(malloc(512));
    leak[0] = 1;
  }
  free(data);
  return exit_code;
}
