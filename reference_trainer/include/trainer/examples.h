// Labelled examples from a CSV file (header naming a `text` and a `label` column, RFC 4180
// quoting, quoted fields may span lines) or a fastText file (`__label__X the text`),
// either one optionally gzip-compressed. One reader, streamed, buffers reused.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trainer/line_reader.h"

namespace trainer {

enum class Format { csv, fasttext };

// From the file name: .csv → csv; .ft, .txt, .fasttext → fasttext; a trailing .gz is ignored.
// Throws Error when the extension says neither.
Format format_from_path(std::string_view path);
Format parse_format(std::string_view name);  // "csv" | "fasttext" | "ft"

struct Example {
  std::string text;
  std::string label;
  std::uint64_t line = 0;  // line where the record starts (1-based, header included)
};

// Splits one CSV record held in `record` into `fields` (reusing their capacity).
// Returns an empty string when the record is well formed, otherwise why it is not.
// `record` may contain newlines (a quoted field that spanned lines).
std::string_view split_csv_record(std::string_view record, std::vector<std::string>& fields,
                                  std::size_t& field_count);

// True when `record` ends inside an open quoted field (the record continues on the next line).
bool csv_record_incomplete(std::string_view record);

// Follows the quoting of a CSV record as its lines arrive, each line scanned once, so that
// a record of many lines (or an unclosed quote running to the end of the file) costs time
// linear in its length. Remembers the line of the quote that left the record open.
class CsvQuoteTracker {
 public:
  void start(std::string_view first_line, std::uint64_t line_number) {
    open_ = false;
    add(first_line, line_number);
  }
  void add(std::string_view line, std::uint64_t line_number);
  bool open() const { return open_; }
  std::uint64_t opened_on_line() const { return opened_on_line_; }

 private:
  bool open_ = false;
  std::uint64_t opened_on_line_ = 0;
};

// Parses a fastText line: the first `__label__X` token gives the label; further label
// tokens are dropped (one label per example); the rest is the text. Returns false
// (with `why` set) when the line has no label or no text.
bool parse_fasttext_line(std::string_view line, Example& out, std::string_view& why);

class ExampleReader {
 public:
  // Opens `path` and, for CSV, reads the header. Throws Error (naming the file) when it
  // is missing, empty, or its header has no `text`/`label` column.
  ExampleReader(const std::string& path, Format format, bool skip_bad_rows);
  // The same over `text` held in memory (must outlive the reader); `name` for messages.
  ExampleReader(std::string name, std::string_view text, Format format, bool skip_bad_rows);

  // Next well-formed example. A malformed one throws Error naming file and line, or,
  // with skip_bad_rows, is counted in bad_rows() and skipped. Blank lines are ignored.
  bool next(Example& out);

  // Back to the first example (after the header), buffers kept.
  void rewind();

  std::uint64_t bad_rows() const { return bad_rows_; }
  std::uint64_t bytes_read() const { return lines_.bytes_read(); }
  const std::string& path() const { return lines_.path(); }

 private:
  void read_header();
  bool next_csv(Example& out);
  bool next_fasttext(Example& out);
  void bad_row(std::uint64_t line, std::string_view why);

  std::unique_ptr<LineReader> owned_lines_;  // LineReader is not movable
  LineReader& lines_;
  Format format_;
  bool skip_bad_rows_;
  std::uint64_t bad_rows_ = 0;
  std::size_t text_column_ = 0;
  std::size_t label_column_ = 0;
  std::size_t column_count_ = 0;
  std::string record_;
  std::string continuation_;
  CsvQuoteTracker quotes_;
  std::vector<std::string> fields_;
};

}  // namespace trainer
