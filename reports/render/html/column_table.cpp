// Flattens objects into column_table's keys and rows (column_table.h).
#include "reports/render/html/column_table.h"

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace memstage::reports {
namespace {

using nlohmann::json;

// The table's keys: each leaf path's column, numbered as first met.
class Columns {
 public:
  size_t of(const std::vector<std::string>& path) {
    std::string joined;
    for (const std::string& part : path) joined += part + '\x1f';
    const auto [it, added] = index_.try_emplace(std::move(joined), keys_.size());
    if (added) keys_.push_back(path);
    return it->second;
  }
  json take() { return std::move(keys_); }

 private:
  std::unordered_map<std::string, size_t> index_;
  json keys_ = json::array();
};

// Each leaf under `value` (a non-empty object is not one) with its column.
void flatten(const json& value, std::vector<std::string>& path, Columns& columns,
             std::vector<std::pair<size_t, const json*>>& leaves) {
  if (!value.is_object() || value.empty()) {
    leaves.emplace_back(columns.of(path), &value);
    return;
  }
  for (const auto& [key, child] : value.items()) {
    path.push_back(key);
    flatten(child, path, columns, leaves);
    path.pop_back();
  }
}

}  // namespace

json column_table(const json& objects) {
  Columns columns;
  std::vector<std::vector<std::pair<size_t, const json*>>> leaves(objects.size());
  std::vector<std::string> path;
  for (size_t i = 0; i < objects.size(); ++i) {
    for (const auto& [key, child] : objects[i].items()) {
      path.assign(1, key);
      flatten(child, path, columns, leaves[i]);
    }
  }
  json keys = columns.take();
  json rows = json::array();
  for (const auto& row_leaves : leaves) {
    json row(json::value_t::array);
    row.get_ref<json::array_t&>().resize(keys.size());  // nulls where the object has no leaf
    for (const auto& [column, value] : row_leaves) row[column] = *value;
    rows.push_back(std::move(row));
  }
  return json{{"keys", std::move(keys)}, {"rows", std::move(rows)}};
}

}  // namespace memstage::reports
