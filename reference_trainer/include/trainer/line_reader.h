// Reads a text file line by line, plain or gzip-compressed (zlib detects which), through
// one fixed buffer: after the longest line has been seen, reading makes no allocation.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace trainer {

class LineReader {
 public:
  // Throws Error naming the file when it is missing, a directory or unreadable.
  explicit LineReader(std::string path, std::size_t buffer_bytes = 256 * 1024);
  // Lines of `text`, which must outlive the reader; `name` stands for the file in messages.
  struct InMemory {};
  LineReader(InMemory, std::string name, std::string_view text);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // Puts the next line, without its "\n" or "\r\n", into `line` (reusing its capacity).
  // Returns false at the end of the file.
  bool next(std::string& line);

  // Back to the first line, keeping every buffer (epochs re-read the file this way).
  void rewind();

  // 1-based number of the line last returned by next(); 0 before the first.
  std::uint64_t line_number() const { return line_number_; }
  // Uncompressed bytes consumed so far (for progress and throughput).
  std::uint64_t bytes_read() const { return bytes_read_; }
  const std::string& path() const { return path_; }

 private:
  bool fill();
  bool next_in_memory(std::string& line);

  std::string path_;
  void* file_ = nullptr;
  std::string_view memory_;  // the text, when reading from memory (file_ is then null)  // gzFile; kept opaque so that users need not include zlib.h
  std::vector<char> buffer_;
  std::size_t begin_ = 0;  // next unread byte in buffer_
  std::size_t end_ = 0;    // one past the last valid byte in buffer_
  bool eof_ = false;
  std::uint64_t line_number_ = 0;
  std::uint64_t bytes_read_ = 0;
};

}  // namespace trainer
