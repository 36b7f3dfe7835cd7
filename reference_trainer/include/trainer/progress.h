// A one-line progress bar on stderr (epoch, lines/s, loss, current RSS), drawn only when
// stderr is a terminal and at most a few times a second. Formats into a fixed buffer:
// drawing allocates nothing, so the train stage stays allocation-free with it on.
#pragma once

#include <chrono>
#include <cstdint>

namespace trainer {

// Resident set size of this process now, from /proc/self/statm; 0 when unreadable.
std::uint64_t current_rss_bytes();
// Peak resident set size of this process so far (getrusage), in bytes.
std::uint64_t peak_rss_bytes();

class Progress {
 public:
  // enabled: draw at all (the caller passes isatty(stderr) && !quiet).
  Progress(bool enabled, std::uint64_t lines_per_epoch, unsigned epochs);
  // Lines done in this epoch so far and the mean loss over them.
  void update(unsigned epoch, std::uint64_t lines_done, double mean_loss, bool force = false);
  // Ends the line (so what follows starts on a fresh one).
  void finish();

 private:
  bool enabled_;
  bool drawn_ = false;
  std::uint64_t lines_per_epoch_;
  unsigned epochs_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
  std::uint64_t lines_before_epoch_ = 0;
  unsigned current_epoch_ = 0;
  std::uint64_t last_lines_ = 0;
};

}  // namespace trainer
