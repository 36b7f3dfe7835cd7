#include "trainer/progress.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>

namespace trainer {

std::uint64_t current_rss_bytes() {
  // statm: size resident shared text lib data dt, in pages. fopen would allocate a FILE;
  // read() into a stack buffer does not.
  static const long page_bytes = ::sysconf(_SC_PAGESIZE);
  char text[128];
  const int fd = ::open("/proc/self/statm", 0);
  if (fd < 0) return 0;
  const ssize_t got = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  if (got <= 0) return 0;
  text[got] = '\0';
  unsigned long long size_pages = 0;
  unsigned long long resident_pages = 0;
  if (std::sscanf(text, "%llu %llu", &size_pages, &resident_pages) != 2) return 0;
  return resident_pages * static_cast<std::uint64_t>(page_bytes);
}

std::uint64_t peak_rss_bytes() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;  // ru_maxrss is in KiB on Linux
}

Progress::Progress(bool enabled, std::uint64_t lines_per_epoch, unsigned epochs)
    : enabled_(enabled),
      lines_per_epoch_(lines_per_epoch),
      epochs_(epochs),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

void Progress::update(unsigned epoch, std::uint64_t lines_done, double mean_loss, bool force) {
  if (!enabled_) return;
  if (epoch != current_epoch_) {
    lines_before_epoch_ += last_lines_;
    current_epoch_ = epoch;
  }
  last_lines_ = lines_done;
  const auto now = std::chrono::steady_clock::now();
  if (!force && now - last_draw_ < std::chrono::milliseconds(200)) return;
  last_draw_ = now;
  const double elapsed_s = std::chrono::duration<double>(now - start_).count();
  const double lines_per_s =
      elapsed_s > 0 ? static_cast<double>(lines_before_epoch_ + lines_done) / elapsed_s : 0.0;
  constexpr int kBarWidth = 24;
  const double fraction =
      lines_per_epoch_ == 0 ? 0.0
                            : static_cast<double>(lines_done) / static_cast<double>(lines_per_epoch_);
  const int filled = static_cast<int>(fraction > 1 ? kBarWidth : fraction * kBarWidth);
  char bar[kBarWidth + 1];
  for (int i = 0; i < kBarWidth; ++i) bar[i] = i < filled ? '#' : '.';
  bar[kBarWidth] = '\0';
  char line[200];
  std::snprintf(line, sizeof line, "\repoch %u/%u [%s] %5.1f%% %9.0f lines/s  loss %.4f  rss %.0f MiB ",
                epoch, epochs_, bar, 100.0 * (fraction > 1 ? 1.0 : fraction), lines_per_s,
                mean_loss, static_cast<double>(current_rss_bytes()) / (1024.0 * 1024.0));
  std::fputs(line, stderr);
  drawn_ = true;
}

void Progress::finish() {
  if (enabled_ && drawn_) std::fputs("\n", stderr);
  drawn_ = false;
}

}  // namespace trainer
