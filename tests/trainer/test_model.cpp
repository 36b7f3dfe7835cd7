// The model: sparse and dense paths agree, training steps agree, quantization and the
// model file.
#include <catch2/catch.hpp>

#include <cmath>

#include "helpers.h"
#include "trainer/error.h"
#include "trainer/model.h"
#include "trainer/model_io.h"


namespace {

// A few sparse rows over `inputs` features and their dense copies.
struct Rows {
  trainer::SparseBatch sparse;
  std::vector<float> dense;
};

Rows make_rows(std::size_t inputs, std::size_t rows, std::size_t classes) {
  Rows out;
  out.dense.assign(rows * inputs, 0.0f);
  for (std::size_t r = 0; r < rows; ++r) {
    std::vector<std::uint32_t> ids;
    std::vector<double> values;
    for (std::uint32_t j = static_cast<std::uint32_t>(r % 3); j < inputs; j += 3 + static_cast<std::uint32_t>(r % 4)) {
      ids.push_back(j);
      values.push_back(0.1 + 0.05 * static_cast<double>((j * 7 + r) % 11));
      out.dense[r * inputs + j] = static_cast<float>(values.back());
    }
    out.sparse.add_row(ids, values, static_cast<std::uint32_t>(r % classes));
  }
  return out;
}

}  // namespace

TEST_CASE("sparse and dense forward passes compute the same logits", "[model]") {
  for (std::size_t hidden : {std::size_t{0}, std::size_t{16}}) {
    const std::size_t inputs = 200, classes = 5;
    trainer::Model model({inputs, hidden, classes}, 7);
    const Rows rows = make_rows(inputs, 6, classes);
    std::vector<float> h1(hidden), h2(hidden), l1(classes), l2(classes);
    for (std::size_t r = 0; r < rows.sparse.rows(); ++r) {
      const std::size_t begin = rows.sparse.offsets[r];
      model.forward_sparse(rows.sparse.ids.data() + begin, rows.sparse.values.data() + begin,
                           rows.sparse.offsets[r + 1] - begin, h1.data(), l1.data());
      model.forward_dense(rows.dense.data() + r * inputs, h2.data(), l2.data());
      for (std::size_t c = 0; c < classes; ++c) CHECK(l1[c] == Approx(l2[c]).margin(1e-5));
      for (std::size_t i = 0; i < hidden; ++i) CHECK(h1[i] == Approx(h2[i]).margin(1e-5));
    }
  }
}

TEST_CASE("sparse and dense SGD steps leave the same weights", "[model]") {
  for (std::size_t hidden : {std::size_t{0}, std::size_t{8}}) {
    const std::size_t inputs = 120, classes = 3, rows = 5;
    trainer::Model a({inputs, hidden, classes}, 11);
    trainer::Model b({inputs, hidden, classes}, 11);
    trainer::TrainOptions options;
    options.learning_rate = 0.5f;
    options.max_batch_rows = rows;
    trainer::Trainer ta(a, options), tb(b, options);
    const Rows data = make_rows(inputs, rows, classes);
    for (int step = 0; step < 3; ++step) {
      const double la = ta.step_sparse(data.sparse);
      const double lb = tb.step_dense(data.dense.data(), data.sparse.labels.data(), rows);
      CHECK(la == Approx(lb).epsilon(1e-5));
    }
    for (std::size_t i = 0; i < a.w1.size(); ++i) REQUIRE(a.w1[i] == Approx(b.w1[i]).margin(1e-6));
    for (std::size_t i = 0; i < a.w2.size(); ++i) REQUIRE(a.w2[i] == Approx(b.w2[i]).margin(1e-6));
  }
}

TEST_CASE("training lowers the loss, with SGD and with Adam", "[model]") {
  for (auto optimizer : {trainer::Optimizer::sgd, trainer::Optimizer::adam}) {
    trainer::Model model({60, 4, 3}, 3);
    trainer::TrainOptions options;
    options.optimizer = optimizer;
    options.learning_rate = optimizer == trainer::Optimizer::sgd ? 1.0f : 0.05f;
    options.max_batch_rows = 9;
    trainer::Trainer t(model, options);
    const Rows data = make_rows(60, 9, 3);
    const double first = t.step_sparse(data.sparse);
    double last = first;
    for (int i = 0; i < 100; ++i) last = t.step_sparse(data.sparse);
    CHECK(last < first * 0.5);
  }
}

TEST_CASE("int8 quantization keeps the logits close", "[model]") {
  const std::size_t inputs = 300, classes = 4;
  trainer::Model model({inputs, 0, classes}, 5);
  trainer::Model quantized = model;
  quantized.quantize();
  CHECK(quantized.w1.empty());
  CHECK(quantized.w1_int8.size() == inputs * classes);
  const Rows rows = make_rows(inputs, 4, classes);
  std::vector<float> l1(classes), l2(classes);
  for (std::size_t r = 0; r < 4; ++r) {
    const std::size_t begin = rows.sparse.offsets[r];
    const std::size_t n = rows.sparse.offsets[r + 1] - begin;
    model.forward_sparse(rows.sparse.ids.data() + begin, rows.sparse.values.data() + begin, n, nullptr, l1.data());
    quantized.forward_sparse(rows.sparse.ids.data() + begin, rows.sparse.values.data() + begin, n, nullptr, l2.data());
    // Each weight is off by at most half a step (max|w| / 254) ≈ 0.1 / 254.
    for (std::size_t c = 0; c < classes; ++c) CHECK(l1[c] == Approx(l2[c]).margin(0.01));
  }
}

TEST_CASE("model files round-trip, float and int8; bad files are refused", "[model][io]") {
  trainer_test::TempDir dir;
  trainer::Model model({3, 2, 2}, 9);
  trainer::Vocabulary vocabulary({"x", "y", "x y"}, {1.0, 1.5, 2.0}, 2);
  const auto path = dir.path("m.bin");
  trainer::save_model(path, model, vocabulary, 0, true, {"neg", "pos"});
  const auto loaded = trainer::load_model(path);
  CHECK(loaded.model.w1 == model.w1);
  CHECK(loaded.model.w2 == model.w2);
  CHECK(loaded.labels == std::vector<std::string>{"neg", "pos"});
  CHECK(loaded.vocabulary.terms() == vocabulary.terms());
  CHECK(loaded.vocabulary.unigram_count() == 2);
  CHECK(loaded.bigrams);

  model.quantize();
  trainer::save_model(path, model, vocabulary, 0, true, {"neg", "pos"});
  const auto q = trainer::load_model(path);
  CHECK(q.model.quantized());
  CHECK(q.model.w1_int8 == model.w1_int8);

  CHECK_THROWS_WITH(trainer::load_model(dir.file("junk.bin", "not a model")),
                    Catch::Contains("not a memstage-trainer model"));
  CHECK_THROWS_WITH(trainer::load_model(dir.file("short.bin", "MSTGMDL1\x01")),
                    Catch::Contains("truncated"));
  CHECK_THROWS_AS(trainer::load_model(dir.path("none.bin")), trainer::Error);
}
