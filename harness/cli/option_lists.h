// Lists on the command line are one comma-separated word ("glibc,jemalloc"), so that
// they never swallow the words of the command after "--".
#pragma once

#include <string>
#include <vector>

namespace memstage::harness {

// "a,b,,c" -> {"a", "b", "c"}
inline std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> items;
  std::string item;
  for (char c : text + ",") {
    if (c != ',') {
      item += c;
    } else if (!item.empty()) {
      items.push_back(std::move(item));
      item.clear();
    }
  }
  return items;
}

}  // namespace memstage::harness
