#include "harness/compare/allocator_tuning.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <stdexcept>
#include <string_view>

namespace memstage::compare {

namespace {

// glibc 2.36's environment aliases of its malloc tunables (elf/dl-tunables.list): any other
// MALLOC_* name is ignored by glibc without a word, so it is refused here instead.
constexpr std::array<std::string_view, 8> kGlibcEnvironment = {
    "MALLOC_ARENA_MAX",       "MALLOC_ARENA_TEST",      "MALLOC_CHECK_",    "MALLOC_MMAP_MAX_",
    "MALLOC_MMAP_THRESHOLD_", "MALLOC_PERTURB_",        "MALLOC_TOP_PAD_",  "MALLOC_TRIM_THRESHOLD_"};

std::string upper(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::toupper(c); });
  return text;
}

// "a=1,b=2" -> {"a=1", "b=2"}; empty items dropped.
std::vector<std::string> split_settings(const std::string& text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(',', start), text.size());
    if (end > start) items.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return items;
}

bool is_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](unsigned char c) {
           return std::isalnum(c) || c == '_' || c == '.';
         });
}

// Appends "item" to the variable `name` of `env`, separated by `separator`, creating it first.
void append_to(Environment& env, const std::string& name, const std::string& item, char separator) {
  for (auto& [key, value] : env) {
    if (key == name) {
      value += separator + item;
      return;
    }
  }
  env.emplace_back(name, item);
}

void add_glibc(Environment& env, const std::string& spec, const std::string& name, const std::string& value) {
  if (name.starts_with("glibc.malloc.")) {
    append_to(env, "GLIBC_TUNABLES", name + "=" + value, ':');
    return;
  }
  const std::string variable = name.starts_with("M_") ? "MALLOC_" + name.substr(2) : name;
  if (std::find(kGlibcEnvironment.begin(), kGlibcEnvironment.end(), variable) == kGlibcEnvironment.end()) {
    throw std::invalid_argument("--tune " + spec + ": glibc reads no " + variable +
                                " (MALLOC_ARENA_MAX, MALLOC_ARENA_TEST, MALLOC_CHECK_, MALLOC_MMAP_MAX_, "
                                "MALLOC_MMAP_THRESHOLD_, MALLOC_PERTURB_, MALLOC_TOP_PAD_, MALLOC_TRIM_THRESHOLD_, "
                                "their M_ names, or glibc.malloc.* tunables)");
  }
  env.emplace_back(variable, value);
}

// A name with or without the allocator's prefix: release_rate and TCMALLOC_RELEASE_RATE alike.
std::string prefixed(const std::string& prefix, const std::string& name) {
  return name.starts_with(prefix) ? name : prefix + upper(name);
}

void add_setting(Tuning& tuning, const std::string& spec, const std::string& name, const std::string& value) {
  if (tuning.allocator == "glibc") {
    add_glibc(tuning.environment, spec, name, value);
  } else if (tuning.allocator == "jemalloc") {
    append_to(tuning.environment, "MALLOC_CONF", name + ":" + value, ',');
  } else {
    const std::string prefix = tuning.allocator == "tcmalloc" ? "TCMALLOC_" : "MIMALLOC_";
    tuning.environment.emplace_back(prefixed(prefix, name), value);
  }
}

}  // namespace

Tuning parse_tuning(const std::string& spec) {
  const size_t colon = spec.find(':');
  if (colon == std::string::npos) {
    throw std::invalid_argument("--tune wants ALLOCATOR:NAME=VALUE,… (e.g. glibc:MALLOC_ARENA_MAX=2), not '" + spec + "'");
  }
  Tuning tuning;
  tuning.allocator = spec.substr(0, colon);
  tuning.name = spec;
  if (tuning.allocator != "glibc" && tuning.allocator != "jemalloc" && tuning.allocator != "tcmalloc" &&
      tuning.allocator != "mimalloc") {
    throw std::invalid_argument("--tune " + spec + ": unknown allocator '" + tuning.allocator +
                                "' (glibc, jemalloc, tcmalloc or mimalloc)");
  }
  const std::vector<std::string> settings = split_settings(spec.substr(colon + 1));
  if (settings.empty()) throw std::invalid_argument("--tune " + spec + ": no setting after '" + tuning.allocator + ":'");
  for (const std::string& setting : settings) {
    const size_t eq = setting.find('=');
    if (eq == std::string::npos || eq + 1 == setting.size() || !is_name(setting.substr(0, eq))) {
      throw std::invalid_argument("--tune " + spec + ": '" + setting + "' is not NAME=VALUE");
    }
    const std::string name = setting.substr(0, eq), value = setting.substr(eq + 1);
    if (value.find_first_of(":=") != std::string::npos) {
      throw std::invalid_argument("--tune " + spec + ": the value of " + name + " holds ':' or '='");
    }
    tuning.settings.emplace_back(name, value);
    add_setting(tuning, spec, name, value);
  }
  return tuning;
}

std::vector<std::string> suggestion_grid(const std::string& allocator) {
  if (allocator == "glibc") {
    return {"glibc:MALLOC_ARENA_MAX=1", "glibc:MALLOC_ARENA_MAX=2", "glibc:M_TRIM_THRESHOLD_=131072",
            "glibc:M_MMAP_THRESHOLD_=131072", "glibc:M_MMAP_THRESHOLD_=1048576,M_TRIM_THRESHOLD_=1048576"};
  }
  if (allocator == "jemalloc") {
    return {"jemalloc:dirty_decay_ms=0", "jemalloc:dirty_decay_ms=0,muzzy_decay_ms=0", "jemalloc:narenas=1"};
  }
  if (allocator == "tcmalloc") {
    return {"tcmalloc:TCMALLOC_RELEASE_RATE=0", "tcmalloc:TCMALLOC_RELEASE_RATE=10",
            "tcmalloc:TCMALLOC_AGGRESSIVE_DECOMMIT=true"};
  }
  if (allocator == "mimalloc") {
    return {"mimalloc:MIMALLOC_SEGMENT_DECOMMIT_DELAY=0", "mimalloc:MIMALLOC_DECOMMIT_DELAY=0",
            "mimalloc:MIMALLOC_EAGER_COMMIT=0"};
  }
  return {};
}

}  // namespace memstage::compare
