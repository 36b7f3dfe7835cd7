#include "reports/symbolize/symbolizer.h"

#include "reports/symbolize/symbol_cache.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace memstage::reports {

namespace {

// libdwfl keeps a pointer to its callbacks for the whole life of a Dwfl, so they are static.
// A null debuginfo path means libdw's default: next to the file, in .debug/ beside it and
// under /usr/lib/debug, by build id and by .gnu_debuglink.
char* default_debuginfo_path = nullptr;

// True when `path` names something that exists and is not a regular file.
bool exists_but_not_regular(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode);
}

// libdw opens the separate debug file it looks for with a blocking open(2). The module's
// path comes from the trace and its .gnu_debuglink name from the module's own bytes, so a
// FIFO named like that debug file (beside the module, in .debug/ there, or under
// /usr/lib/debug) would stall the analysis for ever. Each place libdw looks by name is
// checked first; if any holds something other than a regular file, the module goes
// without separate debug information and is named from its own symbol table. The
// build-id directory is the system's (root's), not the trace's to choose.
int find_regular_debuginfo(Dwfl_Module* module, void** userdata, const char* module_name, Dwarf_Addr base,
                           const char* file_name, const char* debuglink_file, GElf_Word debuglink_crc,
                           char** debuginfo_file_name) {
  if (file_name != nullptr) {
    const std::string file = file_name;
    const size_t slash = file.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : file.substr(0, slash);
    const std::string base_name = slash == std::string::npos ? file : file.substr(slash + 1);
    // Without a debuglink libdw tries "<name>.debug", and the name itself under /usr/lib/debug.
    std::vector<std::string> names = {base_name + ".debug", base_name};
    if (debuglink_file != nullptr) names.emplace_back(debuglink_file);
    std::vector<std::string> dirs = {dir, dir + "/.debug", "/usr/lib/debug/" + dir};
    if (char* real_dir = ::realpath(dir.empty() ? "/" : dir.c_str(), nullptr)) {
      const std::string real = real_dir;
      std::free(real_dir);
      dirs.insert(dirs.end(), {real, real + "/.debug", "/usr/lib/debug/" + real});
    }
    for (const std::string& name : names) {
      if (name.empty()) continue;
      if (name.front() == '/') {
        if (exists_but_not_regular(name)) return -1;
        continue;
      }
      for (const std::string& d : dirs)
        if (exists_but_not_regular(d + "/" + name)) return -1;
    }
  }
  return dwfl_standard_find_debuginfo(module, userdata, module_name, base, file_name, debuglink_file, debuglink_crc,
                                      debuginfo_file_name);
}

const Dwfl_Callbacks offline_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = find_regular_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &default_debuginfo_path,
};

bool is_mangled(const char* name) { return name != nullptr && std::strncmp(name, "_Z", 2) == 0; }

std::string demangle(const char* name) {
  if (name == nullptr) return {};
  // Only Itanium-mangled names: __cxa_demangle also accepts type manglings, so a C
  // function called "f" or "i" would otherwise come back as "float" or "int".
  if (!is_mangled(name)) return name;
  int status = 0;
  char* demangled = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || demangled == nullptr) return name;
  std::string result = demangled;
  std::free(demangled);
  return result;
}

const char* string_attribute(Dwarf_Die* die, unsigned int name) {
  Dwarf_Attribute attribute;
  // _integrate follows DW_AT_abstract_origin and DW_AT_specification: inlined instances,
  // out-of-line copies and member definitions keep their names on another DIE.
  return dwarf_formstring(dwarf_attr_integrate(die, name, &attribute));
}

// The DIE that carries the source name of a function: inlined instances and out-of-line
// copies point at their abstract definition, definitions of members at their declaration.
Dwarf_Die named_declaration(Dwarf_Die die) {
  for (int hops = 0; hops < 8 && !dwarf_hasattr(&die, DW_AT_name); ++hops) {
    Dwarf_Attribute attribute;
    Dwarf_Attribute* reference = dwarf_attr(&die, DW_AT_abstract_origin, &attribute);
    if (reference == nullptr) reference = dwarf_attr(&die, DW_AT_specification, &attribute);
    Dwarf_Die target;
    if (reference == nullptr || dwarf_formref_die(reference, &target) == nullptr) break;
    die = target;
  }
  return die;
}

bool is_cplusplus(Dwarf_Die* die) {
  Dwarf_Die unit;
  if (dwarf_diecu(die, &unit, nullptr, nullptr) == nullptr) return false;
  switch (dwarf_srclang(&unit)) {
    case DW_LANG_C_plus_plus:
    case DW_LANG_C_plus_plus_03:
    case DW_LANG_C_plus_plus_11:
    case DW_LANG_C_plus_plus_14:
      return true;
    default:
      return false;
  }
}

// Scopes that qualify the names of the functions declared in them.
bool is_naming_scope(int tag) {
  return tag == DW_TAG_namespace || tag == DW_TAG_class_type || tag == DW_TAG_structure_type ||
         tag == DW_TAG_union_type || tag == DW_TAG_subprogram;
}

struct SourceLocation {
  std::string file;
  int line = 0;
};

// Where an inlined subroutine was called from: a place in the function it was inlined into.
SourceLocation call_site(Dwarf_Die* inlined_subroutine) {
  SourceLocation location;
  Dwarf_Attribute attribute;
  Dwarf_Word line = 0;
  if (dwarf_formudata(dwarf_attr(inlined_subroutine, DW_AT_call_line, &attribute), &line) == 0)
    location.line = static_cast<int>(line);
  Dwarf_Word file_index = 0;
  if (dwarf_formudata(dwarf_attr(inlined_subroutine, DW_AT_call_file, &attribute),
                      &file_index) != 0)
    return location;
  // The index is into the file table of the unit that holds this DIE. libdw's table
  // keeps DWARF 4's 1-based entries at their own index, so no adjustment per version.
  Dwarf_Die unit;
  Dwarf_Files* files = nullptr;
  size_t file_count = 0;
  if (dwarf_diecu(inlined_subroutine, &unit, nullptr, nullptr) == nullptr ||
      dwarf_getsrcfiles(&unit, &files, &file_count) != 0 || file_index >= file_count)
    return location;
  const char* file = dwarf_filesrc(files, file_index, nullptr, nullptr);
  if (file != nullptr) location.file = file;
  return location;
}

// The call operator of an unnamed class, or the static function GCC makes for converting a
// captureless lambda to a function pointer: that class is a lambda's closure type.
bool is_closure_member(const char* name) {
  return std::strcmp(name, "operator()") == 0 || std::strcmp(name, "_FUN") == 0;
}

// Tags whose children may include subprograms with code: out-of-line members of local
// classes, lambdas, GNU C nested functions.
bool may_contain_functions(int tag) {
  switch (tag) {
    case DW_TAG_namespace:
    case DW_TAG_class_type:
    case DW_TAG_structure_type:
    case DW_TAG_union_type:
    case DW_TAG_subprogram:
    case DW_TAG_lexical_block:
    case DW_TAG_inlined_subroutine:
      return true;
    default:
      return false;
  }
}

// Tags that can hold an inlined subroutine in a function's concrete tree.
bool may_contain_inlined(int tag) {
  return tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block ||
         tag == DW_TAG_try_block || tag == DW_TAG_catch_block;
}

}  // namespace

// One ELF file. It is reported to its own Dwfl at bias 0, so Dwfl addresses are the
// file's own vaddrs (module offsets): the same file loaded at different addresses, in
// different processes of one trace, shares its parsed debug information and cache.
//
// libdw's generic lookups are linear: dwarf_getscopes walks the whole unit for every
// address, dwfl_module_addrinfo scans the whole symbol table. With 100k addresses in big
// C++ units that takes minutes, so this class builds, lazily, a sorted index of function
// ranges per unit and one of the symbol table, and walks only the tree of the one
// function that contains an address to find its inlined calls.
class Symbolizer::Module {
 public:
  // The frames a cache kept for the file as it is now are taken at once; libdw opens the
  // file at the first address they lack.
  Module(const std::string& path, std::shared_ptr<const SymbolCache> cache) : path_(path), cache_(std::move(cache)) {
    if (cache_ == nullptr) return;
    identity_ = SymbolCache::module_identity(path);
    frames_ = cache_->load(identity_);
  }
  ~Module() {
    if (dwfl_ != nullptr) dwfl_end(dwfl_);
  }
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  bool opened() const { return opened_; }

  // Keeps the frames in the cache, if any were symbolized anew. A file libdw could not
  // read as ELF is not kept: nothing was known of it.
  bool save() {
    if (cache_ == nullptr || !symbolized_anew_ || module_ == nullptr) return false;
    const char* main_file = nullptr;
    const char* debug_file = nullptr;
    // The debug file is named once libdw read it (at the first address with DWARF).
    dwfl_module_info(module_, nullptr, nullptr, nullptr, nullptr, nullptr, &main_file, &debug_file);
    const bool separate = debug_file != nullptr && (main_file == nullptr || std::strcmp(debug_file, main_file) != 0);
    cache_->save(identity_, separate ? std::string(debug_file) : std::string(), frames_);
    symbolized_anew_ = false;
    return true;
  }

  // Reads the symbol table and the debug information (libdw reads and inflates every
  // debug section of a file at its first lookup).
  void warm() {
    if (!frames_.empty()) return;  // the cache's: most likely the frames a run of it asks for
    open();
    if (module_ == nullptr) return;
    Dwarf_Addr bias = 0;
    dwfl_module_getdwarf(module_, &bias);
    if (!symbols_indexed_) index_symbols();
  }

  // Frames as the cache keeps them (function, file, line, inlined): the caller fills in the
  // module and the addresses, which every frame of a module would otherwise hold a copy of.
  std::vector<Frame> frames(uint64_t module_offset, bool is_return_address) {
    const SymbolCacheKey key{module_offset, is_return_address};
    if (const auto kept = frames_.find(key); !kept.empty()) {
      std::vector<Frame> frames;
      frames.reserve(kept.size());
      for (const ModuleFrames::Kept& frame : kept) frames.push_back(frames_.frame(frame));
      return frames;
    }
    open();
    symbolized_anew_ = true;
    std::vector<Frame> frames;
    // Outside the file's segments nothing can be known, and the nearest symbol would lie.
    if (module_ != nullptr && module_offset >= begin_ && module_offset < end_) {
      // A return address points after the call; the call itself is one byte back.
      const uint64_t pc =
          is_return_address && module_offset > 0 ? module_offset - 1 : module_offset;
      frames = resolve(pc);
    }
    if (frames.empty()) frames.emplace_back();
    frames_.add(key, frames);
    return frames;
  }

 private:
  void open() {
    if (opened_) return;
    opened_ = true;
    dwfl_ = dwfl_begin(&offline_callbacks);
    if (dwfl_ == nullptr) return;
    dwfl_report_begin(dwfl_);
    // The path comes from the trace: only a regular file is read. Opened without blocking,
    // so that a FIFO or a device named there cannot stall the analysis, then checked.
    const int fd = ::open(path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    struct stat info {};
    if (fd >= 0 && (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode))) {
      ::close(fd);
    } else if (fd >= 0) {
      // ET_DYN: add_p_vaddr=true places vaddr v at base + v, i.e. at v with base 0.
      // ET_EXEC: libdwfl ignores the base and uses the vaddrs, which are also what we want.
      // On success libdwfl owns the descriptor.
      module_ = dwfl_report_elf(dwfl_, path_.c_str(), path_.c_str(), fd, 0, true);
      if (module_ == nullptr) ::close(fd);
    }
    if (dwfl_report_end(dwfl_, nullptr, nullptr) != 0) module_ = nullptr;
    if (module_ != nullptr)
      dwfl_module_info(module_, nullptr, &begin_, &end_, nullptr, nullptr, nullptr, nullptr);
  }

  struct FunctionRange {
    Dwarf_Addr begin = 0;  // DWARF addresses, [begin, end)
    Dwarf_Addr end = 0;
    Dwarf_Die function;  // a concrete DW_TAG_subprogram
  };
  struct Symbol {
    GElf_Addr begin = 0;
    GElf_Xword size = 0;  // 0: extends to the next symbol
    int preference = 0;   // among symbols at one address, the highest is reported
    const char* name = nullptr;  // owned by libelf, lives as long as the Dwfl
  };

  std::vector<Frame> resolve(Dwarf_Addr pc) {
    std::vector<Frame> frames;
    Dwarf_Addr dwarf_bias = 0;
    if (Dwarf_Die* unit = dwfl_module_addrdie(module_, pc, &dwarf_bias)) {
      // Innermost first: inlined subroutines, then the subprogram that holds them.
      const std::vector<Dwarf_Die> chain = function_chain(*unit, pc - dwarf_bias);
      frames.resize(chain.size());
      for (size_t i = 0; i < chain.size(); ++i) {
        Dwarf_Die die = chain[i];
        frames[i].function = function_name(&die);
        frames[i].inlined = i + 1 < chain.size();
        // The line table speaks for the innermost frame; the call site of each inlined
        // subroutine is a location in the frame after it.
        if (i > 0) {
          Dwarf_Die inlined = chain[i - 1];
          SourceLocation location = call_site(&inlined);
          frames[i].file = std::move(location.file);
          frames[i].line = location.line;
        }
      }
    }
    if (frames.empty()) frames.emplace_back();
    if (Dwfl_Line* line = dwfl_module_getsrc(module_, pc)) {
      int line_number = 0;
      if (const char* file =
              dwfl_lineinfo(line, nullptr, &line_number, nullptr, nullptr, nullptr)) {
        frames[0].file = file;
        frames[0].line = line_number;
      }
    }
    // Code without DWARF, or a DIE without a name: the ELF symbol table may still know.
    if (frames.back().function.empty()) frames.back().function = symbol_name(pc);
    return frames;
  }

  // The concrete DIEs around dwarf_pc, innermost first, ending with the subprogram.
  std::vector<Dwarf_Die> function_chain(Dwarf_Die unit, Dwarf_Addr dwarf_pc) {
    const std::vector<FunctionRange>& ranges = function_ranges(unit);
    auto after = std::upper_bound(
        ranges.begin(), ranges.end(), dwarf_pc,
        [](Dwarf_Addr pc, const FunctionRange& range) { return pc < range.begin; });
    // Ranges of distinct functions do not overlap; a few steps back cover the odd nesting.
    const FunctionRange* containing = nullptr;
    for (int steps = 0; steps < 4 && after != ranges.begin(); ++steps) {
      --after;
      if (dwarf_pc < after->end) {
        containing = &*after;
        break;
      }
    }
    if (containing == nullptr) return {};

    std::vector<Dwarf_Die> chain{containing->function};
    Dwarf_Die scope = containing->function;
    for (bool descended = true; descended;) {
      descended = false;
      Dwarf_Die child;
      if (dwarf_child(&scope, &child) != 0) break;
      do {
        if (!may_contain_inlined(dwarf_tag(&child)) || dwarf_haspc(&child, dwarf_pc) != 1)
          continue;
        if (dwarf_tag(&child) == DW_TAG_inlined_subroutine) chain.push_back(child);
        scope = child;
        descended = true;
        break;
      } while (dwarf_siblingof(&child, &child) == 0);
    }
    std::reverse(chain.begin(), chain.end());
    return chain;
  }

  // Every concrete function of a unit, by address; built the first time the unit is hit.
  const std::vector<FunctionRange>& function_ranges(Dwarf_Die unit) {
    auto [found, inserted] = function_ranges_by_unit_.try_emplace(unit.addr);
    std::vector<FunctionRange>& ranges = found->second;
    if (inserted) {
      std::vector<Dwarf_Die> enclosing;
      collect_functions(&unit, enclosing, is_cplusplus(&unit), ranges);
      std::sort(ranges.begin(), ranges.end(),
                [](const FunctionRange& a, const FunctionRange& b) { return a.begin < b.begin; });
    }
    return ranges;
  }

  // One walk over the unit: the address ranges of its concrete functions and, in C++, the
  // qualified names of the functions that have no mangled name to demangle.
  // `enclosing` holds the naming scopes around `parent`, outermost first.
  void collect_functions(Dwarf_Die* parent, std::vector<Dwarf_Die>& enclosing, bool cplusplus,
                         std::vector<FunctionRange>& ranges) {
    Dwarf_Die child;
    if (dwarf_child(parent, &child) != 0) return;
    do {
      const int tag = dwarf_tag(&child);
      if (tag == DW_TAG_subprogram) {
        Dwarf_Addr base = 0, begin = 0, end = 0;
        for (ptrdiff_t offset = 0;
             (offset = dwarf_ranges(&child, offset, &base, &begin, &end)) > 0;)
          if (begin < end) ranges.push_back({begin, end, child});
        const char* name = dwarf_diename(&child);
        Dwarf_Attribute attribute;
        if (cplusplus && name != nullptr && !qualified_names_.contains(child.addr) &&
            !is_mangled(dwarf_formstring(dwarf_attr(&child, DW_AT_linkage_name, &attribute)))) {
          std::string qualified = qualified_prefix(enclosing, name) + name;
          qualified_names_.emplace(child.addr, std::move(qualified));
        }
      }
      if (may_contain_functions(tag) && dwarf_haschildren(&child)) {
        const bool naming = is_naming_scope(tag);
        if (naming) enclosing.push_back(child);
        collect_functions(&child, enclosing, cplusplus, ranges);
        if (naming) enclosing.pop_back();
      }
    } while (dwarf_siblingof(&child, &child) == 0);
  }

  // "ns::(anonymous namespace)::Class::" for a function called `name` declared in the
  // naming scopes `enclosing` (outermost first). Inside a function, the prefix starts
  // with that function's own name, as demangled local names do.
  std::string qualified_prefix(const std::vector<Dwarf_Die>& enclosing, const char* name) {
    std::string prefix;
    size_t first = 0;
    for (size_t i = enclosing.size(); i-- > 0;) {
      Dwarf_Die scope = enclosing[i];
      if (dwarf_tag(&scope) == DW_TAG_subprogram) {
        prefix = function_name(&scope) + "::";
        first = i + 1;
        break;
      }
    }
    for (size_t i = first; i < enclosing.size(); ++i) {
      Dwarf_Die scope = enclosing[i];
      if (const char* scope_name = dwarf_diename(&scope))
        prefix += scope_name;
      else if (dwarf_tag(&scope) == DW_TAG_namespace)
        prefix += "(anonymous namespace)";
      else if (i + 1 == enclosing.size() && is_closure_member(name))
        prefix += "{lambda}";
      else
        prefix += "{unnamed type}";
      prefix += "::";
    }
    return prefix;
  }

  // The slow way, for a declaration the unit walks did not meet (one in an imported
  // partial unit): dwarf_getscopes_die walks its unit from the root.
  std::string qualified_prefix_of(Dwarf_Die* declaration, const char* name) {
    Dwarf_Die* scopes = nullptr;
    const int scope_count = dwarf_getscopes_die(declaration, &scopes);
    std::vector<Dwarf_Die> enclosing;
    // scopes[0] is the declaration itself, the unit is last.
    for (int i = scope_count - 1; i >= 1; --i)
      if (is_naming_scope(dwarf_tag(&scopes[i]))) enclosing.push_back(scopes[i]);
    std::free(scopes);
    return qualified_prefix(enclosing, name);
  }

  // The demangled linkage name says namespace, template arguments and parameters. GCC
  // gives none to functions with internal linkage (static, anonymous namespace), and C
  // has none; those get their source name, qualified by the scopes around it in C++.
  // A linkage name that is not mangled is an asm label (glibc's __GI___libc_malloc),
  // so the source name (__libc_malloc) reads better there too.
  std::string function_name(Dwarf_Die* die) {
    const char* linkage = string_attribute(die, DW_AT_linkage_name);
    if (linkage == nullptr) linkage = string_attribute(die, DW_AT_MIPS_linkage_name);
    if (is_mangled(linkage)) {
      auto [found, inserted] = demangled_names_.try_emplace(linkage);
      if (inserted) found->second = demangle(linkage);
      return found->second;
    }
    Dwarf_Die declaration = named_declaration(*die);
    const char* name = dwarf_diename(&declaration);
    if (name == nullptr) return linkage != nullptr ? linkage : "";
    if (!is_cplusplus(&declaration)) return name;
    // Usually found by the walk that indexed the unit; a declaration in another unit (an
    // imported partial unit) costs a walk of its own, once.
    auto found = qualified_names_.find(declaration.addr);
    if (found == qualified_names_.end()) {
      // Computed before inserting: naming the scopes may insert other names (and rehash).
      std::string qualified = qualified_prefix_of(&declaration, name) + name;
      found = qualified_names_.emplace(declaration.addr, std::move(qualified)).first;
    }
    return found->second;
  }

  std::string symbol_name(GElf_Addr pc) {
    if (!symbols_indexed_) index_symbols();
    auto after = std::upper_bound(symbols_.begin(), symbols_.end(), pc,
                                  [](GElf_Addr pc, const Symbol& s) { return pc < s.begin; });
    // A sized symbol that ends before pc may sit inside a bigger one; look one step back.
    for (int steps = 0; steps < 2 && after != symbols_.begin(); ++steps) {
      --after;
      if (after->size == 0 || pc < after->begin + after->size) return demangle(after->name);
    }
    return {};
  }

  void index_symbols() {
    symbols_indexed_ = true;
    const int count = dwfl_module_getsymtab(module_);
    for (int i = 0; i < count; ++i) {
      GElf_Sym symbol;
      GElf_Addr address = 0;
      GElf_Word section = 0;
      const char* name =
          dwfl_module_getsym_info(module_, i, &symbol, &address, &section, nullptr, nullptr);
      const int type = GELF_ST_TYPE(symbol.st_info);
      if (name == nullptr || *name == '\0' || section == SHN_UNDEF ||
          (type != STT_FUNC && type != STT_GNU_IFUNC))
        continue;
      // Aliases share an address: prefer a sized symbol, then global, then weak binding.
      const int binding = GELF_ST_BIND(symbol.st_info);
      const int preference = (symbol.st_size > 0 ? 4 : 0) +
                             (binding == STB_GLOBAL ? 2 : binding == STB_WEAK ? 1 : 0);
      symbols_.push_back({address, symbol.st_size, preference, name});
    }
    std::sort(symbols_.begin(), symbols_.end(), [](const Symbol& a, const Symbol& b) {
      return a.begin != b.begin ? a.begin < b.begin : a.preference > b.preference;
    });
    symbols_.erase(std::unique(symbols_.begin(), symbols_.end(),
                               [](const Symbol& a, const Symbol& b) { return a.begin == b.begin; }),
                   symbols_.end());
  }

  std::string path_;
  std::shared_ptr<const SymbolCache> cache_;  // null: none
  std::string identity_;  // the file as the cache knows it (SymbolCache::module_identity)
  bool opened_ = false;
  bool symbolized_anew_ = false;  // frames_ holds frames the cache does not
  Dwfl* dwfl_ = nullptr;
  Dwfl_Module* module_ = nullptr;  // null when the file is missing or not ELF
  Dwarf_Addr begin_ = 0, end_ = 0;  // what its PT_LOAD segments span
  ModuleFrames frames_;  // by module offset: from the cache, and symbolized here
  std::unordered_map<const void*, std::vector<FunctionRange>> function_ranges_by_unit_;
  // By Dwarf_Die::addr, which points at the DIE's bytes: unique even across the main and
  // a dwz alternate file, where DIE offsets are not.
  std::unordered_map<const void*, std::string> qualified_names_;
  std::unordered_map<const char*, std::string> demangled_names_;  // by libdw's string
  std::vector<Symbol> symbols_;
  bool symbols_indexed_ = false;
};

Symbolizer::Symbolizer() : Symbolizer(SymbolCache::directory_from_environment()) {}

Symbolizer::Symbolizer(const std::optional<std::string>& cache_directory) {
  if (cache_directory) cache_ = std::make_shared<const SymbolCache>(*cache_directory);
}

Symbolizer::~Symbolizer() {
  try {
    bool saved = false;
    for (auto& [path, module] : modules_) saved = module->save() || saved;
    if (saved) cache_->prune();
  } catch (const std::exception&) {
    // Out of memory while encoding: the next run symbolizes it again.
  }
}

size_t Symbolizer::modules_opened() const {
  size_t opened = 0;
  for (const auto& [path, module] : modules_) opened += module->opened() ? 1 : 0;
  return opened;
}

Symbolizer::Symbolizer(Symbolizer&&) noexcept = default;
Symbolizer& Symbolizer::operator=(Symbolizer&&) noexcept = default;

void Symbolizer::warm(const std::string& module_path) {
  try {
    module(module_path).warm();
  } catch (const std::exception&) {
    // Out of memory: the lookups will try again, one at a time.
  }
}

void Symbolizer::warm_c_library() {
  std::vector<std::string> paths;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        const std::string_view path = info->dlpi_name ? info->dlpi_name : "";
        const std::string_view name = path.substr(path.rfind('/') + 1);
        if (name.starts_with("libc.so") || name.starts_with("ld-linux")) {
          static_cast<std::vector<std::string>*>(data)->emplace_back(path);
        }
        return 0;
      },
      &paths);
  // Outside dl_iterate_phdr's lock: opening a module may allocate, and libdw may dlopen.
  for (const std::string& path : paths) warm(path);
}

Symbolizer::Module& Symbolizer::module(const std::string& module_path) {
  auto found = modules_.find(module_path);
  if (found == modules_.end())
    found = modules_.emplace(module_path, std::make_unique<Module>(module_path, cache_)).first;
  return *found->second;
}

std::vector<Frame> Symbolizer::symbolize(const std::string& module_path, uint64_t load_bias,
                                         uint64_t address, bool is_return_address) {
  try {
    std::vector<Frame> frames = module(module_path).frames(address - load_bias, is_return_address);
    for (Frame& frame : frames) {
      frame.module = module_path;
      frame.address = address;
      frame.module_offset = address - load_bias;
    }
    return frames;
  } catch (const std::exception&) {
    // Only std::bad_alloc can come here (libdw is C); a bare frame still helps the report.
    Frame frame;
    frame.module = module_path;
    frame.address = address;
    frame.module_offset = address - load_bias;
    return {frame};
  }
}

}  // namespace memstage::reports
