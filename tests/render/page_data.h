// The page's data block as the page reads it: parsed, its column tables (the stage rows,
// reports/render/html/column_table.h) made lists of objects again as the page's rowsOf
// (script/common.js) makes them.
#pragma once

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace memstage::tests {

inline void null_at_path(nlohmann::json& row, const nlohmann::json& path) {
  nlohmann::json* o = &row;
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    const std::string key = path[i];
    if (o->contains(key) && (*o)[key].is_null()) return;  // under an absent object
    o = &(*o)[key];
    if (o->is_null()) *o = nlohmann::json::object();
  }
  if (!o->contains(path.back().get<std::string>())) (*o)[path.back().get<std::string>()] = nullptr;
}

inline nlohmann::json rows_of(const nlohmann::json& table) {
  if (table.is_array()) return table;
  const nlohmann::json& keys = table["keys"];
  std::vector<size_t> by_length(keys.size());
  std::iota(by_length.begin(), by_length.end(), 0);
  std::stable_sort(by_length.begin(), by_length.end(), [&](size_t a, size_t b) { return keys[a].size() < keys[b].size(); });
  nlohmann::json rows = nlohmann::json::array();
  for (const nlohmann::json& values : table["rows"]) {
    nlohmann::json row = nlohmann::json::object();
    for (size_t k = 0; k < keys.size(); ++k) {
      if (values[k].is_null()) continue;
      nlohmann::json* o = &row;
      for (const auto& part : keys[k]) o = &(*o)[part.get<std::string>()];
      *o = values[k];
    }
    for (size_t k : by_length) if (values[k].is_null()) null_at_path(row, keys[k]);
    rows.push_back(std::move(row));
  }
  return rows;
}

inline nlohmann::json parse_page_data(const std::string& text) {
  nlohmann::json data = nlohmann::json::parse(text);
  if (data.contains("stages")) data["stages"] = rows_of(data["stages"]);
  return data;
}

}  // namespace memstage::tests
