#include "profiler/trace/pending_chunks.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "profiler/trace/trace_format.h"

namespace memstage::trace {
namespace {

// Alive: kill(pid, 0) reaches it and it is not a zombie (a parent that never reaps, such
// as a container's first process, keeps its dead children's pids taken).
bool process_alive(uint64_t pid) {
  if (pid == 0 || pid > INT32_MAX) return false;
  if (kill(static_cast<pid_t>(pid), 0) != 0 && errno != EPERM) return false;
  char path[64];
  snprintf(path, sizeof(path), "/proc/%llu/stat", static_cast<unsigned long long>(pid));
  FILE* f = fopen(path, "re");
  if (!f) return true;
  char line[512] = {};
  const size_t n = fread(line, 1, sizeof(line) - 1, f);
  fclose(f);
  // "pid (comm) S ...": the state follows the last ')', as comm may hold one.
  const char* close = nullptr;
  for (size_t i = 0; i < n; ++i) close = line[i] == ')' ? line + i : close;
  return !(close && close + 2 < line + n && (close[2] == 'Z' || close[2] == 'X'));
}

struct Mapped {
  void* address = MAP_FAILED;
  size_t bytes = 0;
  ~Mapped() {
    if (address != MAP_FAILED) munmap(address, bytes);
  }
};

// Compresses `raw` as the tracer does (level 1, with the frame's checksum) and writes it
// as one chunk at `offset`; the offset after it, or 0 on failure.
uint64_t write_chunk_at(int fd, uint64_t offset, const uint8_t* raw, size_t raw_bytes) {
  std::vector<uint8_t> chunk(sizeof(ChunkHeader) + ZSTD_compressBound(raw_bytes));
  std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)> zstd(ZSTD_createCCtx(), ZSTD_freeCCtx);
  if (!zstd) return 0;
  ZSTD_CCtx_setParameter(zstd.get(), ZSTD_c_compressionLevel, 1);
  ZSTD_CCtx_setParameter(zstd.get(), ZSTD_c_checksumFlag, 1);
  const size_t n = ZSTD_compress2(zstd.get(), chunk.data() + sizeof(ChunkHeader), chunk.size() - sizeof(ChunkHeader),
                                  raw, raw_bytes);
  if (ZSTD_isError(n)) return 0;
  const ChunkHeader header{kChunkMagic, static_cast<uint32_t>(n), static_cast<uint32_t>(raw_bytes)};
  memcpy(chunk.data(), &header, sizeof(header));
  const size_t total = sizeof(header) + n;
  for (size_t done = 0; done < total;) {
    const ssize_t r = pwrite(fd, chunk.data() + done, total - done, static_cast<off_t>(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return 0;
    done += static_cast<size_t>(r);
  }
  return offset + total;
}

// The buffers holding chunks not written whole, in chunk order: from the first not
// written on, without a gap (a chunk lost in between would leave the rest unreadable).
std::vector<const PendingBuffer*> unwritten_buffers(const PendingHeader& header) {
  std::vector<const PendingBuffer*> buffers;
  const uint64_t written = header.chunks_written.load();
  for (const PendingBuffer& b : header.buffers) {
    const uint64_t plus_one = b.chunk_plus_one.load();
    if (plus_one > written && b.bytes.load() > 0 && b.bytes.load() <= header.buffer_bytes) buffers.push_back(&b);
  }
  std::sort(buffers.begin(), buffers.end(),
            [](const PendingBuffer* a, const PendingBuffer* b) { return a->chunk_plus_one < b->chunk_plus_one; });
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (buffers[i]->chunk_plus_one.load() != written + 1 + i) {
      buffers.resize(i);
      break;
    }
  }
  return buffers;
}

// The end of the whole chunk of `raw_bytes` at `offset`, or 0 where there is none.
uint64_t whole_chunk_end(int fd, uint64_t offset, uint64_t raw_bytes) {
  struct stat st{};
  ChunkHeader header{};
  if (fstat(fd, &st) != 0 ||
      pread(fd, &header, sizeof(header), static_cast<off_t>(offset)) != static_cast<ssize_t>(sizeof(header))) {
    return 0;
  }
  const uint64_t end = offset + sizeof(header) + header.compressed_bytes;
  const bool whole = header.magic == kChunkMagic && header.raw_bytes == raw_bytes && end <= static_cast<uint64_t>(st.st_size);
  return whole ? end : 0;
}

}  // namespace

std::string shared_memory_pending_prefix(const std::string& folder) {
  char path[4400];
  if (!shared_memory_pending_path((folder + "/x").c_str(), path, sizeof(path))) return {};
  const std::string name = path;
  return name.substr(0, name.size() - strlen("x") - strlen(kPendingSuffix));
}

PendingDrain drain_pending_chunks(const std::string& trace_path) {
  PendingDrain result;
  char shared[4400];
  std::string pending_path = trace_path + kPendingSuffix;
  int pending_fd = -1;
  if (shared_memory_pending_path(trace_path.c_str(), shared, sizeof(shared))) {
    pending_fd = open(shared, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (pending_fd >= 0) pending_path = shared;
  }
  if (pending_fd < 0) pending_fd = open(pending_path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (pending_fd < 0) return result;
  result.found = true;
  struct stat st{};
  Mapped map;
  if (fstat(pending_fd, &st) == 0 && static_cast<size_t>(st.st_size) >= kPendingHeaderBytes) {
    map.bytes = static_cast<size_t>(st.st_size);
    map.address = mmap(nullptr, map.bytes, PROT_READ, MAP_SHARED, pending_fd, 0);
  }
  close(pending_fd);
  if (map.address == MAP_FAILED) return result;
  const auto& header = *static_cast<const PendingHeader*>(map.address);
  if (header.magic != kPendingMagic || map.bytes < pending_file_bytes(header.buffer_bytes)) return result;
  if (process_alive(header.pid)) {
    result.owner_alive = true;
    return result;
  }
  const int trace_fd = open(trace_path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (trace_fd < 0) return result;
  uint64_t offset = header.written_bytes.load();
  bool ok = true;
  const auto* base = static_cast<const uint8_t*>(map.address) + kPendingHeaderBytes;
  for (const PendingBuffer* b : unwritten_buffers(header)) {
    // Written whole just before the death and not yet counted: kept as it is (a reader
    // following the trace may have read it already).
    if (const uint64_t after = whole_chunk_end(trace_fd, offset, b->bytes.load())) {
      offset = after;
      continue;
    }
    // Otherwise it is written there, over a chunk the death cut (cut away below).
    const uint8_t* raw = base + static_cast<size_t>(b - header.buffers) * header.buffer_bytes;
    offset = write_chunk_at(trace_fd, offset, raw, b->bytes.load());
    ok = offset != 0;
    if (!ok) break;
    ++result.chunks;
    result.raw_bytes += b->bytes.load();
  }
  // A chunk cut by the death after the last whole one goes (never lengthening the file).
  struct stat trace_st{};
  if (ok && fstat(trace_fd, &trace_st) == 0 && static_cast<uint64_t>(trace_st.st_size) > offset) {
    ok = ftruncate(trace_fd, static_cast<off_t>(offset)) == 0;
  }
  close(trace_fd);
  if (ok) unlink(pending_path.c_str());
  return result;
}

uint32_t drain_pending_in_dir(const std::string& dir) {
  uint32_t chunks = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("trace.") && name.ends_with(".mst")) chunks += drain_pending_chunks(entry.path().string()).chunks;
  }
  return chunks;
}

}  // namespace memstage::trace
