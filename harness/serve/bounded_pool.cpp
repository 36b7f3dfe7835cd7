#include "harness/serve/bounded_pool.h"

namespace memstage::harness {

BoundedPool::BoundedPool(size_t threads, size_t max_queued) : max_queued_(max_queued) {
  for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { work(); });
}

BoundedPool::~BoundedPool() { shutdown(); }

void BoundedPool::enqueue(std::function<void()> fn) {
  std::unique_lock lock(mutex_);
  has_room_.wait(lock, [this] { return queued_.size() < max_queued_ || stopping_; });
  queued_.push_back(std::move(fn));
  has_work_.notify_one();
}

void BoundedPool::shutdown() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  has_work_.notify_all();
  has_room_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void BoundedPool::work() {
  for (;;) {
    std::function<void()> fn;
    {
      std::unique_lock lock(mutex_);
      has_work_.wait(lock, [this] { return !queued_.empty() || stopping_; });
      if (queued_.empty()) return;  // stopping, nothing left
      fn = std::move(queued_.front());
      queued_.pop_front();
      has_room_.notify_one();
    }
    fn();  // one connection, closed at its end (its timeouts bound how long)
  }
}

}  // namespace memstage::harness
