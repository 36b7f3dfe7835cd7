#include "harness/files/input_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace memstage::files {

namespace {

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  return "not a regular file";
}

// Closes the descriptor on every way out, errno kept for the message.
struct Descriptor {
  int fd;
  ~Descriptor() {
    if (fd >= 0) {
      const int saved = errno;
      close(fd);
      errno = saved;
    }
  }
};

}  // namespace

std::string read_input_file(const std::string& path, const std::string& what, size_t max_bytes) {
  const auto fail = [&](const std::string& why) { return InputError("cannot read " + what + " " + path + ": " + why); };
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer; fstat then refuses it.
  Descriptor file{open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)};
  if (file.fd < 0) throw fail(std::strerror(errno));
  struct stat st;
  if (fstat(file.fd, &st) != 0) throw fail(std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw fail(std::string(kind_of(st.st_mode)) + ", not a regular file");
  const auto too_large = [&] {
    return fail("larger than " + std::to_string(max_bytes >> 20) + " MiB, more than a memstage " + what + " can be");
  };
  if (static_cast<uint64_t>(st.st_size) > max_bytes) throw too_large();
  std::string text(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  // Read to the end, not to the size seen: a file still being written may have grown.
  for (;;) {
    if (done == text.size()) {
      if (text.size() > max_bytes) throw too_large();
      text.resize(std::min(max_bytes + 1, std::max<size_t>(4096, text.size() * 2)));
    }
    const ssize_t n = read(file.fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw fail(std::strerror(errno));
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  text.resize(done);
  return text;
}

}  // namespace memstage::files
