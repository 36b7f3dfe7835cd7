#include "harness/cli/progress_bar.h"

#include <unistd.h>

#include <cstdio>

namespace memstage::harness {

ProgressBar::ProgressBar(const char* label)
    : label_(label), enabled_(isatty(STDERR_FILENO)), start_(std::chrono::steady_clock::now()) {}

ProgressBar::~ProgressBar() {
  if (shown_) fprintf(stderr, "\r\033[K");
}

void ProgressBar::update(uint64_t done, uint64_t total) {
  if (!enabled_ || total == 0) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - start_ < std::chrono::seconds(1)) return;
  if (shown_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  shown_ = true;
  const double fraction = done > total ? 1.0 : static_cast<double>(done) / static_cast<double>(total);
  constexpr int kWidth = 30;
  char bar[kWidth + 1];
  for (int i = 0; i < kWidth; ++i) bar[i] = i < static_cast<int>(fraction * kWidth) ? '#' : '.';
  bar[kWidth] = '\0';
  fprintf(stderr, "\r%s [%s] %3.0f%%", label_, bar, 100 * fraction);
  fflush(stderr);
}

}  // namespace memstage::harness
