/* e2e.attach: a statically linked program (no dynamic loader) that `memstage attach` must
 * refuse with a one-line error. It sleeps until killed, at most 60 s. */
#include <unistd.h>

int main(void) {
  for (int i = 0; i < 600; ++i) usleep(100000);
  return 0;
}
