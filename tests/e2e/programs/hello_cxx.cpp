// e2e.first_report: the C++ hello world whose first report must show no leak: what the C++
// runtime sets up (its emergency exception pool, iostreams) is held for the process's life.
#include <iostream>
#include <string>

int main() {
  const std::string greeting = "hello, world, from a string long enough to be on the heap";
  std::cout << greeting << std::endl;
  return 0;
}
