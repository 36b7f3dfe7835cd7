// A list of JSON objects written as one table: each leaf's path once, then each object's
// leaves in that order. A long run's page holds thousands of stage rows whose keys were most
// of their bytes; the page's rowsOf (script/common.js) makes the objects again.
//   {"keys": [["name"], ["figures", "peak_heap_bytes"], ...], "rows": [[...], ...]}
// A leaf an object lacks is null, and so is an object absent from a row (rowsOf then leaves
// out what would be under it); an empty object is a leaf.
#pragma once

#include <nlohmann/json.hpp>

namespace memstage::reports {

nlohmann::json column_table(const nlohmann::json& objects);

}  // namespace memstage::reports
