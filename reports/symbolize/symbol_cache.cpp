#include "reports/symbolize/symbol_cache.h"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

namespace memstage::reports {

namespace {

constexpr char kMagic[] = "memstage-symbols-2\n";  // then the rest, compressed (zstd)
// A module's frames take at most this many bytes, encoded: past it they are not kept (a
// test that symbolizes every instruction of a big executable), and a file that says more
// is not one of ours.
constexpr uint64_t kMaxEncodedBytes = 256ull << 20;
constexpr int kCompressionLevel = 3;

// A regular file as it is now: device, inode, size, modification and change times (ctime
// moves on any write, and no tool sets it back). Empty where it is not a regular file.
std::string file_identity(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) return {};
  char text[160];
  std::snprintf(text, sizeof(text), "%llu:%llu:%lld:%lld.%09ld:%lld.%09ld",
                static_cast<unsigned long long>(info.st_dev), static_cast<unsigned long long>(info.st_ino),
                static_cast<long long>(info.st_size), static_cast<long long>(info.st_mtim.tv_sec),
                info.st_mtim.tv_nsec, static_cast<long long>(info.st_ctim.tv_sec), info.st_ctim.tv_nsec);
  return text;
}

// Where a debug package puts the module's separate debug information by build id
// (/usr/lib/debug/.build-id/ab/cdef...debug); empty without a build id.
std::string build_id_debug_path(const std::string& module_path) {
  const int fd = ::open(module_path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return {};
  std::string path;
  elf_version(EV_CURRENT);
  if (Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr)) {
    const void* id = nullptr;
    const ssize_t length = dwelf_elf_gnu_build_id(elf, &id);
    if (length > 1) {
      static constexpr char kHex[] = "0123456789abcdef";
      const auto* bytes = static_cast<const unsigned char*>(id);
      path = "/usr/lib/debug/.build-id/";
      for (ssize_t i = 0; i < length; ++i) {
        path += kHex[bytes[i] >> 4];
        path += kHex[bytes[i] & 15];
        if (i == 0) path += '/';
      }
      path += ".debug";
    }
    elf_end(elf);
  }
  ::close(fd);
  return path;
}

// FNV-1a: the cache file's name; the whole identity is checked inside it.
uint64_t fnv1a(const std::string& text) {
  uint64_t hash = 1469598103934665603ull;
  for (const unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

void put_u32(std::string& out, uint32_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof(v)); }
void put_u64(std::string& out, uint64_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof(v)); }
void put_text(std::string& out, const std::string& text) {
  put_u32(out, static_cast<uint32_t>(text.size()));
  out += text;
}

// Reads what save wrote, refusing anything short or out of bounds.
class Reader {
 public:
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}
  bool ok() const { return ok_; }
  bool at_end() const { return at_ == bytes_.size(); }
  template <class T>
  T number() {
    T v{};
    if (!take(sizeof(T))) return v;
    std::memcpy(&v, bytes_.data() + at_ - sizeof(T), sizeof(T));
    return v;
  }
  std::string text() {
    const uint32_t length = number<uint32_t>();
    if (!take(length)) return {};
    return bytes_.substr(at_ - length, length);
  }

 private:
  bool take(uint64_t n) {
    if (!ok_ || bytes_.size() - at_ < n) return ok_ = false;
    at_ += n;
    return true;
  }
  const std::string& bytes_;
  size_t at_ = 0;
  bool ok_ = true;
};

}  // namespace

std::span<const ModuleFrames::Kept> ModuleFrames::find(const SymbolCacheKey& key) const {
  const auto found = by_key_.find(key);
  if (found == by_key_.end()) return {};
  return std::span<const Kept>(frames_).subspan(found->second.first, found->second.second);
}

void ModuleFrames::add(const SymbolCacheKey& key, const std::vector<Frame>& frames) {
  const auto [place, added] = by_key_.try_emplace(key, static_cast<uint32_t>(frames_.size()), 0);
  if (!added) return;
  for (const Frame& frame : frames) {
    frames_.push_back(Kept{text_id(frame.function), text_id(frame.file), frame.line, frame.inlined});
  }
  place->second.second = static_cast<uint32_t>(frames.size());
}

Frame ModuleFrames::frame(const Kept& kept) const {
  Frame frame;
  frame.function = text_of(kept.function);
  frame.file = text_of(kept.file);
  frame.line = kept.line;
  frame.inlined = kept.inlined;
  return frame;
}

uint32_t ModuleFrames::text_id(const std::string& text) {
  const auto [found, added] = text_ids_.try_emplace(text, static_cast<uint32_t>(texts_.size()));
  if (added) texts_.push_back(&found->first);
  return found->second;
}

std::optional<std::string> SymbolCache::directory_from_environment() {
  if (const char* chosen = std::getenv("MEMSTAGE_SYMBOL_CACHE")) {
    if (*chosen == '\0' || std::strcmp(chosen, "off") == 0) return std::nullopt;
    return std::string(chosen);
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg == '/') return std::string(xdg) + "/memstage/symbols";
  if (const char* home = std::getenv("HOME"); home && *home == '/') return std::string(home) + "/.cache/memstage/symbols";
  return std::nullopt;
}

std::string SymbolCache::module_identity(const std::string& module_path) {
  const std::string module = file_identity(module_path);
  if (module.empty()) return {};
  const std::string debug_path = build_id_debug_path(module_path);
  const std::string debug = debug_path.empty() ? std::string("-") : file_identity(debug_path);
  return module_path + "\n" + module + "\n" + (debug.empty() ? std::string("absent") : debug);
}

std::string SymbolCache::path_for(const std::string& identity) const {
  char name[32];
  std::snprintf(name, sizeof(name), "/%016llx.syms", static_cast<unsigned long long>(fnv1a(identity)));
  return directory_ + name;
}

ModuleFrames SymbolCache::load(const std::string& identity) const {
  ModuleFrames frames;
  if (identity.empty()) return frames;
  std::ifstream in(path_for(identity), std::ios::binary);
  if (!in) return frames;
  std::string bytes;
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size <= 0 || static_cast<uint64_t>(size) > kMaxEncodedBytes) return frames;
  bytes.resize(static_cast<size_t>(size));
  in.seekg(0);
  if (!in.read(bytes.data(), size)) return frames;

  if (bytes.compare(0, sizeof(kMagic) - 1, kMagic) != 0) return frames;
  const char* compressed = bytes.data() + sizeof(kMagic) - 1;
  const size_t compressed_size = bytes.size() - (sizeof(kMagic) - 1);
  const unsigned long long body_size = ZSTD_getFrameContentSize(compressed, compressed_size);
  if (body_size == ZSTD_CONTENTSIZE_UNKNOWN || body_size == ZSTD_CONTENTSIZE_ERROR || body_size > kMaxEncodedBytes)
    return frames;
  std::string body(static_cast<size_t>(body_size), '\0');
  const size_t inflated = ZSTD_decompress(body.data(), body.size(), compressed, compressed_size);
  if (ZSTD_isError(inflated) || inflated != body.size()) return frames;
  Reader reader(body);
  if (reader.text() != identity) return frames;
  const std::string debug_file = reader.text();
  const std::string debug_identity = reader.text();
  if (!reader.ok() || (!debug_file.empty() && file_identity(debug_file) != debug_identity)) return frames;
  const uint64_t count = reader.number<uint64_t>();
  std::vector<Frame> stack;
  for (uint64_t i = 0; i < count && reader.ok(); ++i) {
    SymbolCacheKey key;
    key.module_offset = reader.number<uint64_t>();
    key.is_return_address = reader.number<uint8_t>() != 0;
    const uint32_t depth = reader.number<uint32_t>();
    if (depth == 0) return {};  // save writes at least one frame an address
    stack.clear();
    for (uint32_t d = 0; d < depth && reader.ok(); ++d) {
      Frame frame;
      frame.function = reader.text();
      frame.file = reader.text();
      frame.line = reader.number<int32_t>();
      frame.inlined = reader.number<uint8_t>() != 0;
      stack.push_back(std::move(frame));
    }
    frames.add(key, stack);
  }
  if (!reader.ok() || !reader.at_end()) return {};
  // Used now: prune keeps it.
  std::error_code error;
  std::filesystem::last_write_time(path_for(identity), std::filesystem::file_time_type::clock::now(), error);
  return frames;
}

void SymbolCache::prune() const {
  struct File {
    std::filesystem::file_time_type used;
    uintmax_t bytes;
    std::filesystem::path path;
  };
  std::error_code error;
  std::vector<File> files;
  for (std::filesystem::directory_iterator it(directory_, error), end; !error && it != end; it.increment(error)) {
    if (it->path().extension() != ".syms") continue;
    std::error_code stat_error;
    const auto used = std::filesystem::last_write_time(it->path(), stat_error);
    const uintmax_t bytes = std::filesystem::file_size(it->path(), stat_error);
    if (!stat_error) files.push_back({used, bytes, it->path()});
  }
  // Newest first; the rest past either bound goes.
  std::sort(files.begin(), files.end(), [](const File& a, const File& b) { return a.used > b.used; });
  uintmax_t kept_bytes = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    kept_bytes += files[i].bytes;
    if (i >= kMaxFiles || kept_bytes > kMaxFolderBytes) std::filesystem::remove(files[i].path, error);
  }
}

void SymbolCache::save(const std::string& identity, const std::string& debug_file, const ModuleFrames& frames) const {
  if (identity.empty() || frames.empty()) return;
  std::string out;
  put_text(out, identity);
  put_text(out, debug_file);
  put_text(out, debug_file.empty() ? std::string() : file_identity(debug_file));
  put_u64(out, frames.size());
  frames.for_each([&](const SymbolCacheKey& key, std::span<const ModuleFrames::Kept> stack) {
    put_u64(out, key.module_offset);
    out += static_cast<char>(key.is_return_address ? 1 : 0);
    put_u32(out, static_cast<uint32_t>(stack.size()));
    for (const ModuleFrames::Kept& frame : stack) {
      put_text(out, frames.text_of(frame.function));
      put_text(out, frames.text_of(frame.file));
      const int32_t line = frame.line;
      out.append(reinterpret_cast<const char*>(&line), sizeof(line));
      out += static_cast<char>(frame.inlined ? 1 : 0);
    }
  });
  if (out.size() > kMaxEncodedBytes) return;
  // Names and paths repeat from address to address: a tenth of the bytes, or less.
  std::string file = kMagic;
  const size_t header = file.size();
  file.resize(header + ZSTD_compressBound(out.size()));
  const size_t compressed = ZSTD_compress(file.data() + header, file.size() - header, out.data(), out.size(), kCompressionLevel);
  if (ZSTD_isError(compressed)) return;
  file.resize(header + compressed);
  std::error_code error;
  std::filesystem::create_directories(directory_, error);
  if (error) return;
  // Written aside, then renamed over: a reader sees the old file or the new one, whole.
  const std::string path = path_for(identity);
  const std::string temporary = path + "." + std::to_string(::getpid()) + "." + std::to_string(std::random_device()());
  {
    std::ofstream stream(temporary, std::ios::binary | std::ios::trunc);
    if (!stream.write(file.data(), static_cast<std::streamsize>(file.size())) || !stream.flush()) {
      stream.close();
      std::filesystem::remove(temporary, error);
      return;
    }
  }
  std::filesystem::rename(temporary, path, error);
  if (error) std::filesystem::remove(temporary, error);
}

}  // namespace memstage::reports
