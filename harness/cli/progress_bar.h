// A progress bar on stderr for analyses that take more than a second, on a terminal only.
#pragma once

#include <chrono>
#include <cstdint>

namespace memstage::harness {

class ProgressBar {
 public:
  explicit ProgressBar(const char* label);
  ~ProgressBar();
  void update(uint64_t done, uint64_t total);

 private:
  const char* label_;
  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace memstage::harness
