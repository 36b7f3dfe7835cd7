#include "harness/cli/memory_cgroup.h"

#include <stdlib.h>

#include <fstream>
#include <sstream>

namespace memstage::harness {

namespace {

std::string read_small_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The value of `key` in a file of "key value" lines (memory.events, memory.oom_control).
uint64_t keyed_value(const std::string& path, const std::string& key) {
  std::istringstream lines(read_small_file(path));
  std::string name;
  uint64_t value = 0;
  while (lines >> name >> value) {
    if (name == key) return value;
  }
  return 0;
}

// The limit a cgroup sets itself: none for v2's "max" or v1's page-rounded 2^63.
std::optional<uint64_t> limit_of(int version, const std::string& dir) {
  const std::string text = read_small_file(dir + (version == 2 ? "/memory.max" : "/memory.limit_in_bytes"));
  if (text.empty() || text.rfind("max", 0) == 0) return std::nullopt;
  const uint64_t bytes = strtoull(text.c_str(), nullptr, 10);
  return bytes >= (1ull << 62) ? std::nullopt : std::optional<uint64_t>(bytes);
}

struct Mount {
  std::string point, root;
};

// The memory controller's mount: cgroup2, or v1's cgroup with the memory option.
std::optional<Mount> find_mount(int version) {
  std::istringstream lines(read_small_file("/proc/self/mountinfo"));
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string id, parent, devno, root, point, word;
    fields >> id >> parent >> devno >> root >> point;
    while (fields >> word && word != "-") {
    }
    std::string type, source, options;
    fields >> type >> source >> options;
    if (version == 2 && type == "cgroup2") return Mount{point, root};
    if (version == 1 && type == "cgroup" && ("," + options + ",").find(",memory,") != std::string::npos) {
      return Mount{point, root};
    }
  }
  return std::nullopt;
}

// This process's cgroup in the hierarchy: "0::/path" (v2) or "N:...memory...:/path" (v1).
std::optional<std::string> own_cgroup(int version) {
  std::istringstream lines(read_small_file("/proc/self/cgroup"));
  for (std::string line; std::getline(lines, line);) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = "," + line.substr(a + 1, b - a - 1) + ",";
    if (version == 2 ? line.rfind("0::", 0) == 0 : controllers.find(",memory,") != std::string::npos) {
      return line.substr(b + 1);
    }
  }
  return std::nullopt;
}

}  // namespace

OomWatch OomWatch::start() {
  OomWatch watch;
  // v1 first: a hybrid machine mounts cgroup2 without the memory controller.
  for (int version : {1, 2}) {
    const auto mount = find_mount(version);
    const auto cgroup = own_cgroup(version);
    if (!mount || !cgroup) continue;
    std::string name = *cgroup;
    const std::string root = mount->root == "/" ? "" : mount->root;
    if (name.rfind(root, 0) != 0) continue;
    const std::string file = version == 2 ? "/memory.events" : "/memory.oom_control";
    for (std::string rel = name.substr(root.size());; rel = rel.substr(0, rel.rfind('/'))) {
      Level level{mount->point + rel, name.substr(0, root.size() + rel.size())};
      if (level.name.empty()) level.name = "/";
      if (read_small_file(level.dir + file).empty()) break;
      level.kills = keyed_value(level.dir + file, "oom_kill");
      if (version == 2) level.ooms = keyed_value(level.dir + "/memory.events.local", "oom");
      watch.levels_.push_back(level);
      if (rel.empty()) break;
    }
    if (!watch.levels_.empty()) {
      watch.version_ = version;
      break;
    }
  }
  return watch;
}

std::optional<uint64_t> OomWatch::memory_limit_bytes() const {
  std::optional<uint64_t> lowest;
  for (const Level& level : levels_) {
    const auto limit = limit_of(version_, level.dir);
    if (limit && (!lowest || *limit < *lowest)) lowest = limit;
  }
  return lowest;
}

std::optional<reports::OomKill> OomWatch::finish() const {
  if (levels_.empty()) return std::nullopt;
  const std::string file = version_ == 2 ? "/memory.events" : "/memory.oom_control";
  // v2 counts kills hierarchically, v1 in the victim's cgroup: the innermost level's count.
  const uint64_t killed = keyed_value(levels_[0].dir + file, "oom_kill") - levels_[0].kills;
  if (killed == 0) return std::nullopt;
  reports::OomKill oom{levels_[0].name, version_, std::nullopt, killed};
  // The limit hit: v2 says whose (its local oom count rose); v1, the innermost limit set.
  for (const Level& level : levels_) {
    const auto limit = limit_of(version_, level.dir);
    const bool hit = version_ == 2 ? keyed_value(level.dir + "/memory.events.local", "oom") > level.ooms : limit.has_value();
    if (hit) {
      oom.cgroup = level.name;
      oom.limit_bytes = limit;
      break;
    }
  }
  return oom;
}

}  // namespace memstage::harness
