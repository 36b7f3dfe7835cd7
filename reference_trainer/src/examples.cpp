#include "trainer/examples.h"

#include <algorithm>

#include "trainer/error.h"

namespace trainer {

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool is_blank(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t'; });
}

constexpr std::string_view kLabelPrefix = "__label__";

}  // namespace

Format format_from_path(std::string_view path) {
  if (ends_with(path, ".gz")) path.remove_suffix(3);
  if (ends_with(path, ".csv")) return Format::csv;
  if (ends_with(path, ".ft") || ends_with(path, ".txt") || ends_with(path, ".fasttext")) {
    return Format::fasttext;
  }
  throw Error(std::string(path) +
              ": cannot tell the format from the extension (.csv, .ft, .txt); use --format");
}

Format parse_format(std::string_view name) {
  if (name == "csv") return Format::csv;
  if (name == "fasttext" || name == "ft") return Format::fasttext;
  throw Error("unknown format '" + std::string(name) + "' (csv or fasttext)");
}

void CsvQuoteTracker::add(std::string_view line, std::uint64_t line_number) {
  // Outside quotes, a '"' opens a quoted field; inside, '""' is an escaped quote and a
  // lone '"' closes it. Counting quotes is enough: both rules flip the state per quote.
  // A quote right after the one that closed is an escaped quote ('""'): the field stays
  // the one opened before, on its line.
  std::size_t closed_at = std::string_view::npos;
  for (std::size_t at = line.find('"'); at != std::string_view::npos; at = line.find('"', at + 1)) {
    open_ = !open_;
    if (!open_) {
      closed_at = at;
    } else if (closed_at == std::string_view::npos || closed_at + 1 != at) {
      opened_on_line_ = line_number;
    }
  }
}

bool csv_record_incomplete(std::string_view record) {
  CsvQuoteTracker quotes;
  quotes.start(record, 0);
  return quotes.open();
}

std::string_view split_csv_record(std::string_view record, std::vector<std::string>& fields,
                                  std::size_t& field_count) {
  field_count = 0;
  std::size_t i = 0;
  const std::size_t n = record.size();
  for (;;) {
    if (field_count == fields.size()) fields.emplace_back();
    std::string& field = fields[field_count++];
    field.clear();
    if (i < n && record[i] == '"') {
      ++i;
      for (;;) {
        if (i >= n) return "unterminated quoted field";
        const char c = record[i++];
        if (c != '"') {
          field.push_back(c);
        } else if (i < n && record[i] == '"') {
          field.push_back('"');
          ++i;
        } else {
          break;  // closing quote
        }
      }
      if (i == n) return {};
      if (record[i] != ',') return "character after a closing quote (expected ',')";
      ++i;
    } else {
      const std::size_t comma = record.find(',', i);
      const std::size_t stop = comma == std::string_view::npos ? n : comma;
      const std::string_view raw = record.substr(i, stop - i);
      if (raw.find('"') != std::string_view::npos) return "quote inside an unquoted field";
      field.assign(raw);
      if (comma == std::string_view::npos) return {};
      i = comma + 1;
    }
  }
}

bool parse_fasttext_line(std::string_view line, Example& out, std::string_view& why) {
  out.text.clear();
  out.label.clear();
  std::size_t i = 0;
  const std::size_t n = line.size();
  bool labels_done = false;
  while (i < n) {
    while (i < n && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i >= n) break;
    std::size_t j = i;
    while (j < n && line[j] != ' ' && line[j] != '\t') ++j;
    const std::string_view token = line.substr(i, j - i);
    if (!labels_done && token.substr(0, kLabelPrefix.size()) == kLabelPrefix) {
      if (out.label.empty()) out.label.assign(token.substr(kLabelPrefix.size()));
    } else {
      labels_done = true;
      if (!out.text.empty()) out.text.push_back(' ');
      out.text.append(token);
    }
    i = j;
  }
  if (out.label.empty()) {
    why = "no __label__ at the start of the line";
    return false;
  }
  if (out.text.empty()) {
    why = "no text after the label";
    return false;
  }
  return true;
}

ExampleReader::ExampleReader(const std::string& path, Format format, bool skip_bad_rows)
    : owned_lines_(std::make_unique<LineReader>(path)),
      lines_(*owned_lines_),
      format_(format),
      skip_bad_rows_(skip_bad_rows) {
  if (format_ == Format::csv) read_header();
}

ExampleReader::ExampleReader(std::string name, std::string_view text, Format format,
                             bool skip_bad_rows)
    : owned_lines_(std::make_unique<LineReader>(LineReader::InMemory{}, std::move(name), text)),
      lines_(*owned_lines_),
      format_(format),
      skip_bad_rows_(skip_bad_rows) {
  if (format_ == Format::csv) read_header();
}

void ExampleReader::read_header() {
  std::string header;
  do {
    if (!lines_.next(header)) throw Error(path() + ": empty file (no header line)");
  } while (is_blank(header));
  // A UTF-8 byte order mark would glue itself to the first column name.
  if (header.rfind("\xEF\xBB\xBF", 0) == 0) header.erase(0, 3);
  const std::string_view why = split_csv_record(header, fields_, column_count_);
  if (!why.empty()) {
    throw Error(path() + ":" + std::to_string(lines_.line_number()) + ": bad header: " +
                std::string(why));
  }
  bool have_text = false;
  bool have_label = false;
  for (std::size_t c = 0; c < column_count_; ++c) {
    if (fields_[c] == "text") text_column_ = c, have_text = true;
    if (fields_[c] == "label") label_column_ = c, have_label = true;
  }
  if (!have_text || !have_label) {
    throw Error(path() + ": the CSV header must name a 'text' and a 'label' column, got '" +
                header + "'");
  }
}

void ExampleReader::rewind() {
  lines_.rewind();
  bad_rows_ = 0;  // counted again on the next pass
  if (format_ == Format::csv) read_header();
}

void ExampleReader::bad_row(std::uint64_t line, std::string_view why) {
  if (!skip_bad_rows_) {
    throw Error(path() + ":" + std::to_string(line) + ": malformed row: " + std::string(why) +
                " (--skip-bad-rows skips such rows)");
  }
  ++bad_rows_;
}

bool ExampleReader::next(Example& out) {
  return format_ == Format::csv ? next_csv(out) : next_fasttext(out);
}

bool ExampleReader::next_fasttext(Example& out) {
  while (lines_.next(record_)) {
    if (is_blank(record_)) continue;
    std::string_view why;
    if (parse_fasttext_line(record_, out, why)) {
      out.line = lines_.line_number();
      return true;
    }
    bad_row(lines_.line_number(), why);
  }
  return false;
}

bool ExampleReader::next_csv(Example& out) {
  while (lines_.next(record_)) {
    if (record_.empty()) continue;
    const std::uint64_t start_line = lines_.line_number();
    // A quoted field may hold newlines: keep appending lines until the quotes balance.
    quotes_.start(record_, start_line);
    while (quotes_.open()) {
      if (!lines_.next(continuation_)) {
        // Not a row to skip: the rest of the file went into this field.
        throw Error(path() + ":" + std::to_string(quotes_.opened_on_line()) +
                    ": malformed row: unterminated quoted field: the quote opened on this line is never "
                    "closed (the file ends inside it at line " +
                    std::to_string(lines_.line_number()) + ")");
      }
      record_.push_back('\n');
      record_.append(continuation_);
      quotes_.add(continuation_, lines_.line_number());
    }
    std::size_t count = 0;
    std::string_view why = split_csv_record(record_, fields_, count);
    if (why.empty() && count != column_count_) {
      why = count < column_count_ ? "too few fields" : "too many fields";
    }
    if (why.empty() && fields_[label_column_].empty()) why = "empty label";
    if (!why.empty()) {
      bad_row(start_line, why);
      continue;
    }
    // Copies, not swaps: each buffer then keeps the capacity of the longest field it held,
    // so that re-reading the file (epochs) allocates nothing.
    out.text.assign(fields_[text_column_]);
    out.label.assign(fields_[label_column_]);
    out.line = start_line;
    return true;
  }
  return false;
}

}  // namespace trainer
