// CSV and fastText parsing, plain and gzipped, good rows and bad ones.
#include <catch2/catch.hpp>

#include <vector>

#include "helpers.h"
#include "trainer/error.h"
#include "trainer/examples.h"
#include "trainer/line_reader.h"

using trainer::Example;
using trainer::ExampleReader;
using trainer::Format;

namespace {

std::vector<Example> read_all(const std::string& path, Format format, bool skip = false,
                              std::uint64_t* bad = nullptr) {
  ExampleReader reader(path, format, skip);
  std::vector<Example> out;
  Example e;
  while (reader.next(e)) out.push_back(e);
  if (bad != nullptr) *bad = reader.bad_rows();
  return out;
}

}  // namespace

TEST_CASE("format from the file name", "[readers]") {
  CHECK(trainer::format_from_path("a.csv") == Format::csv);
  CHECK(trainer::format_from_path("dir/a.train.csv.gz") == Format::csv);
  CHECK(trainer::format_from_path("a.ft") == Format::fasttext);
  CHECK(trainer::format_from_path("a.ft.gz") == Format::fasttext);
  CHECK(trainer::format_from_path("a.txt") == Format::fasttext);
  CHECK_THROWS_AS(trainer::format_from_path("a.json"), trainer::Error);
}

TEST_CASE("CSV records: quotes, embedded commas, escaped quotes", "[readers][csv]") {
  std::vector<std::string> fields;
  std::size_t n = 0;
  CHECK(trainer::split_csv_record("plain,x", fields, n).empty());
  REQUIRE(n == 2);
  CHECK(fields[0] == "plain");
  CHECK(fields[1] == "x");

  CHECK(trainer::split_csv_record(R"("a, b, c",lbl)", fields, n).empty());
  REQUIRE(n == 2);
  CHECK(fields[0] == "a, b, c");

  CHECK(trainer::split_csv_record(R"("she said ""hi""",y)", fields, n).empty());
  CHECK(fields[0] == R"(she said "hi")");

  CHECK(trainer::split_csv_record(R"(,"")", fields, n).empty());
  REQUIRE(n == 2);
  CHECK(fields[0].empty());
  CHECK(fields[1].empty());

  CHECK(trainer::split_csv_record("\"two\nlines\",z", fields, n).empty());
  CHECK(fields[0] == "two\nlines");

  CHECK_FALSE(trainer::split_csv_record(R"("open,x)", fields, n).empty());
  CHECK_FALSE(trainer::split_csv_record(R"("closed"junk,x)", fields, n).empty());
  CHECK_FALSE(trainer::split_csv_record(R"(mid"quote,x)", fields, n).empty());

  CHECK(trainer::csv_record_incomplete(R"("still open, here)"));
  CHECK_FALSE(trainer::csv_record_incomplete(R"("closed ""quote"" here",x)"));
}

TEST_CASE("CSV file: header, CRLF, multi-line field, column order", "[readers][csv]") {
  trainer_test::TempDir dir;
  const auto path = dir.file("a.csv",
                             "text,label\r\n"
                             "\"hello, world\",greet\r\n"
                             "\"a \"\"quoted\"\" word\",quote\r\n"
                             "\"first line\nsecond line\",multi\r\n"
                             "\r\n"
                             "last,end");
  const auto rows = read_all(path, Format::csv);
  REQUIRE(rows.size() == 4);
  CHECK(rows[0].text == "hello, world");
  CHECK(rows[0].label == "greet");
  CHECK(rows[0].line == 2);
  CHECK(rows[1].text == "a \"quoted\" word");
  CHECK(rows[2].text == "first line\nsecond line");
  CHECK(rows[3].text == "last");
  CHECK(rows[3].label == "end");
  CHECK(rows[3].line == 7);

  const auto swapped = dir.file("b.csv", "id,label,text\n1,x,some text\n");
  const auto rows2 = read_all(swapped, Format::csv);
  REQUIRE(rows2.size() == 1);
  CHECK(rows2[0].text == "some text");
  CHECK(rows2[0].label == "x");
}

TEST_CASE("CSV bad rows: an error naming the line, or skipped and counted", "[readers][csv]") {
  trainer_test::TempDir dir;
  const auto path = dir.file("bad.csv",
                             "text,label\n"
                             "good one,a\n"
                             "too,many,fields\n"
                             "\"stray\"x,b\n"
                             "no label,\n"
                             "good two,b\n");
  try {
    read_all(path, Format::csv);
    FAIL("a malformed row must throw");
  } catch (const trainer::Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("bad.csv:3") && Catch::Contains("too many fields"));
  }
  std::uint64_t bad = 0;
  const auto rows = read_all(path, Format::csv, true, &bad);
  CHECK(bad == 3);
  REQUIRE(rows.size() == 2);
  CHECK(rows[1].text == "good two");

  const auto unterminated = dir.file("open.csv", "text,label\n\"never closed,a\nmore,b\n");
  CHECK_THROWS_WITH(read_all(unterminated, Format::csv), Catch::Contains("open.csv:2") &&
                                                             Catch::Contains("unterminated"));
}

TEST_CASE("CSV unclosed quote: an error naming the line it opened on, even when skipping bad rows",
          "[readers][csv]") {
  trainer_test::TempDir dir;
  // A record that spans lines legitimately, then one whose quote (on its second line)
  // never closes: 40,000 lines follow it, all read into that one field.
  std::string text = "text,label\n\"two\nlines\",a\ngood,b\nfirst line,\"x\n";
  for (int i = 0; i < 40000; ++i) text += "more words,b\n";
  const auto path = dir.file("open.csv", text);
  for (const bool skip : {false, true}) {
    try {
      read_all(path, Format::csv, skip);
      FAIL("an unclosed quote must throw");
    } catch (const trainer::Error& e) {
      CHECK_THAT(e.what(), Catch::Contains("open.csv:5: malformed row: unterminated quoted field") &&
                               Catch::Contains("ends inside it at line 40005"));
    }
  }
  // The quote that opened the field is named, not an escaped quote ('""') inside it.
  const auto escaped = dir.file("escaped.csv", "text,label\n\"a\nb \"\"quoted\"\" c\nd\n");
  CHECK_THROWS_WITH(read_all(escaped, Format::csv), Catch::Contains("escaped.csv:2:"));
  // With a record closed across lines before it, the field that never closes is named.
  const auto later = dir.file("later.csv", "text,label\n\"a\nb\",x\n\"c\nd\n");
  CHECK_THROWS_WITH(read_all(later, Format::csv), Catch::Contains("later.csv:4:"));
}

TEST_CASE("CSV header problems and empty files", "[readers][csv]") {
  trainer_test::TempDir dir;
  CHECK_THROWS_WITH(read_all(dir.file("empty.csv", ""), Format::csv), Catch::Contains("empty file"));
  CHECK_THROWS_WITH(read_all(dir.file("h.csv", "words,class\nx,y\n"), Format::csv),
                    Catch::Contains("'text'"));
  CHECK_THROWS_WITH(read_all(dir.path("missing.csv"), Format::csv),
                    Catch::Contains("missing.csv") && Catch::Contains("No such file"));
}

TEST_CASE("fastText lines", "[readers][fasttext]") {
  Example e;
  std::string_view why;
  REQUIRE(trainer::parse_fasttext_line("__label__spam buy  now\tplease", e, why));
  CHECK(e.label == "spam");
  CHECK(e.text == "buy now please");
  REQUIRE(trainer::parse_fasttext_line("__label__a __label__b two labels", e, why));
  CHECK(e.label == "a");
  CHECK(e.text == "two labels");
  REQUIRE(trainer::parse_fasttext_line("__label__a text with __label__inside", e, why));
  CHECK(e.text == "text with __label__inside");
  CHECK_FALSE(trainer::parse_fasttext_line("no label here", e, why));
  CHECK_FALSE(trainer::parse_fasttext_line("__label__x", e, why));
  CHECK(why == "no text after the label");
}

TEST_CASE("fastText file, gzipped, with a bad row", "[readers][fasttext]") {
  trainer_test::TempDir dir;
  const auto path = dir.gz_file("a.ft.gz", "__label__x one two\n\nunlabelled\n__label__y three\n");
  CHECK_THROWS_WITH(read_all(path, Format::fasttext), Catch::Contains("a.ft.gz:3"));
  std::uint64_t bad = 0;
  const auto rows = read_all(path, Format::fasttext, true, &bad);
  CHECK(bad == 1);
  REQUIRE(rows.size() == 2);
  CHECK(rows[1].label == "y");
  CHECK(rows[1].line == 4);
}

TEST_CASE("line reader: lines longer than its buffer, rewind, last line without newline",
          "[readers]") {
  trainer_test::TempDir dir;
  const std::string long_line(10000, 'q');
  const auto path = dir.file("l.txt", "a\r\n" + long_line + "\nend");
  trainer::LineReader reader(path, 64);  // a tiny buffer forces refills mid-line
  std::string line;
  for (int pass = 0; pass < 2; ++pass) {
    REQUIRE(reader.next(line));
    CHECK(line == "a");
    REQUIRE(reader.next(line));
    CHECK(line == long_line);
    REQUIRE(reader.next(line));
    CHECK(line == "end");
    CHECK(reader.line_number() == 3);
    CHECK_FALSE(reader.next(line));
    reader.rewind();
  }
}

TEST_CASE("the real data sets parse in both formats alike", "[readers][data]") {
  // The first rows of the Debian test set, CSV and fastText: same texts, same labels.
  ExampleReader csv(trainer_test::data_file("debian_descriptions.test.csv.gz"), Format::csv, false);
  ExampleReader ft(trainer_test::data_file("debian_descriptions.test.ft.gz"), Format::fasttext, false);
  Example a, b;
  for (int i = 0; i < 500; ++i) {
    REQUIRE(csv.next(a));
    REQUIRE(ft.next(b));
    REQUIRE(a.label == b.label);
    REQUIRE(a.text == b.text);
  }
}
