// Whole pipelines: learning a separable toy set, naive and optimized agreeing on real data,
// the hashing trick, saving and loading.
#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>

#include "helpers.h"
#include "trainer/error.h"
#include "trainer/pipeline.h"

namespace {

// Three classes, each with its own keywords, among words all classes share.
std::string toy_corpus(int rows, int seed) {
  const char* keywords[3][4] = {{"goal", "match", "team", "referee"},
                                {"compiler", "kernel", "debugger", "linker"},
                                {"oven", "recipe", "flour", "butter"}};
  const char* shared[6] = {"the", "a", "today", "news", "people", "again"};
  const char* labels[3] = {"sport", "code", "food"};
  std::ostringstream out;
  out << "text,label\n";
  unsigned state = static_cast<unsigned>(seed);
  auto next = [&state] { return state = state * 1103515245u + 12345u, (state >> 16) & 0x7fff; };
  for (int r = 0; r < rows; ++r) {
    const int c = static_cast<int>(next() % 3);
    out << '"';
    for (int w = 0; w < 8; ++w) {
      out << (w ? " " : "") << (next() % 3 == 0 ? keywords[c][next() % 4] : shared[next() % 6]);
    }
    out << ", indeed\"," << labels[c] << '\n';
  }
  return out.str();
}

trainer::Config small_config(trainer::Pipeline pipeline) {
  trainer::Config config;
  config.pipeline = pipeline;
  config.epochs = 5;
  config.batch_rows = 16;
  return config;
}

}  // namespace

TEST_CASE("a tiny separable data set reaches 95 % accuracy in both pipelines", "[pipeline]") {
  trainer_test::TempDir dir;
  const auto train = dir.file("toy.train.csv", toy_corpus(400, 1));
  const auto test = dir.file("toy.test.csv", toy_corpus(200, 2));
  for (auto pipeline : {trainer::Pipeline::naive, trainer::Pipeline::optimized}) {
    for (std::size_t hidden : {std::size_t{0}, std::size_t{16}}) {
      auto config = small_config(pipeline);
      config.data_path = train;
      config.test_path = test;
      config.hidden = hidden;
      const auto result = trainer::run(config);
      INFO("pipeline " << (pipeline == trainer::Pipeline::naive ? "naive" : "optimized")
                       << " hidden " << hidden);
      CHECK(result.accuracy >= 0.95);
      CHECK(result.classes == 3);
      CHECK(result.test_rows == 200);
    }
  }
}

TEST_CASE("held-out split: both pipelines hold out the same rows", "[pipeline]") {
  trainer_test::TempDir dir;
  const auto data = dir.file("toy.csv", toy_corpus(500, 3));
  auto naive = small_config(trainer::Pipeline::naive);
  naive.data_path = data;
  naive.split_ratio = 0.2;
  auto optimized = naive;
  optimized.pipeline = trainer::Pipeline::optimized;
  optimized.optimizer = naive.optimizer = trainer::Optimizer::adam;
  optimized.learning_rate = naive.learning_rate = 0.05f;
  const auto a = trainer::run(naive);
  const auto b = trainer::run(optimized);
  CHECK(a.train_rows == b.train_rows);
  CHECK(a.test_rows == b.test_rows);
  CHECK(a.train_rows + a.test_rows == 500);
  CHECK(a.test_rows > 60);
  CHECK(a.test_rows < 140);
  CHECK(a.accuracy >= 0.95);
  CHECK(b.accuracy >= 0.95);
}

TEST_CASE("naive and optimized agree within 1 point on a small real set", "[pipeline][data]") {
  auto config = small_config(trainer::Pipeline::naive);
  config.data_path = trainer_test::data_file("spam_assassin.train.csv.gz");
  config.test_path = trainer_test::data_file("spam_assassin.test.csv.gz");
  config.max_rows = 800;
  config.max_test_rows = 300;
  config.epochs = 4;
  const auto naive = trainer::run(config);
  config.pipeline = trainer::Pipeline::optimized;
  const auto optimized = trainer::run(config);
  INFO("naive " << naive.accuracy << ", optimized " << optimized.accuracy);
  CHECK(naive.features == optimized.features);
  CHECK(std::fabs(naive.accuracy - optimized.accuracy) <= 0.01);
  CHECK(optimized.accuracy >= 0.85);
  // Same model, same data, same order: the losses agree to float rounding.
  CHECK(naive.final_loss == Approx(optimized.final_loss).epsilon(1e-3));
}

TEST_CASE("optimized: hashing trick, pruning, bigrams, fastText input", "[pipeline][data]") {
  auto config = small_config(trainer::Pipeline::optimized);
  config.data_path = trainer_test::data_file("debian_descriptions.train.ft.gz");
  config.test_path = trainer_test::data_file("debian_descriptions.test.ft.gz");
  config.max_rows = 6000;
  config.max_test_rows = 1000;
  config.epochs = 3;

  config.hash_bits = 16;
  const auto hashed = trainer::run(config);
  CHECK(hashed.features == 65536);
  CHECK(hashed.classes == 44);
  CHECK(hashed.accuracy > 0.5);

  config.hash_bits = 0;
  config.max_features = 5000;
  config.bigrams = true;
  const auto pruned = trainer::run(config);
  CHECK(pruned.features == 5000);
  CHECK(pruned.accuracy > 0.5);
}

TEST_CASE("a reader thread gives the same model as one thread", "[pipeline][threads]") {
  trainer_test::TempDir dir;
  const auto data = dir.file("toy.csv", toy_corpus(700, 8));
  auto config = small_config(trainer::Pipeline::optimized);
  config.data_path = data;
  config.batch_rows = 7;  // 700 rows, ~10 % held out: a last partial batch per epoch
  config.epochs = 3;
  const auto one = trainer::run(config);
  config.threads = 2;
  const auto two = trainer::run(config);
  CHECK(two.final_loss == one.final_loss);
  CHECK(two.accuracy == one.accuracy);
  CHECK(two.train_rows == one.train_rows);
  config.batch_rows = 1;  // many hand-overs between the threads
  config.threads = 1;
  const auto single = trainer::run(config);
  config.threads = 2;
  CHECK(trainer::run(config).final_loss == single.final_loss);
}

TEST_CASE("a saved model, float or int8, gives the same accuracy when loaded", "[pipeline][io]") {
  trainer_test::TempDir dir;
  const auto train = dir.file("toy.train.csv", toy_corpus(400, 4));
  const auto test = dir.file("toy.test.csv", toy_corpus(200, 5));
  for (bool quantize : {false, true}) {
    auto config = small_config(trainer::Pipeline::optimized);
    config.data_path = train;
    config.test_path = test;
    config.quantize = quantize;
    config.hidden = 8;
    config.save_path = dir.path("model.bin");
    const auto trained = trainer::run(config);
    auto load = small_config(trainer::Pipeline::optimized);
    load.load_path = config.save_path;
    load.test_path = test;
    const auto loaded = trainer::run(load);
    CHECK(loaded.accuracy == trained.accuracy);
    CHECK(loaded.features == trained.features);
  }
}

TEST_CASE("bad input: one clear error each", "[pipeline][errors]") {
  trainer_test::TempDir dir;
  const auto train = dir.file("toy.csv", toy_corpus(100, 6));
  auto config = small_config(trainer::Pipeline::optimized);
  config.data_path = train;
  config.test_path = dir.file("unknown.csv", "text,label\nsome words,nosuchlabel\n");
  for (auto pipeline : {trainer::Pipeline::naive, trainer::Pipeline::optimized}) {
    config.pipeline = pipeline;
    CHECK_THROWS_WITH(trainer::run(config),
                      Catch::Contains("unknown.csv:2") && Catch::Contains("'nosuchlabel'"));
  }
  config.test_path = dir.file("empty.ft", "");
  CHECK_THROWS_WITH(trainer::run(config), Catch::Contains("empty file"));
  config.data_path = dir.path("missing.csv");
  CHECK_THROWS_WITH(trainer::run(config), Catch::Contains("missing.csv"));
  config.data_path = dir.file("one.csv", "text,label\na b,x\nc d,x\n");
  config.test_path = config.data_path;
  CHECK_THROWS_WITH(trainer::run(config), Catch::Contains("only one label"));
}
