#include "harness/files/report_json.h"

#include <sys/stat.h>

#include "harness/files/input_files.h"

namespace memstage::files {

std::string json_error_text(const nlohmann::json::exception& e) {
  std::string message = e.what();
  if (const auto close = message.find("] "); message.starts_with("[json.exception") && close != std::string::npos) {
    message = message.substr(close + 2);
  }
  return message;
}

std::string report_json_path(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return path + (path.ends_with('/') ? "" : "/") + "report.json";
  return path;
}

nlohmann::json parse_report_json(const std::string& text, const std::string& source) {
  nlohmann::json report;
  try {
    report = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw ReportFileError(source + ": invalid JSON: " + json_error_text(e));
  }
  const auto schema = report.is_object() ? report.find("schema") : report.end();
  if (!report.is_object() || schema == report.end() || !schema->is_string() ||
      !schema->get_ref<const std::string&>().starts_with("memstage.report/")) {
    throw ReportFileError(source + " is not a memstage report (no \"schema\": \"memstage.report/N\")");
  }
  return report;
}

nlohmann::json read_report_json(const std::string& path) {
  const std::string file = report_json_path(path);
  struct stat st;
  if (stat(file.c_str(), &st) != 0) {
    throw ReportFileError(file != path ? path + " has no report.json (is it a memstage run folder?)"
                                       : path + ": no such file");
  }
  try {
    return parse_report_json(read_input_file(file, "report", kMaxReportBytes), file);
  } catch (const InputError& e) {
    throw ReportFileError(e.what());
  }
}

}  // namespace memstage::files
