// The module list as a kModules record (module_list.h).
#include "profiler/preload/module_list.h"

#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "profiler/trace/trace_records.h"

namespace memstage::preload {
namespace {
namespace records = trace::records;
struct ModuleEncoder {
  uint8_t* out;
  uint8_t* end;
  uint32_t count;
  bool overflow;
};

int encode_one_module(dl_phdr_info* info, size_t, void* data) {
  auto* enc = static_cast<ModuleEncoder*>(data);
  char exe[4096];
  const char* path = info->dlpi_name;
  size_t path_len = path ? strlen(path) : 0;
  if (path_len == 0) {
    // The main program has no name here.
    const long n = syscall(SYS_readlinkat, AT_FDCWD, "/proc/self/exe", exe, sizeof(exe) - 1);
    path = exe;
    path_len = n > 0 ? static_cast<size_t>(n) : 0;
  }
  records::Segment segments[64];
  uint32_t segment_count = 0;
  for (int i = 0; i < info->dlpi_phnum && segment_count < 64; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
    segments[segment_count++] = {info->dlpi_addr + ph.p_vaddr, info->dlpi_addr + ph.p_vaddr + ph.p_memsz};
  }
  records::ModuleEntry entry;
  entry.path = std::string_view(path, path_len);
  entry.load_bias = info->dlpi_addr;
  entry.segments.items = {segments, segment_count};
  if (enc->out + records::max_item_bytes(entry) > enc->end) {
    enc->overflow = true;
    return 1;
  }
  enc->out = records::encode_item(enc->out, entry);
  ++enc->count;
  return 0;
}
}  // namespace

uint32_t encode_modules(uint8_t* out, uint32_t capacity) {
  // Modules first into a scratch area after the header, then the count in front.
  constexpr uint32_t kHeader = 1 + trace::kMaxVarintBytes;
  if (capacity <= kHeader) return 0;
  ModuleEncoder enc{out + kHeader, out + capacity, 0, false};
  dl_iterate_phdr(encode_one_module, &enc);
  if (enc.overflow) return 0;
  const size_t body = static_cast<size_t>(enc.out - (out + kHeader));
  uint8_t header[kHeader];
  const size_t header_len =
      static_cast<size_t>(records::encode_list_header<records::Modules>(header, enc.count) - header);
  memmove(out + header_len, out + kHeader, body);
  memcpy(out, header, header_len);
  return static_cast<uint32_t>(header_len + body);
}

}  // namespace memstage::preload
