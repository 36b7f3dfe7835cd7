// The naive pipeline, kept naive on purpose: each stage reproduces one cause of the
// blowup that a small Python text classifier hit on 25,000 lines (see docs/architecture.md).
// Nothing here is freed early and every copy is a real copy, as with numpy and pandas.
#include <memstage/stage.h>
#include <zlib.h>

#include <algorithm>
#include <new>

#include "pipeline_common.h"
#include "trainer/error.h"
#include "trainer/model_io.h"
#include "trainer/progress.h"

namespace trainer {

namespace {

// Cause 1a: the whole (decompressed) file as one string.
std::string read_whole_file(const std::string& path) {
  LineReader check(path);  // same "missing file" messages as the streaming reader
  (void)check;
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) throw Error(path + ": cannot open");
  std::string text;
  char chunk[1 << 16];
  for (;;) {
    const int got = gzread(file, chunk, sizeof chunk);
    if (got < 0) {
      gzclose(file);
      throw Error(path + ": read error");
    }
    if (got == 0) break;
    text.append(chunk, static_cast<std::size_t>(got));
  }
  gzclose(file);
  return text;
}

// Cause 1b: the text copied again, into a table of rows.
std::vector<Example> parse_table(const std::string& name, const std::string& text, Format format,
                                 bool skip_bad_rows, std::uint64_t max_rows, std::uint64_t& bad_rows) {
  ExampleReader reader(name, text, format, skip_bad_rows);
  std::vector<Example> table;
  Example example;
  while (reader.next(example)) {
    if (max_rows != 0 && table.size() >= max_rows) break;
    table.push_back(example);
  }
  if (table.empty()) throw Error(name + ": no examples (empty file)");
  bad_rows += reader.bad_rows();
  return table;
}

// A dense row-major matrix.
template <typename T>
struct Dense {
  std::size_t rows = 0;
  std::size_t columns = 0;
  std::vector<T> cells;
};

template <typename T>
Dense<T> allocate_dense(std::size_t rows, std::size_t columns, const char* what) {
  Dense<T> m{rows, columns, {}};
  try {
    m.cells.assign(rows * columns, T{});  // zero-filled, so every page is really touched
  } catch (const std::bad_alloc&) {
    throw Error(std::string("out of memory allocating the dense ") + what + " matrix (" +
                std::to_string(rows) + " x " + std::to_string(columns) + " x " +
                std::to_string(sizeof(T)) + " bytes)");
  }
  return m;
}

// Cause 3: TF-IDF materialised densely in float64, one block per feature kind.
void vectorize(const std::vector<Example>& table, FeatureExtractor& extractor,
               std::size_t unigrams, Dense<double>& unigram_block, Dense<double>& bigram_block) {
  const std::size_t total = extractor.dimension();
  unigram_block = allocate_dense<double>(table.size(), unigrams, "TF-IDF (unigram block)");
  bigram_block = allocate_dense<double>(table.size(), total - unigrams, "TF-IDF (bigram block)");
  Featurizer featurize(extractor);
  for (std::size_t r = 0; r < table.size(); ++r) {
    featurize(table[r].text);
    for (std::size_t k = 0; k < featurize.ids.size(); ++k) {
      const std::size_t id = featurize.ids[k];
      if (id < unigrams) {
        unigram_block.cells[r * unigrams + id] = featurize.values[k];
      } else {
        bigram_block.cells[r * bigram_block.columns + (id - unigrams)] = featurize.values[k];
      }
    }
  }
}

// Cause 4: a float32 copy of a float64 matrix (the float64 one stays referenced).
Dense<float> to_float32(const Dense<double>& m) {
  Dense<float> out = allocate_dense<float>(m.rows, m.columns, "float32");
  for (std::size_t i = 0; i < m.cells.size(); ++i) out.cells[i] = static_cast<float>(m.cells[i]);
  return out;
}

// Cause 5a: hstack, a new matrix with the blocks side by side.
Dense<float> hstack(const Dense<float>& left, const Dense<float>& right) {
  Dense<float> out = allocate_dense<float>(left.rows, left.columns + right.columns, "hstack");
  for (std::size_t r = 0; r < left.rows; ++r) {
    std::copy_n(left.cells.data() + r * left.columns, left.columns, out.cells.data() + r * out.columns);
    std::copy_n(right.cells.data() + r * right.columns, right.columns,
                out.cells.data() + r * out.columns + left.columns);
  }
  return out;
}

// Cause 5b: fancy indexing, X[indices] as a new matrix.
Dense<float> take_rows(const Dense<float>& m, const std::vector<std::size_t>& indices) {
  Dense<float> out = allocate_dense<float>(indices.size(), m.columns, "split");
  for (std::size_t i = 0; i < indices.size(); ++i) {
    std::copy_n(m.cells.data() + indices[i] * m.columns, m.columns, out.cells.data() + i * m.columns);
  }
  return out;
}

}  // namespace

Result run_naive(const Config& config) {
  // A saved model is evaluated the same way whichever pipeline trained it.
  if (!config.load_path.empty()) return run_optimized(config);
  const auto start = std::chrono::steady_clock::now();
  Result result;
  const bool holdout = config.test_path.empty();

  std::string raw;
  std::string raw_test;
  std::vector<Example> table;
  std::vector<Example> test_table;
  {
    memstage::Stage stage{"load"};
    raw = read_whole_file(config.data_path);
    table = parse_table(config.data_path, raw, format_of(config, config.data_path),
                        config.skip_bad_rows, config.max_rows, result.bad_rows);
    if (!holdout) {
      raw_test = read_whole_file(config.test_path);
      test_table = parse_table(config.test_path, raw_test, format_of(config, config.test_path),
                               config.skip_bad_rows, config.max_test_rows, result.bad_rows);
    }
  }

  LabelSet labels;
  for (const Example& e : table) labels.add(e.label);
  labels.finish();
  if (labels.size() < 2) {
    throw Error(config.data_path + ": only one label ('" + labels.labels().front() +
                "'): nothing to learn");
  }
  std::vector<std::uint32_t> label_ids;
  for (const Example& e : table) label_ids.push_back(labels.index(e.label, config.data_path, e.line));
  std::vector<std::uint32_t> test_label_ids;
  for (const Example& e : test_table) {
    test_label_ids.push_back(labels.index(e.label, config.test_path, e.line));
  }

  Vocabulary vocabulary;
  {
    // Cause 2: fitted on every row (held-out ones included), no pruning at all.
    memstage::Stage stage{"vocabulary"};
    VocabularyOptions options;
    options.bigrams = config.bigrams;
    VocabularyBuilder builder(options);
    Tokenizer tokenizer;
    std::vector<std::string_view> tokens;
    for (const Example& e : table) {
      tokenizer.tokenize(e.text, tokens);
      builder.add_document(tokens);
    }
    vocabulary = builder.build();
  }
  if (vocabulary.size() == 0) throw Error(config.data_path + ": the vocabulary is empty");
  FeatureExtractor extractor(vocabulary, config.bigrams);
  const std::size_t unigrams = vocabulary.unigram_count();

  Dense<double> unigram_block, bigram_block, test_unigram_block, test_bigram_block;
  {
    memstage::Stage stage{"vectorize"};
    vectorize(table, extractor, unigrams, unigram_block, bigram_block);
    if (!holdout) vectorize(test_table, extractor, unigrams, test_unigram_block, test_bigram_block);
  }

  Dense<float> unigram_f32, bigram_f32, test_unigram_f32, test_bigram_f32;
  {
    memstage::Stage stage{"to_float32"};
    unigram_f32 = to_float32(unigram_block);
    bigram_f32 = to_float32(bigram_block);
    if (!holdout) {
      test_unigram_f32 = to_float32(test_unigram_block);
      test_bigram_f32 = to_float32(test_bigram_block);
    }
  }

  Dense<float> features, x_train, x_eval;
  std::vector<std::uint32_t> y_train, y_eval;
  {
    memstage::Stage stage{"split"};
    features = hstack(unigram_f32, bigram_f32);
    std::vector<std::size_t> train_rows, eval_rows;
    for (std::size_t i = 0; i < table.size(); ++i) {
      const bool eval = holdout && held_out(i, config.split_ratio, config.seed);
      (eval ? eval_rows : train_rows).push_back(i);
      (eval ? y_eval : y_train).push_back(label_ids[i]);
    }
    if (train_rows.empty()) throw Error(config.data_path + ": every row was held out; lower --split");
    if (holdout && eval_rows.empty()) {
      throw Error(config.data_path + ": no held-out rows to evaluate on (raise --split or --max-rows)");
    }
    x_train = take_rows(features, train_rows);
    if (holdout) {
      x_eval = take_rows(features, eval_rows);
    } else {
      x_eval = hstack(test_unigram_f32, test_bigram_f32);
      y_eval = test_label_ids;
    }
  }
  result.train_rows = x_train.rows;

  Model model({vocabulary.size(), config.hidden, labels.size()}, config.seed);
  Progress progress(config.progress, x_train.rows, config.epochs);
  {
    // Cause 6: training walks the dense rows.
    memstage::Stage stage{"train"};
    const auto train_start = std::chrono::steady_clock::now();
    Trainer trainer(model, train_options(config));
    const std::size_t width = x_train.columns;
    for (unsigned epoch = 1; epoch <= config.epochs; ++epoch) {
      double loss_sum = 0.0;
      for (std::size_t first = 0; first < x_train.rows; first += config.batch_rows) {
        const std::size_t rows = std::min(config.batch_rows, x_train.rows - first);
        loss_sum += trainer.step_dense(x_train.cells.data() + first * width, y_train.data() + first, rows);
        progress.update(epoch, first + rows, loss_sum / static_cast<double>(first + rows));
      }
      result.final_loss = loss_sum / static_cast<double>(x_train.rows);
      progress.update(epoch, x_train.rows, result.final_loss, true);
    }
    progress.finish();
    result.train_s = seconds_since(train_start);
  }
  if (!config.save_path.empty()) {
    save_model(config.save_path, model, vocabulary, 0, config.bigrams, labels.labels());
  }

  Confusion confusion(labels.size());
  {
    memstage::Stage stage{"evaluate"};
    std::vector<float> hidden(config.hidden);
    std::vector<float> logits(labels.size());
    for (std::size_t r = 0; r < x_eval.rows; ++r) {
      model.forward_dense(x_eval.cells.data() + r * x_eval.columns, hidden.data(), logits.data());
      confusion.add(y_eval[r], argmax(logits.data(), logits.size()));
    }
  }
  result.test_rows = x_eval.rows;
  result.accuracy = confusion.accuracy();
  result.macro_f1 = confusion.macro_f1();
  result.features = vocabulary.size();
  result.classes = labels.size();
  result.total_s = seconds_since(start);
  result.peak_rss_bytes = peak_rss_bytes();
  return result;
}

}  // namespace trainer
