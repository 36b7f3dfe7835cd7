#include "trainer/line_reader.h"

#include <sys/stat.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>

#include "trainer/error.h"

namespace trainer {

LineReader::LineReader(std::string path, std::size_t buffer_bytes)
    : path_(std::move(path)), buffer_(buffer_bytes) {
  struct stat info {};
  if (::stat(path_.c_str(), &info) != 0) {
    throw Error(path_ + ": " + std::strerror(errno));
  }
  if (S_ISDIR(info.st_mode)) throw Error(path_ + ": is a directory");
  gzFile file = gzopen(path_.c_str(), "rb");
  if (file == nullptr) throw Error(path_ + ": cannot open: " + std::strerror(errno));
  // zlib's own input buffer; the default 8 KiB costs a read() call per 8 KiB.
  gzbuffer(file, 128 * 1024);
  file_ = file;
}

LineReader::LineReader(InMemory, std::string name, std::string_view text)
    : path_(std::move(name)), memory_(text) {
  eof_ = true;  // nothing to fill(): the whole text is the buffer
}

LineReader::~LineReader() {
  if (file_ != nullptr) gzclose(static_cast<gzFile>(file_));
}

bool LineReader::fill() {
  if (eof_) return false;
  // Keep the unread tail at the front, then read after it.
  if (begin_ > 0) {
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  const auto room = static_cast<unsigned>(buffer_.size() - end_);
  const int got = gzread(static_cast<gzFile>(file_), buffer_.data() + end_, room);
  if (got < 0) {
    int code = 0;
    const char* message = gzerror(static_cast<gzFile>(file_), &code);
    throw Error(path_ + ": read error: " + (message != nullptr ? message : "unknown"));
  }
  if (got == 0) {
    eof_ = true;
    return false;
  }
  end_ += static_cast<std::size_t>(got);
  return true;
}

bool LineReader::next(std::string& line) {
  line.clear();
  if (file_ == nullptr) return next_in_memory(line);
  bool any = false;
  for (;;) {
    const char* start = buffer_.data() + begin_;
    const auto* newline = static_cast<const char*>(std::memchr(start, '\n', end_ - begin_));
    if (newline != nullptr) {
      const auto length = static_cast<std::size_t>(newline - start);
      line.append(start, length);
      begin_ += length + 1;
      bytes_read_ += length + 1;
      break;
    }
    // No newline in what is buffered: take it all and read more.
    if (end_ > begin_) {
      line.append(start, end_ - begin_);
      bytes_read_ += end_ - begin_;
      begin_ = end_;
      any = true;
    }
    if (!fill()) {
      if (!any) return false;
      break;  // last line without a final newline
    }
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  ++line_number_;
  return true;
}

bool LineReader::next_in_memory(std::string& line) {
  if (begin_ >= memory_.size()) return false;
  std::size_t stop = memory_.find('\n', begin_);
  const std::size_t next = stop == std::string_view::npos ? memory_.size() : stop + 1;
  if (stop == std::string_view::npos) stop = memory_.size();
  line.assign(memory_.substr(begin_, stop - begin_));
  bytes_read_ += next - begin_;
  begin_ = next;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  ++line_number_;
  return true;
}

void LineReader::rewind() {
  if (file_ == nullptr) {
    begin_ = 0;
    line_number_ = 0;
    bytes_read_ = 0;
    return;
  }
  if (gzrewind(static_cast<gzFile>(file_)) != 0) throw Error(path_ + ": cannot rewind");
  begin_ = end_ = 0;
  eof_ = false;
  line_number_ = 0;
  bytes_read_ = 0;
}

}  // namespace trainer
