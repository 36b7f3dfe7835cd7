// The one reader of report.json (the report contract, docs/architecture.md) for the
// commands that take reports as input: gate, compare, diff and scale. They read the
// contract, not the in-memory model, so that reports written by another version or on
// another machine are read alike.
#pragma once

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace memstage::files {

// Why a report could not be read: one line naming the file.
class ReportFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// nlohmann's message less its "[json.exception.parse_error.101] " prefix: what remains says
// where ("parse error at line 3, column 5: ..."). For every JSON input's error (reports, budgets).
std::string json_error_text(const nlohmann::json::exception& e);

// `path/report.json` when `path` is a folder, else `path` itself.
std::string report_json_path(const std::string& path);

// A report.json, or a run folder holding one, parsed and checked to be a memstage report
// (an object with "schema": "memstage.report/..."). Throws ReportFileError when the file
// is missing or unreadable, is not JSON (with the parser's line and column), holds a
// number out of range, or is not a memstage report.
nlohmann::json read_report_json(const std::string& path);

// The same, from text already read; `source` names it in messages.
nlohmann::json parse_report_json(const std::string& text, const std::string& source);

}  // namespace memstage::files
