#include "harness/files/output_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
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

bool is_stream(mode_t mode) { return S_ISCHR(mode) || S_ISBLK(mode) || S_ISFIFO(mode) || S_ISSOCK(mode); }

// "/dev/stdout", "/dev/fd/3", "/proc/self/fd/1": a descriptor of this process, by name. It is
// written as it is, at its own offset: replacing what such a name links to would replace
// the shell's redirection target, or /dev/stdout itself.
std::optional<int> open_descriptor_named(const std::string& path) {
  if (path == "/dev/stdout") return STDOUT_FILENO;
  if (path == "/dev/stderr") return STDERR_FILENO;
  for (const std::string prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    if (!path.starts_with(prefix) || path.size() == prefix.size() || path.size() > prefix.size() + 9) continue;
    const std::string number = path.substr(prefix.size());
    if (number.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    const int fd = std::stoi(number);
    return fcntl(fd, F_GETFD) >= 0 ? std::optional<int>(fd) : std::nullopt;
  }
  return std::nullopt;
}

void write_stream(int fd, const std::string& path, const std::string& content) {
  if (!write_all(fd, content)) throw OutputError("cannot write " + path + ": " + error_text(errno));
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

void write_named_output_file(const std::string& path, const std::string& content) {
  if (const auto fd = open_descriptor_named(path)) return write_stream(*fd, path, content);
  struct stat link;
  if (lstat(path.c_str(), &link) != 0 || S_ISREG(link.st_mode)) return write_output_file(path, content);
  if (S_ISDIR(link.st_mode)) throw OutputError("cannot write " + path + ": it is a folder");
  struct stat target;
  const bool streams = S_ISLNK(link.st_mode) ? stat(path.c_str(), &target) == 0 && is_stream(target.st_mode)
                                             : is_stream(link.st_mode);
  // A link to a regular file, or to nothing, is replaced as write_output_file says.
  if (!streams) return write_output_file(path, content);
  // The kernel's protected_symlinks rule: a link someone else planted is not followed.
  if (S_ISLNK(link.st_mode) && link.st_uid != 0 && link.st_uid != geteuid()) {
    throw OutputError("cannot write " + path + ": a link of another user's to a device, FIFO or socket");
  }
  // O_APPEND: a device or pipe ignores it; nothing is truncated.
  const int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) throw OutputError("cannot write " + path + ": " + error_text(errno));
  write_stream(fd, path, content);
  if (close(fd) != 0) throw OutputError("cannot write " + path + ": " + error_text(errno));
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
