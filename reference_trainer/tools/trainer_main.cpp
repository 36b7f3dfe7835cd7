// memstage-trainer: trains and evaluates the reference text classifier.
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <map>

#include "trainer/error.h"
#include "trainer/pipeline.h"

namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "memstage-trainer: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  trainer::Config config;
  std::string pipeline = "optimized";
  std::string format;
  std::string optimizer = "sgd";
  bool quiet = false;

  CLI::App app{"memstage-trainer: TF-IDF bag of words → optional hidden layer → softmax.\n"
               "Prints test accuracy and macro-F1."};
  app.add_option("--pipeline", pipeline, "naive (dense, copies everything) or optimized (streaming)")
      ->check(CLI::IsMember({"naive", "optimized"}));
  app.add_option("--data", config.data_path, "training file: .csv (text,label) or .ft (fastText), optionally .gz");
  app.add_option("--test", config.test_path, "test file; without it, --split of the data is held out");
  app.add_option("--format", format, "csv or fasttext (default: from each file's extension)")
      ->check(CLI::IsMember({"csv", "fasttext", "ft"}));
  app.add_option("--split", config.split_ratio, "fraction of the data held out when there is no --test")
      ->capture_default_str();
  app.add_option("--epochs", config.epochs, "passes over the training data")->capture_default_str();
  app.add_option("--batch", config.batch_rows, "rows per gradient step")->capture_default_str();
  app.add_option("--hidden", config.hidden, "hidden layer width; 0 = none")->capture_default_str();
  app.add_option("--lr", config.learning_rate, "learning rate (default: sgd 20, or 2 with --hidden; adam 0.005)");
  app.add_option("--optimizer", optimizer, "sgd or adam")->check(CLI::IsMember({"sgd", "adam"}))
      ->capture_default_str();
  app.add_option("--max-features", config.max_features,
                 "keep the most frequent terms (optimized); 0 = all")->capture_default_str();
  app.add_option("--min-count", config.min_count, "drop rarer terms (optimized)")->capture_default_str();
  app.add_option("--hash-bits", config.hash_bits,
                 "hashing trick with 2^bits features instead of a vocabulary (optimized); 0 = off")
      ->capture_default_str();
  app.add_flag("--bigrams", config.bigrams, "add word bigrams");
  app.add_option("--threads", config.threads, "2: a reader thread vectorizes the next batch while training (optimized)")
      ->capture_default_str();
  app.add_option("--max-rows", config.max_rows, "read at most this many rows of --data; 0 = all")
      ->capture_default_str();
  app.add_option("--max-test-rows", config.max_test_rows, "read at most this many rows of --test; 0 = all");
  app.add_flag("--skip-bad-rows", config.skip_bad_rows, "skip and count malformed rows instead of failing");
  app.add_option("--seed", config.seed, "seed of the weight initialisation and the split")->capture_default_str();
  app.add_flag("--quantize", config.quantize, "int8 first layer for evaluation and --save (optimized)");
  app.add_option("--save", config.save_path, "write the trained model here");
  app.add_option("--load", config.load_path, "evaluate this saved model on --test, no training");
  app.add_flag("--quiet", quiet, "no progress bar");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return fail(e.what());
  }

  try {
    config.pipeline = pipeline == "naive" ? trainer::Pipeline::naive : trainer::Pipeline::optimized;
    config.optimizer = optimizer == "adam" ? trainer::Optimizer::adam : trainer::Optimizer::sgd;
    if (!format.empty()) config.format = trainer::parse_format(format);
    config.progress = !quiet && ::isatty(STDERR_FILENO) == 1;
    if (config.threads > 2) {
      std::fprintf(stderr, "memstage-trainer: note: --threads %u: this version uses 2 (reader, trainer)\n",
                   config.threads);
    }
    const trainer::Result r = trainer::run(config);
    // "key: value" lines, for people and for the benchmark script alike.
    fmt::print("pipeline: {}\n", pipeline);
    fmt::print("train_rows: {}\ntest_rows: {}\nfeatures: {}\nclasses: {}\n", r.train_rows,
               r.test_rows, r.features, r.classes);
    if (r.bad_rows != 0) fmt::print("bad_rows_skipped: {}\n", r.bad_rows);
    if (config.load_path.empty()) {
      fmt::print("final_loss: {:.4f}\ntrain_s: {:.3f}\n", r.final_loss, r.train_s);
      if (r.train_s > 0) {
        fmt::print("train_lines_per_s: {:.0f}\n",
                   static_cast<double>(r.train_rows) * config.epochs / r.train_s);
      }
    }
    fmt::print("accuracy: {:.4f}\nmacro_f1: {:.4f}\ntotal_s: {:.3f}\npeak_rss_bytes: {}\n",
               r.accuracy, r.macro_f1, r.total_s, r.peak_rss_bytes);
    return 0;
  } catch (const trainer::Error& e) {
    return fail(e.what());
  } catch (const std::bad_alloc&) {
    return fail("out of memory");
  } catch (const std::exception& e) {
    return fail(std::string("internal error: ") + e.what());
  }
}
