// The server's connections, handled by a few threads with a short queue: when both are
// full, the accepting thread waits (the kernel's backlog holds, then refuses, the next
// connections), so no number of clients grows memstage's threads or memory.
// cpp-httplib 0.11's own ThreadPool queues every accepted connection without bound.
#pragma once

#include <httplib.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace memstage::harness {

class BoundedPool final : public httplib::TaskQueue {
 public:
  BoundedPool(size_t threads, size_t max_queued);
  ~BoundedPool() override;
  // Waits while `max_queued` connections already wait for a thread.
  void enqueue(std::function<void()> fn) override;
  // Runs what is queued, then ends the threads.
  void shutdown() override;

 private:
  void work();

  const size_t max_queued_;
  std::mutex mutex_;
  std::condition_variable has_work_, has_room_;
  std::deque<std::function<void()>> queued_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace memstage::harness
