#include "harness/compare/run_plan.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>

#include "harness/compare/word_split.h"

namespace memstage::compare {

namespace fs = std::filesystem;

namespace {

// An ELF shared object (e_type ET_DYN): what LD_PRELOAD can load, and nothing else
// (/etc/passwd given by mistake would otherwise run on glibc under its name).
bool is_shared_object(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char header[18] = {};
  in.read(reinterpret_cast<char*>(header), sizeof header);
  const bool elf = in.gcount() == sizeof header && header[0] == 0x7f && header[1] == 'E' && header[2] == 'L' && header[3] == 'F';
  const unsigned e_type = header[5] == 2 ? (header[16] << 8 | header[17]) : (header[17] << 8 | header[16]);  // EI_DATA
  return elf && e_type == 3;  // ET_DYN
}

}  // namespace

AllocatorChoice resolve_allocator(const std::string& name_or_path, const std::vector<std::string>& library_dirs) {
  if (name_or_path == "glibc" || name_or_path == "system") return {"glibc", "", {}};
  if (name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".so") ||
      name_or_path.find(".so.") != std::string::npos) {
    std::error_code ec;
    if (!fs::is_regular_file(name_or_path, ec)) throw std::invalid_argument("allocator library " + name_or_path + " not found");
    if (!is_shared_object(name_or_path)) {
      throw std::invalid_argument("allocator library " + name_or_path + " is not a shared library (an ELF .so to preload)");
    }
    std::string name = fs::path(name_or_path).filename().string();
    for (const char* known : {"jemalloc", "tcmalloc", "mimalloc"}) {
      if (name.find(known) != std::string::npos) name = known;
    }
    return {name, fs::absolute(name_or_path).lexically_normal().string(), {}};
  }
  // The sonames Debian's runtime packages install: no -dev package needed.
  std::vector<std::string> sonames;
  if (name_or_path == "jemalloc") sonames = {"libjemalloc.so.2", "libjemalloc.so"};
  if (name_or_path == "tcmalloc") sonames = {"libtcmalloc_minimal.so.4", "libtcmalloc.so.4", "libtcmalloc_minimal.so"};
  if (name_or_path == "mimalloc") sonames = {"libmimalloc.so.2", "libmimalloc.so"};
  if (sonames.empty()) {
    throw std::invalid_argument("unknown allocator '" + name_or_path +
                                "' (glibc, jemalloc, tcmalloc, mimalloc, or a path to a .so)");
  }
  std::vector<std::string> dirs = library_dirs;
  if (dirs.empty()) dirs = {"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
                            "/usr/local/lib"};
  for (const auto& soname : sonames) {
    for (const auto& dir : dirs) {
      const fs::path candidate = fs::path(dir) / soname;
      std::error_code ec;
      if (fs::exists(candidate, ec)) return {name_or_path, candidate.string(), {}};
    }
  }
  throw std::invalid_argument(name_or_path + " not found (looked for " + sonames.front() +
                              "; on Debian: apt install " +
                              (name_or_path == "jemalloc"   ? "libjemalloc2"
                               : name_or_path == "tcmalloc" ? "libtcmalloc-minimal4"
                                                            : "libmimalloc2.0") +
                              ")");
}

AllocatorChoice tuned_allocator(const Tuning& tuning, const std::vector<std::string>& library_dirs) {
  AllocatorChoice choice = resolve_allocator(tuning.allocator, library_dirs);
  choice.name = tuning.name;
  choice.environment = tuning.environment;
  return choice;
}

std::pair<std::string, std::vector<std::string>> parse_variant(const std::string& spec) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw std::invalid_argument("--variant wants NAME='CMD ARGS', not '" + spec + "'");
  }
  std::vector<std::string> command = split_words(std::string_view(spec).substr(eq + 1));
  if (command.empty()) throw std::invalid_argument("--variant " + spec.substr(0, eq) + " has no command");
  return {spec.substr(0, eq), std::move(command)};
}

std::vector<Subject> make_subjects(const std::vector<Variant>& variants, const std::vector<std::string>& command,
                                   const std::vector<AllocatorChoice>& allocators) {
  std::vector<Variant> all = variants;
  if (all.empty()) all.push_back({"default", command});
  std::vector<Subject> subjects;
  std::set<std::string> names;
  for (const Variant& v : all) {
    if (allocators.empty()) {
      subjects.push_back({v.name, v.command, std::nullopt});
    }
    for (const AllocatorChoice& a : allocators) {
      std::string name = all.size() == 1 && variants.empty() ? a.name
                         : allocators.size() == 1            ? v.name
                                                             : v.name + "+" + a.name;
      subjects.push_back({name, v.command, a});
    }
  }
  for (const Subject& s : subjects) {
    if (!names.insert(s.name).second) throw std::invalid_argument("'" + s.name + "' is given twice");
  }
  return subjects;
}

const char* mode_name(RunMode mode) { return mode == RunMode::kFull ? "full" : "stats"; }

std::string folder_name(const std::string& name) {
  std::string out;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-';
    out.push_back(ok ? c : '_');
  }
  if (out.empty() || out == "." || out == "..") out = "_" + out;
  return out;
}

std::vector<PlannedRun> plan_runs(const std::vector<Subject>& subjects, unsigned repeat) {
  std::vector<PlannedRun> runs;
  for (size_t s = 0; s < subjects.size(); ++s) {
    runs.push_back({s, RunMode::kFull, 0, folder_name(subjects[s].name) + "/full"});
  }
  for (unsigned round = 0; round < repeat; ++round) {
    for (size_t s = 0; s < subjects.size(); ++s) {
      runs.push_back({s, RunMode::kStats, round,
                      folder_name(subjects[s].name) + "/stats-" + std::to_string(round + 1)});
    }
  }
  return runs;
}

}  // namespace memstage::compare
