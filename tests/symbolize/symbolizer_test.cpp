// The symbolizer against real code: addresses captured at run time in libraries built for
// the purpose (tests/symbolize/fixture_*.cpp) and in this PIE executable, located the way
// the tracer locates them (dl_iterate_phdr), checked against lines known from __LINE__.
#include "reports/symbolize/symbolizer.h"
#include "reports/symbolize/symbol_cache.h"

#include <elf.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/symbolize/fixture.h"

using memstage::reports::Frame;
using memstage::reports::Symbolizer;

namespace {

struct LoadedModule {
  std::string path;
  uint64_t load_bias = 0;
  uint64_t executable_begin = 0;  // the first executable PT_LOAD, in process addresses
  uint64_t executable_end = 0;
  std::string build_id;  // lowercase hex, empty when the module has none
};

std::string hex(const unsigned char* bytes, size_t size) {
  std::string text;
  char digits[3];
  for (size_t i = 0; i < size; ++i) {
    std::snprintf(digits, sizeof digits, "%02x", bytes[i]);
    text += digits;
  }
  return text;
}

std::string build_id_of(const dl_phdr_info& info) {
  for (int i = 0; i < info.dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info.dlpi_phdr[i];
    if (segment.p_type != PT_NOTE) continue;
    const char* note = reinterpret_cast<const char*>(info.dlpi_addr + segment.p_vaddr);
    const char* end = note + segment.p_memsz;
    while (note + sizeof(ElfW(Nhdr)) <= end) {
      const auto* header = reinterpret_cast<const ElfW(Nhdr)*>(note);
      const char* name = note + sizeof(ElfW(Nhdr));
      const char* descriptor = name + ((header->n_namesz + 3) & ~3u);
      if (header->n_type == NT_GNU_BUILD_ID && header->n_namesz == 4 &&
          std::string_view(name, 3) == "GNU")
        return hex(reinterpret_cast<const unsigned char*>(descriptor), header->n_descsz);
      note = descriptor + ((header->n_descsz + 3) & ~3u);
    }
  }
  return {};
}

// What the tracer's module map records for the module holding `address`.
LoadedModule module_containing(const void* address) {
  struct Search {
    uint64_t address;
    LoadedModule found;
    bool done = false;
  } search{reinterpret_cast<uint64_t>(address), {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto& search = *static_cast<Search*>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& segment = info->dlpi_phdr[i];
          if (segment.p_type != PT_LOAD) continue;
          const uint64_t begin = info->dlpi_addr + segment.p_vaddr;
          if (search.address < begin || search.address >= begin + segment.p_memsz) continue;
          search.found.load_bias = info->dlpi_addr;
          // The main program has an empty name; the recorder writes its real path.
          search.found.path = info->dlpi_name[0] != '\0'
                                  ? info->dlpi_name
                                  : std::filesystem::read_symlink("/proc/self/exe").string();
          search.found.build_id = build_id_of(*info);
          for (int j = 0; j < info->dlpi_phnum; ++j) {
            const ElfW(Phdr)& code = info->dlpi_phdr[j];
            if (code.p_type == PT_LOAD && (code.p_flags & PF_X)) {
              search.found.executable_begin = info->dlpi_addr + code.p_vaddr;
              search.found.executable_end = search.found.executable_begin + code.p_memsz;
              break;
            }
          }
          search.done = true;
          return 1;
        }
        return 0;
      },
      &search);
  REQUIRE(search.done);
  return search.found;
}

std::string basename_of(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

std::vector<Frame> symbolize_return_address(Symbolizer& symbolizer, void* return_address) {
  const LoadedModule module = module_containing(return_address);
  return symbolizer.symbolize(module.path, module.load_bias,
                              reinterpret_cast<uint64_t>(return_address), true);
}

void check_module_fields(const Frame& frame, const LoadedModule& module, uint64_t address) {
  CHECK(frame.module == module.path);
  CHECK(frame.address == address);
  CHECK(frame.module_offset == address - module.load_bias);
  CHECK(frame.kind == "native");
}

__attribute__((noipa)) void* return_address_of_call() { return __builtin_return_address(0); }

__attribute__((noinline)) void* function_in_test_executable(int* call_line) {
  *call_line = __LINE__; void* address = return_address_of_call();
  asm volatile("" : "+r"(address));  // no tail call: the return address stays in here
  return address;
}

}  // namespace

TEST_CASE("a plain function: demangled name, file and exact line of the call") {
  int call_line = 0;
  void* address = memstage_fixture::plain_function(&call_line);
  Symbolizer symbolizer;
  const std::vector<Frame> frames = symbolize_return_address(symbolizer, address);
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].function == "memstage_fixture::plain_function(int*)");
  CHECK(basename_of(frames[0].file) == "fixture_debug.cpp");
  CHECK(frames[0].line == call_line);
  CHECK_FALSE(frames[0].inlined);
  const LoadedModule module = module_containing(address);
  CHECK(basename_of(module.path) == "libmemstage_symbolize_fixture_debug.so");
  check_module_fields(frames[0], module, reinterpret_cast<uint64_t>(address));
}

TEST_CASE("inlined frames: callee first with its own line, callers with their call sites") {
  int innermost_line = 0, middle_call_line = 0, caller_call_line = 0;
  void* address =
      memstage_fixture::inlining_caller(&innermost_line, &middle_call_line, &caller_call_line);
  Symbolizer symbolizer;
  const std::vector<Frame> frames = symbolize_return_address(symbolizer, address);
  REQUIRE(frames.size() == 3);

  // Internal linkage: GCC emits no linkage name, so the name is qualified from the DWARF
  // scopes and has no parameter list.
  CHECK(frames[0].function == "memstage_fixture::(anonymous namespace)::innermost_inline");
  CHECK(frames[0].line == innermost_line);
  CHECK(frames[0].inlined);

  CHECK(frames[1].function == "memstage_fixture::(anonymous namespace)::middle_inline");
  CHECK(frames[1].line == middle_call_line);
  CHECK(frames[1].inlined);

  CHECK(frames[2].function == "memstage_fixture::inlining_caller(int*, int*, int*)");
  CHECK(frames[2].line == caller_call_line);
  CHECK_FALSE(frames[2].inlined);

  const LoadedModule module = module_containing(address);
  for (const Frame& frame : frames) {
    CHECK(basename_of(frame.file) == "fixture_debug.cpp");
    check_module_fields(frame, module, reinterpret_cast<uint64_t>(address));
  }
}

TEST_CASE("a namespaced template instance is demangled with its arguments") {
  int call_line = 0;
  void* address = memstage_fixture::templated_function<long>(42, &call_line);
  Symbolizer symbolizer;
  const std::vector<Frame> frames = symbolize_return_address(symbolizer, address);
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].function == "void* memstage_fixture::templated_function<long>(long, int*)");
  CHECK(basename_of(frames[0].file) == "fixture_debug.cpp");
  CHECK(frames[0].line == call_line);
}

TEST_CASE("a member of a class in an anonymous namespace, qualified from DWARF scopes") {
  int call_line = 0;
  void* address = memstage_fixture::member_of_class_in_anonymous_namespace(&call_line);
  Symbolizer symbolizer;
  const std::vector<Frame> frames = symbolize_return_address(symbolizer, address);
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].function == "memstage_fixture::(anonymous namespace)::Widget::method");
  CHECK(basename_of(frames[0].file) == "fixture_debug.cpp");
  CHECK(frames[0].line == call_line);
}

TEST_CASE("a lambda is named inside the function that defines it") {
  int call_line = 0;
  void* address = memstage_fixture::function_with_lambda(&call_line);
  Symbolizer symbolizer;
  const std::vector<Frame> frames = symbolize_return_address(symbolizer, address);
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].function == "memstage_fixture::function_with_lambda(int*)::{lambda}::operator()");
  CHECK(basename_of(frames[0].file) == "fixture_debug.cpp");
  CHECK(frames[0].line == call_line);
}

TEST_CASE("the PIE main executable, at the load bias dl_iterate_phdr reports") {
  int call_line = 0;
  void* address = function_in_test_executable(&call_line);
  const LoadedModule module = module_containing(address);
  CHECK(module.load_bias != 0);  // PIE: loaded at a random base, vaddrs start near 0
  Symbolizer symbolizer;
  const std::vector<Frame> frames = symbolize_return_address(symbolizer, address);
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].function == "(anonymous namespace)::function_in_test_executable");
  CHECK(basename_of(frames[0].file) == "symbolizer_test.cpp");
  CHECK(frames[0].line == call_line);
  check_module_fields(frames[0], module, reinterpret_cast<uint64_t>(address));
}

TEST_CASE("a non-PIE executable, symbolized after its process has exited") {
  FILE* output = popen(MEMSTAGE_NON_PIE_FIXTURE, "r");
  REQUIRE(output != nullptr);
  unsigned long load_bias = 1, address = 0;
  int call_line = 0;
  const int fields = std::fscanf(output, "%lx %lx %d", &load_bias, &address, &call_line);
  REQUIRE(pclose(output) == 0);
  REQUIRE(fields == 3);
  CHECK(load_bias == 0);  // ET_EXEC runs at the addresses it was linked at
  Symbolizer symbolizer;
  const std::vector<Frame> frames =
      symbolizer.symbolize(MEMSTAGE_NON_PIE_FIXTURE, load_bias, address, true);
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].function == "(anonymous namespace)::function_in_non_pie");
  CHECK(basename_of(frames[0].file) == "fixture_non_pie_main.cpp");
  CHECK(frames[0].line == call_line);
  CHECK(frames[0].module_offset == address);
}

TEST_CASE("an exact address (not a return address) is looked up as it is") {
  // The function's first instruction: looking up address - 1 would land before it.
  void* entry = reinterpret_cast<void*>(&memstage_fixture::plain_function);
  const LoadedModule module = module_containing(entry);
  Symbolizer symbolizer;
  const std::vector<Frame> frames = symbolizer.symbolize(
      module.path, module.load_bias, reinterpret_cast<uint64_t>(entry), false);
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].function == "memstage_fixture::plain_function(int*)");
  CHECK(basename_of(frames[0].file) == "fixture_debug.cpp");
  CHECK(frames[0].line > 0);
}

TEST_CASE("without DWARF the ELF symbol table names the function") {
  void* address = memstage_fixture_nodebug::function_without_debug_info();
  Symbolizer symbolizer;
  const std::vector<Frame> frames = symbolize_return_address(symbolizer, address);
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].function == "memstage_fixture_nodebug::function_without_debug_info()");
  CHECK(frames[0].file.empty());
  CHECK(frames[0].line == 0);
  check_module_fields(frames[0], module_containing(address), reinterpret_cast<uint64_t>(address));
}

TEST_CASE("DWARF in a separate file named by .gnu_debuglink is found") {
  int call_line = 0;
  void* address = memstage_fixture_separate_debug(&call_line);
  const LoadedModule module = module_containing(address);
  REQUIRE(std::filesystem::exists(module.path + ".debug"));
  Symbolizer symbolizer;
  const std::vector<Frame> frames = symbolize_return_address(symbolizer, address);
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].function == "memstage_fixture_separate_debug");
  CHECK(basename_of(frames[0].file) == "fixture_separate_debug.cpp");
  CHECK(frames[0].line == call_line);
}

TEST_CASE("a FIFO named like a module's separate debug file is not opened: named from its symbols, no hang") {
  // The module path comes from the trace and its debuglink from the module's bytes: libdw
  // would open a FIFO found there and wait for a writer for ever. SIGALRM ends a hang.
  int call_line = 0;
  void* address = memstage_fixture_separate_debug(&call_line);
  const LoadedModule module = module_containing(address);
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("memstage_symbolize_debuglink_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::filesystem::path copy = dir / std::filesystem::path(module.path).filename();
  std::filesystem::copy_file(module.path, copy);
  REQUIRE(mkfifo((copy.string() + ".debug").c_str(), 0600) == 0);
  alarm(30);
  Symbolizer symbolizer;
  const std::vector<Frame> frames =
      symbolizer.symbolize(copy.string(), module.load_bias, reinterpret_cast<uint64_t>(address), true);
  alarm(0);
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].function == "memstage_fixture_separate_debug");  // from the symbol table
  CHECK(frames[0].line == 0);                                       // no DWARF read
  std::filesystem::remove_all(dir);
}

TEST_CASE("libc's DWARF is found by build id under /usr/lib/debug when installed") {
  void* malloc_entry = reinterpret_cast<void*>(&std::malloc);
  const LoadedModule libc = module_containing(malloc_entry);
  REQUIRE(libc.build_id.size() > 2);
  const std::string debug_file = "/usr/lib/debug/.build-id/" + libc.build_id.substr(0, 2) + "/" +
                                 libc.build_id.substr(2) + ".debug";
  if (!std::filesystem::exists(debug_file)) {
    WARN("no " << debug_file << " (libc6-dbg not installed): nothing to check");
    return;
  }
  Symbolizer symbolizer;
  const std::vector<Frame> frames = symbolizer.symbolize(
      libc.path, libc.load_bias, reinterpret_cast<uint64_t>(malloc_entry), false);
  REQUIRE(!frames.empty());
  CAPTURE(frames.back().function, frames.size());
  // glibc's DWARF names it __libc_malloc, with the asm label __GI___libc_malloc as its
  // linkage name; the source name is the one to show.
  CHECK(frames.back().function == "__libc_malloc");
  CHECK(basename_of(frames[0].file) == "malloc.c");
  CHECK(frames[0].line > 0);
}

TEST_CASE("a warmed symbolizer, moved to its user, gives the frames a fresh one gives") {
  int call_line = 0;
  void* address = memstage_fixture::plain_function(&call_line);
  const LoadedModule module = module_containing(address);
  Symbolizer warmed;
  warmed.warm(module.path);
  warmed.warm("/nonexistent/libnothing.so");  // nothing to open: no throw, nothing kept wrong
  Symbolizer moved(std::move(warmed));
  Symbolizer fresh;
  const std::vector<Frame> from_warmed = symbolize_return_address(moved, address);
  const std::vector<Frame> from_fresh = symbolize_return_address(fresh, address);
  REQUIRE(from_warmed.size() == 1);
  REQUIRE(from_fresh.size() == 1);
  CHECK(from_warmed[0].function == from_fresh[0].function);
  CHECK(from_warmed[0].file == from_fresh[0].file);
  CHECK(from_warmed[0].line == call_line);
  CHECK(from_warmed[0].module_offset == from_fresh[0].module_offset);
}

TEST_CASE("a missing or non-ELF module gives one frame with only module and offset") {
  const std::string not_elf = std::filesystem::temp_directory_path() /
                              ("memstage_symbolize_not_elf_" + std::to_string(getpid()));
  if (FILE* file = std::fopen(not_elf.c_str(), "w")) {
    std::fputs("not an ELF file\n", file);
    std::fclose(file);
  }
  Symbolizer symbolizer;
  for (const std::string& path : {std::string("/nonexistent/libnothing.so"), not_elf,
                                  std::string(), std::string("/")}) {
    for (bool is_return_address : {true, false}) {
      const std::vector<Frame> frames =
          symbolizer.symbolize(path, 0x7f0000000000, 0x7f0000001234, is_return_address);
      REQUIRE(frames.size() == 1);
      CHECK(frames[0].function.empty());
      CHECK(frames[0].file.empty());
      CHECK(frames[0].line == 0);
      CHECK_FALSE(frames[0].inlined);
      CHECK(frames[0].module == path);
      CHECK(frames[0].address == 0x7f0000001234);
      CHECK(frames[0].module_offset == 0x1234);
    }
  }
  std::filesystem::remove(not_elf);
}

TEST_CASE("an address outside any code of a real module gives the bare frame") {
  int call_line = 0;
  const LoadedModule module = module_containing(memstage_fixture::plain_function(&call_line));
  Symbolizer symbolizer;
  const uint64_t far_away = module.load_bias + (uint64_t{1} << 40);
  const std::vector<Frame> frames =
      symbolizer.symbolize(module.path, module.load_bias, far_away, true);
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].function.empty());
  CHECK(frames[0].file.empty());
  CHECK(frames[0].module_offset == uint64_t{1} << 40);
}

TEST_CASE("the same module at another load bias resolves the same, and repeats are cached") {
  int call_line = 0;
  void* address = memstage_fixture::plain_function(&call_line);
  const LoadedModule module = module_containing(address);
  const uint64_t offset = reinterpret_cast<uint64_t>(address) - module.load_bias;
  Symbolizer symbolizer;
  const std::vector<Frame> first = symbolize_return_address(symbolizer, address);
  const std::vector<Frame> again = symbolize_return_address(symbolizer, address);
  // Another process of the same trace with the library loaded elsewhere.
  const uint64_t other_bias = 0x7f1200000000;
  const std::vector<Frame> elsewhere =
      symbolizer.symbolize(module.path, other_bias, other_bias + offset, true);
  REQUIRE(first.size() == 1);
  REQUIRE(again.size() == 1);
  REQUIRE(elsewhere.size() == 1);
  for (const Frame& frame : {again[0], elsewhere[0]}) {
    CHECK(frame.function == first[0].function);
    CHECK(frame.file == first[0].file);
    CHECK(frame.line == call_line);
    CHECK(frame.module_offset == offset);
  }
  CHECK(elsewhere[0].address == other_bias + offset);
}

TEST_CASE("100k distinct addresses in a large C++ executable symbolize quickly") {
  int call_line = 0;
  const LoadedModule module = module_containing(function_in_test_executable(&call_line));
  const uint64_t size = module.executable_end - module.executable_begin;
  constexpr uint64_t address_count = 100'000;
  const uint64_t stride = std::max<uint64_t>(1, size / address_count);
  Symbolizer symbolizer;
  size_t named = 0, with_line = 0, looked_up = 0;
  // Processor time, not wall time: a busy build machine must not fail the test.
  const std::clock_t start = std::clock();
  for (uint64_t address = module.executable_begin + 1; address < module.executable_end;
       address += stride) {
    for (const Frame& frame : symbolizer.symbolize(module.path, module.load_bias, address, true)) {
      named += !frame.function.empty();
      with_line += frame.line > 0;
    }
    ++looked_up;
  }
  const double seconds = static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
  INFO(looked_up << " addresses in " << seconds << " s of CPU; " << named << " frames named, "
                 << with_line << " with a line");
  CHECK(looked_up >= address_count / 2);
  CHECK(named >= looked_up * 9 / 10);  // the executable's own code is almost all named
  CHECK(seconds < 10.0);  // about 1.5 s when written; libdw's linear lookups took minutes
}

TEST_CASE("a module path that is a FIFO or a device is not read: a bare frame, no hang") {
  // The paths come from the trace, which anyone can hand to `memstage report`: opening a
  // FIFO for reading would wait for a writer forever.
  const std::string fifo = (std::filesystem::temp_directory_path() /
                            ("memstage_symbolize_fifo_" + std::to_string(getpid()))).string();
  std::filesystem::remove(fifo);
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  Symbolizer symbolizer;
  for (const std::string& path : {fifo, std::string("/dev/zero"), std::string("/")}) {
    INFO(path);
    const std::vector<Frame> frames = symbolizer.symbolize(path, 0x1000, 0x1234, true);
    REQUIRE(frames.size() == 1);
    CHECK(frames[0].function.empty());
    CHECK(frames[0].module == path);
    CHECK(frames[0].module_offset == 0x234);
  }
  std::filesystem::remove(fifo);
}

namespace {

// A folder of its own for one test's symbol cache, and the files it holds.
struct TemporaryFolder {
  std::filesystem::path path;
  explicit TemporaryFolder(const std::string& name)
      : path(std::filesystem::temp_directory_path() / (name + "_" + std::to_string(getpid()))) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TemporaryFolder() {
    std::error_code error;
    std::filesystem::remove_all(path, error);
  }
};

std::vector<std::filesystem::path> files_in(const std::filesystem::path& folder) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) files.push_back(entry.path());
  return files;
}

// The separate-debug fixture and its debug file copied into `folder` (libdw finds the debug
// file by .gnu_debuglink beside the module): the module's path and the offset of a return
// address in it, with the line the call is on.
struct CopiedModule {
  std::string path;
  std::string debug_path;
  uint64_t offset = 0;
  int call_line = 0;
};
CopiedModule copy_separate_debug_fixture(const std::filesystem::path& folder) {
  CopiedModule copy;
  void* address = memstage_fixture_separate_debug(&copy.call_line);
  const LoadedModule module = module_containing(address);
  copy.path = (folder / basename_of(module.path)).string();
  copy.debug_path = copy.path + ".debug";
  std::filesystem::copy_file(module.path, copy.path);
  std::filesystem::copy_file(module.path + ".debug", copy.debug_path);
  copy.offset = reinterpret_cast<uint64_t>(address) - module.load_bias;
  return copy;
}

// A file's modification time moved one second on, as an edit or a rebuild would.
void touch_later(const std::string& path) {
  const auto time = std::filesystem::last_write_time(path);
  std::filesystem::last_write_time(path, time + std::chrono::seconds(1));
}

}  // namespace

TEST_CASE("symbol cache: a second symbolizer answers from it, the frames equal, no module opened") {
  TemporaryFolder cache("memstage_symbol_cache");
  int plain_line = 0, innermost_line = 0, middle_line = 0, caller_line = 0, own_line = 0;
  std::vector<void*> addresses = {memstage_fixture::plain_function(&plain_line),
                                  memstage_fixture::inlining_caller(&innermost_line, &middle_line, &caller_line),
                                  memstage_fixture_nodebug::function_without_debug_info(),
                                  function_in_test_executable(&own_line)};
  std::vector<std::vector<Frame>> uncached;
  {
    Symbolizer none(std::nullopt);
    for (void* address : addresses) uncached.push_back(symbolize_return_address(none, address));
  }
  {
    Symbolizer first(cache.path.string());
    for (size_t i = 0; i < addresses.size(); ++i) CHECK(symbolize_return_address(first, addresses[i]) == uncached[i]);
    CHECK(first.modules_opened() == 3);
  }  // kept on disk here
  CHECK(files_in(cache.path).size() == 3);
  Symbolizer second(cache.path.string());
  second.warm(module_containing(addresses[0]).path);  // the cache's frames stand for the warm-up
  for (size_t i = 0; i < addresses.size(); ++i) CHECK(symbolize_return_address(second, addresses[i]) == uncached[i]);
  CHECK(second.modules_opened() == 0);
  // An address the cache lacks opens its module, and only that one.
  CHECK(symbolize_return_address(second, reinterpret_cast<char*>(addresses[0]) + 1).size() >= 1);
  CHECK(second.modules_opened() == 1);
}

TEST_CASE("symbol cache: a module or separate debug file changed since, or a cache file cut short, is read again") {
  TemporaryFolder modules("memstage_symbol_cache_modules");
  TemporaryFolder cache("memstage_symbol_cache_files");
  const CopiedModule copy = copy_separate_debug_fixture(modules.path);
  const auto symbolize_copy = [&](Symbolizer& symbolizer) { return symbolizer.symbolize(copy.path, 0, copy.offset, true); };
  std::vector<Frame> expected;
  {
    Symbolizer first(cache.path.string());
    expected = symbolize_copy(first);
  }
  REQUIRE(expected.size() == 1);
  CHECK(expected[0].line == copy.call_line);  // from the separate debug file
  const auto read_again = [&] {
    Symbolizer symbolizer(cache.path.string());
    CHECK(symbolize_copy(symbolizer) == expected);
    return symbolizer.modules_opened();
  };
  CHECK(read_again() == 0);

  SECTION("the module") { touch_later(copy.path); }
  SECTION("its separate debug file") { touch_later(copy.debug_path); }
  SECTION("the cache file cut short") {
    const std::vector<std::filesystem::path> files = files_in(cache.path);
    REQUIRE(files.size() == 1);
    std::filesystem::resize_file(files[0], std::filesystem::file_size(files[0]) / 2);
  }
  CHECK(read_again() == 1);
  CHECK(read_again() == 0);  // and kept anew
}

TEST_CASE("symbol cache: the folder keeps the files used last") {
  TemporaryFolder cache("memstage_symbol_cache_prune");
  const size_t kept = memstage::reports::SymbolCache::kMaxFiles;
  const auto long_ago = std::filesystem::file_time_type::clock::now() - std::chrono::hours(24);
  for (size_t i = 0; i < kept + 5; ++i) {
    const std::filesystem::path old = cache.path / ("old" + std::to_string(i) + ".syms");
    std::fclose(std::fopen(old.c_str(), "w"));
    std::filesystem::last_write_time(old, long_ago + std::chrono::seconds(i));
  }
  int call_line = 0;
  {
    Symbolizer symbolizer(cache.path.string());
    symbolize_return_address(symbolizer, memstage_fixture::plain_function(&call_line));
  }
  const std::vector<std::filesystem::path> files = files_in(cache.path);
  CHECK(files.size() == kept);
  // The oldest went; the one just written stays.
  CHECK_FALSE(std::filesystem::exists(cache.path / "old0.syms"));
  CHECK(std::filesystem::exists(cache.path / ("old" + std::to_string(kept + 4) + ".syms")));
  CHECK(std::count_if(files.begin(), files.end(), [](const auto& f) { return f.filename().string().rfind("old", 0) != 0; }) == 1);
}

TEST_CASE("symbol cache: a folder that cannot be made or written costs nothing but the cache") {
  int call_line = 0;
  void* address = memstage_fixture::plain_function(&call_line);
  std::vector<Frame> expected;
  {
    Symbolizer none(std::nullopt);
    expected = symbolize_return_address(none, address);
  }
  TemporaryFolder folder("memstage_symbol_cache_blocked");
  const std::string file = (folder.path / "a_file").string();
  std::fclose(std::fopen(file.c_str(), "w"));
  // Under a regular file (no folder can be made there), and under /proc (nothing can be written).
  for (const std::string& directory : {file + "/symbols", std::string("/proc/memstage_symbols")}) {
    {
      Symbolizer symbolizer(directory);
      CHECK(symbolize_return_address(symbolizer, address) == expected);
    }  // the save fails here, quietly
    Symbolizer again(directory);
    CHECK(symbolize_return_address(again, address) == expected);
    CHECK(again.modules_opened() == 1);
  }
}

TEST_CASE("symbol cache: a module's frames keep each name once, and give back what was added") {
  using memstage::reports::ModuleFrames;
  using memstage::reports::SymbolCacheKey;
  const auto frame = [](const char* function, const char* file, int line, bool inlined) {
    Frame f;
    f.function = function;
    f.file = file;
    f.line = line;
    f.inlined = inlined;
    return f;
  };
  ModuleFrames frames;
  CHECK(frames.empty());
  CHECK(frames.find(SymbolCacheKey{0x10, true}).empty());
  const std::vector<Frame> inlined = {frame("callee", "a.cpp", 3, true), frame("caller", "a.cpp", 9, false)};
  frames.add(SymbolCacheKey{0x10, true}, inlined);
  frames.add(SymbolCacheKey{0x20, true}, {frame("caller", "a.cpp", 11, false)});
  frames.add(SymbolCacheKey{0x20, false}, {frame("", "", 0, false)});
  frames.add(SymbolCacheKey{0x10, true}, {frame("other", "b.cpp", 1, false)});  // kept already: unchanged
  CHECK(frames.size() == 3);
  const auto back = [&](SymbolCacheKey key) {
    std::vector<Frame> out;
    for (const ModuleFrames::Kept& kept : frames.find(key)) out.push_back(frames.frame(kept));
    return out;
  };
  CHECK(back(SymbolCacheKey{0x10, true}) == inlined);
  CHECK(back(SymbolCacheKey{0x20, true}) == std::vector<Frame>{frame("caller", "a.cpp", 11, false)});
  CHECK(back(SymbolCacheKey{0x20, false}) == std::vector<Frame>{frame("", "", 0, false)});
  // "caller" and "a.cpp" are one text each, whatever the frames that name them.
  const auto at_10 = frames.find(SymbolCacheKey{0x10, true});
  const auto at_20 = frames.find(SymbolCacheKey{0x20, true});
  CHECK(at_10[1].function == at_20[0].function);
  CHECK(at_10[0].file == at_20[0].file);
  size_t visited = 0;
  frames.for_each([&](const SymbolCacheKey&, std::span<const ModuleFrames::Kept> kept) { visited += kept.size(); });
  CHECK(visited == 4);
}
