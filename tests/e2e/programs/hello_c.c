/* e2e.first_report: the C hello world whose first report must show no leak: stdout's
   buffer is the C library's, held for the process's life. */
#include <stdio.h>

int main(void) {
  printf("hello, world\n");
  return 0;
}
