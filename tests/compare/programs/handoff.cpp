// A multi-threaded workload for `memstage replay` against `memstage compare`: producer threads
// allocate messages of variable size (256 B–64 KiB, log-uniform), write them whole and hand
// them through a bounded queue to consumer threads, which free them: every block freed by
// another thread than its allocator's, the allocators' cross-thread paths (glibc's arenas,
// jemalloc's and tcmalloc's caches, mimalloc's delayed frees). One message in kPinEvery
// outlives the run's main stage (a consumer keeps it), to fragment. Sizes are fixed by seed;
// the order in which the threads interleave is the scheduler's.
//   handoff [MESSAGES_PER_PRODUCER (30000)] [PRODUCERS (4)] [CONSUMERS (2)]
#include <memstage/stage.h>

#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

namespace {

constexpr size_t kQueueMessages = 1000;  // what the producers may run ahead of the consumers
constexpr size_t kPinEvery = 64;

struct Message {
  unsigned char* bytes;
  size_t size;
};

class Queue {
 public:
  void push(Message m) {
    std::unique_lock<std::mutex> lock(mutex_);
    not_full_.wait(lock, [this] { return messages_.size() < kQueueMessages; });
    messages_.push_back(m);
    not_empty_.notify_one();
  }
  // False once every producer is done and the queue is empty.
  bool pop(Message& m) {
    std::unique_lock<std::mutex> lock(mutex_);
    not_empty_.wait(lock, [this] { return !messages_.empty() || producers_left_ == 0; });
    if (messages_.empty()) return false;
    m = messages_.front();
    messages_.pop_front();
    not_full_.notify_one();
    return true;
  }
  void producer_done() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (--producers_left_ == 0) not_empty_.notify_all();
  }
  explicit Queue(int producers) : producers_left_(producers) {}

 private:
  std::mutex mutex_;
  std::condition_variable not_full_, not_empty_;
  std::deque<Message> messages_;
  int producers_left_;
};

void produce(Queue& queue, size_t messages, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> log_size(std::log(256.0), std::log(64.0 * 1024));
  for (size_t i = 0; i < messages; ++i) {
    const size_t size = static_cast<size_t>(std::exp(log_size(rng)));
    auto* bytes = static_cast<unsigned char*>(malloc(size));
    memset(bytes, static_cast<int>(i), size);
    queue.push(Message{bytes, size});
  }
  queue.producer_done();
}

// Frees what it takes, but one message in kPinEvery, which it keeps in `pinned`.
void consume(Queue& queue, std::vector<Message>& pinned, uint64_t& checksum) {
  Message m;
  for (size_t taken = 0; queue.pop(m); ++taken) {
    checksum += m.bytes[m.size - 1];
    if (taken % kPinEvery == 0) {
      pinned.push_back(m);
    } else {
      free(m.bytes);
    }
  }
}

size_t argument(int argc, char** argv, int i, size_t fallback) {
  if (argc <= i) return fallback;
  char* end = nullptr;
  const unsigned long long value = strtoull(argv[i], &end, 10);
  if (*end != '\0' || value == 0) {
    fprintf(stderr, "handoff: not a positive count: %s\n", argv[i]);
    exit(2);
  }
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t messages = argument(argc, argv, 1, 30000);
  const size_t producers = argument(argc, argv, 2, 4), consumers = argument(argc, argv, 3, 2);
  Queue queue(static_cast<int>(producers));
  std::vector<std::vector<Message>> pinned(consumers);
  std::vector<uint64_t> checksums(consumers);
  {
    memstage::Stage stage{"handoff"};
    std::vector<std::thread> threads;
    for (size_t p = 0; p < producers; ++p) threads.emplace_back(produce, std::ref(queue), messages, 1000 + p);
    for (size_t c = 0; c < consumers; ++c) {
      threads.emplace_back(consume, std::ref(queue), std::ref(pinned[c]), std::ref(checksums[c]));
    }
    for (std::thread& t : threads) t.join();
  }
  uint64_t checksum = 0;
  {
    memstage::Stage stage{"drain"};
    for (size_t c = 0; c < consumers; ++c) {
      checksum += checksums[c];
      for (const Message& m : pinned[c]) free(m.bytes);
    }
  }
  printf("%llu\n", static_cast<unsigned long long>(checksum));
  return 0;
}
