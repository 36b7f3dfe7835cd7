#include "harness/files/output_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

namespace memstage::files {

namespace {

std::string error_text(int error) { return std::strerror(error); }

// A temporary name beside `path`, not in use: random, so that a name planted in advance
// cannot be guessed, and tried again if it exists.
int create_temporary(const std::string& path, mode_t mode, std::string& temporary) {
  std::random_device random;
  for (int attempt = 0; attempt < 100; ++attempt) {
    char suffix[32];
    snprintf(suffix, sizeof suffix, ".%08x.tmp", static_cast<unsigned>(random()));
    temporary = path + suffix;
    const int fd = open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

bool write_all(int fd, const std::string& content) {
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

void write_output_file(const std::string& path, const std::string& content, bool private_file) {
  std::string temporary;
  const int fd = create_temporary(path, private_file ? 0600 : 0644, temporary);
  if (fd < 0) throw OutputError("cannot write " + path + ": " + error_text(errno));
  // close() reports what a full disk or quota did to data written but not yet flushed
  // (NFS); its error counts as much as write()'s.
  const bool written = write_all(fd, content);
  int error = written ? 0 : errno;
  if (close(fd) != 0 && written) error = errno;
  if (error == 0 && rename(temporary.c_str(), path.c_str()) != 0) error = errno;
  if (error != 0) {
    unlink(temporary.c_str());
    throw OutputError("cannot write " + path + ": " + error_text(error));
  }
}

void create_output_folder(const std::string& path) {
  // "out/" would be looked up through a link named out: the name without its slashes.
  std::string dir = path;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (dir.empty()) return;
  struct stat st;
  if (lstat(dir.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode)) throw OutputError("output folder " + dir + " is a symbolic link: give the folder itself");
    if (!S_ISDIR(st.st_mode)) throw OutputError("cannot create output folder " + dir + ": a file of that name exists");
    return;
  }
  const size_t slash = dir.find_last_of('/');
  if (slash != std::string::npos && slash > 0) {
    // Parents may be links (/tmp -> /private/tmp): only the folder memstage writes into
    // must not be one.
    const std::string parent = dir.substr(0, slash);
    if (stat(parent.c_str(), &st) != 0) create_output_folder(parent);
  }
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    throw OutputError("cannot create output folder " + dir + ": " + error_text(errno));
  }
  if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw OutputError("cannot create output folder " + dir + ": it is not a folder");
  }
}

}  // namespace memstage::files
