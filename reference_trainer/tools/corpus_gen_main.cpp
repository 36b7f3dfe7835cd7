// memstage-corpus-gen: writes a synthetic labelled corpus (Zipf vocabulary, learnable
// labels) of any number of lines, for scaling runs of memstage-trainer.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "trainer/corpus.h"
#include "trainer/error.h"

int main(int argc, char** argv) {
  trainer::CorpusOptions options;
  std::string out_path = "-";
  std::string format = "csv";
  CLI::App app{"memstage-corpus-gen: a synthetic text-classification corpus"};
  app.add_option("--lines", options.lines, "number of examples")->required();
  app.add_option("--out,-o", out_path, "output file; - for stdout")->capture_default_str();
  app.add_option("--format", format, "csv or fasttext")->check(CLI::IsMember({"csv", "fasttext"}))
      ->capture_default_str();
  app.add_option("--classes", options.classes, "number of labels")->capture_default_str();
  app.add_option("--vocabulary", options.vocabulary, "background vocabulary size")->capture_default_str();
  app.add_option("--words", options.words_per_line, "mean words per line")->capture_default_str();
  app.add_option("--zipf", options.zipf_exponent, "Zipf exponent of the background words")
      ->capture_default_str();
  app.add_option("--topic-share", options.topic_share, "share of words from the label's topic")
      ->capture_default_str();
  app.add_option("--seed", options.seed, "random seed")->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "memstage-corpus-gen: %s\n", e.what());
    return 1;
  }
  options.format = format == "csv" ? trainer::Format::csv : trainer::Format::fasttext;
  std::FILE* out = out_path == "-" ? stdout : std::fopen(out_path.c_str(), "wb");
  if (out == nullptr) {
    std::fprintf(stderr, "memstage-corpus-gen: %s: cannot create\n", out_path.c_str());
    return 1;
  }
  try {
    trainer::write_corpus(out, options);
  } catch (const trainer::Error& e) {
    std::fprintf(stderr, "memstage-corpus-gen: %s\n", e.what());
    return 1;
  }
  if (out != stdout && std::fclose(out) != 0) {
    std::fprintf(stderr, "memstage-corpus-gen: %s: write error\n", out_path.c_str());
    return 1;
  }
  return 0;
}
