// The streaming pipeline: memory bounded by the model and one batch, not by the data.
#include <memstage/stage.h>

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

#include "pipeline_common.h"
#include "trainer/error.h"
#include "trainer/model_io.h"
#include "trainer/progress.h"

namespace trainer {

namespace {

// While counting, hold at most this many distinct terms per kept feature: enough that the
// kept terms' counts are nearly exact, few enough that the counting pass stays bounded.
constexpr std::size_t kCandidatesPerFeature = 4;
constexpr std::size_t kMinCandidates = 50000;

Result evaluate_saved(const Config& config) {
  const auto start = std::chrono::steady_clock::now();
  SavedModel saved = load_model(config.load_path);
  LabelSet labels;
  labels.assign(saved.labels);
  FeatureExtractor extractor = saved.hash_bits != 0
                                   ? FeatureExtractor(saved.hash_bits, saved.bigrams)
                                   : FeatureExtractor(saved.vocabulary, saved.bigrams);
  if (extractor.dimension() != saved.model.shape().inputs) {
    throw Error(config.load_path + ": corrupt model file (inputs do not match the features)");
  }
  Result result;
  const Confusion confusion =
      evaluate_streamed(config, saved.model, extractor, labels, result.test_rows, result.bad_rows);
  result.accuracy = confusion.accuracy();
  result.macro_f1 = confusion.macro_f1();
  result.features = extractor.dimension();
  result.classes = labels.size();
  result.total_s = seconds_since(start);
  result.peak_rss_bytes = peak_rss_bytes();
  return result;
}

// Reads the training rows of one epoch into CSR batches, every buffer reused.
class BatchReader {
 public:
  BatchReader(ExampleReader& reader, const Config& config, const LabelSet& labels,
              FeatureExtractor& extractor)
      : reader_(reader), config_(config), labels_(labels), featurize_(extractor) {}

  void start_epoch() {
    reader_.rewind();
    index_ = 0;
  }

  // Clears `batch` and fills it with up to config.batch_rows rows. Fewer means that the
  // epoch is over (0: nothing was left).
  std::size_t fill(SparseBatch& batch) {
    batch.clear();
    while (batch.rows() < config_.batch_rows && reader_.next(example_)) {
      if (config_.max_rows != 0 && index_ >= config_.max_rows) break;
      const std::uint64_t row = index_++;
      if (config_.test_path.empty() && held_out(row, config_.split_ratio, config_.seed)) continue;
      const std::int64_t label = labels_.find(example_.label);
      if (label < 0) throw Error(config_.data_path + ": the file changed while training");
      featurize_(example_.text);
      batch.add_row(featurize_.ids, featurize_.values, static_cast<std::uint32_t>(label));
    }
    return batch.rows();
  }

 private:
  ExampleReader& reader_;
  const Config& config_;
  const LabelSet& labels_;
  Featurizer featurize_;
  Example example_;
  std::uint64_t index_ = 0;
};

// Returns the mean loss of the last epoch.
double train_in_one_thread(const Config& config, BatchReader& batches, Trainer& trainer,
                           Progress& progress) {
  SparseBatch batch;
  double mean_loss = 0.0;
  for (unsigned epoch = 1; epoch <= config.epochs; ++epoch) {
    batches.start_epoch();
    std::uint64_t lines = 0;
    double loss_sum = 0.0;
    for (;;) {
      const std::size_t rows = batches.fill(batch);
      if (rows != 0) loss_sum += trainer.step_sparse(batch);
      lines += rows;
      if (lines != 0) progress.update(epoch, lines, loss_sum / static_cast<double>(lines));
      if (rows < config.batch_rows) break;
    }
    mean_loss = lines == 0 ? 0.0 : loss_sum / static_cast<double>(lines);
    progress.update(epoch, lines, mean_loss, true);
  }
  return mean_loss;
}

// The same batches in the same order, so the same weights, but a second thread reads and
// vectorizes the next batch while this one trains on the current one. Two batch buffers
// pass back and forth; nothing is allocated per batch here either.
double train_with_reader_thread(const Config& config, BatchReader& batches, Trainer& trainer,
                                Progress& progress) {
  struct Slot {
    SparseBatch batch;
    bool full = false;  // filled by the reader, not yet trained on
    bool last = false;  // the epoch's last batch (possibly empty)
  };
  Slot slots[2];
  std::mutex mutex;
  std::condition_variable changed;
  bool stop = false;
  bool reader_failed = false;
  std::exception_ptr reader_error;

  std::thread reader([&] {
    try {
      std::size_t next = 0;
      for (unsigned epoch = 1; epoch <= config.epochs; ++epoch) {
        batches.start_epoch();
        bool last = false;
        while (!last) {
          Slot& slot = slots[next];
          {
            std::unique_lock lock(mutex);
            changed.wait(lock, [&] { return !slot.full || stop; });
            if (stop) return;
          }
          last = batches.fill(slot.batch) < config.batch_rows;
          {
            std::lock_guard lock(mutex);
            slot.full = true;
            slot.last = last;
          }
          changed.notify_all();
          next ^= 1;
        }
      }
    } catch (...) {
      std::lock_guard lock(mutex);
      reader_error = std::current_exception();
      reader_failed = true;
      changed.notify_all();
    }
  });

  const auto stop_reader = [&] {
    {
      std::lock_guard lock(mutex);
      stop = true;
    }
    changed.notify_all();
    reader.join();
  };
  double mean_loss = 0.0;
  try {
    std::size_t next = 0;
    for (unsigned epoch = 1; epoch <= config.epochs; ++epoch) {
      std::uint64_t lines = 0;
      double loss_sum = 0.0;
      bool last = false;
      while (!last) {
        Slot& slot = slots[next];
        {
          std::unique_lock lock(mutex);
          changed.wait(lock, [&] { return slot.full || reader_failed; });
          if (!slot.full) break;
        }
        const std::size_t rows = slot.batch.rows();
        if (rows != 0) loss_sum += trainer.step_sparse(slot.batch);
        lines += rows;
        if (lines != 0) progress.update(epoch, lines, loss_sum / static_cast<double>(lines));
        {
          std::lock_guard lock(mutex);
          last = slot.last;
          slot.full = false;
        }
        changed.notify_all();
        next ^= 1;
      }
      if (!last) break;  // the reader failed
      mean_loss = lines == 0 ? 0.0 : loss_sum / static_cast<double>(lines);
      progress.update(epoch, lines, mean_loss, true);
    }
  } catch (...) {
    stop_reader();
    throw;
  }
  stop_reader();
  if (reader_error) std::rethrow_exception(reader_error);
  return mean_loss;
}

}  // namespace

Confusion evaluate_streamed(const Config& config, const Model& model, FeatureExtractor& extractor,
                            const LabelSet& labels, std::uint64_t& rows, std::uint64_t& bad_rows) {
  memstage::Stage stage{"evaluate"};
  const bool holdout = config.test_path.empty();
  const std::string& path = holdout ? config.data_path : config.test_path;
  ExampleReader reader(path, format_of(config, path), config.skip_bad_rows);
  Confusion confusion(labels.size());
  Featurizer featurize(extractor);
  std::vector<float> values;
  std::vector<float> hidden(model.shape().hidden);
  std::vector<float> logits(model.shape().classes);
  Example example;
  std::uint64_t index = 0;
  rows = 0;
  while (reader.next(example)) {
    if (holdout) {
      if (config.max_rows != 0 && index >= config.max_rows) break;
      if (!held_out(index++, config.split_ratio, config.seed)) continue;
    } else if (config.max_test_rows != 0 && rows >= config.max_test_rows) {
      break;
    }
    const std::uint32_t truth = labels.index(example.label, path, example.line);
    featurize(example.text);
    values.assign(featurize.values.begin(), featurize.values.end());
    model.forward_sparse(featurize.ids.data(), values.data(), values.size(), hidden.data(),
                         logits.data());
    confusion.add(truth, argmax(logits.data(), logits.size()));
    ++rows;
  }
  if (rows == 0) {
    throw Error(path + (holdout ? ": no held-out rows to evaluate on (raise --split or --max-rows)"
                                : ": no examples (empty file)"));
  }
  bad_rows += reader.bad_rows();
  return confusion;
}

Result run_optimized(const Config& config) {
  if (!config.load_path.empty()) return evaluate_saved(config);
  const auto start = std::chrono::steady_clock::now();
  Result result;
  const bool holdout = config.test_path.empty();
  // One reader for every pass: epochs rewind it instead of reopening the file.
  ExampleReader reader(config.data_path, format_of(config, config.data_path), config.skip_bad_rows);
  Example example;
  Tokenizer tokenizer;
  std::vector<std::string_view> tokens;
  LabelSet labels;
  Vocabulary vocabulary;
  std::uint64_t rows_in_file = 0;
  {
    memstage::Stage stage{"vocabulary"};
    VocabularyOptions options;
    options.max_features = config.max_features;
    options.min_count = config.min_count;
    options.bigrams = config.bigrams;
    if (config.max_features != 0) {
      options.max_candidates = std::max(kMinCandidates, kCandidatesPerFeature * config.max_features);
    }
    VocabularyBuilder builder(options);
    while (reader.next(example)) {
      if (config.max_rows != 0 && rows_in_file >= config.max_rows) break;
      const std::uint64_t index = rows_in_file++;
      labels.add(example.label);  // held-out rows too, so that they have a class
      if (holdout && held_out(index, config.split_ratio, config.seed)) continue;
      ++result.train_rows;
      if (config.hash_bits == 0) {  // the hashing trick needs no vocabulary: only labels
        tokenizer.tokenize(example.text, tokens);
        builder.add_document(tokens);
      }
    }
    if (rows_in_file == 0) throw Error(config.data_path + ": no examples (empty file)");
    if (result.train_rows == 0) throw Error(config.data_path + ": every row was held out; lower --split");
    labels.finish();
    if (config.hash_bits == 0) vocabulary = builder.build();
  }
  if (labels.size() < 2) {
    throw Error(config.data_path + ": only one label ('" + labels.labels().front() +
                "'): nothing to learn");
  }
  FeatureExtractor extractor = config.hash_bits != 0
                                   ? FeatureExtractor(config.hash_bits, config.bigrams)
                                   : FeatureExtractor(vocabulary, config.bigrams);
  if (extractor.dimension() == 0) {
    throw Error(config.data_path + ": the vocabulary is empty (lower --min-count?)");
  }
  Model model({extractor.dimension(), config.hidden, labels.size()}, config.seed);
  Progress progress(config.progress, result.train_rows, config.epochs);
  {
    memstage::Stage stage{"train"};
    const auto train_start = std::chrono::steady_clock::now();
    // Everything the loop needs exists before it; in steady state (once the longest line
    // and the fullest batch have been seen) an epoch allocates nothing.
    Trainer trainer(model, train_options(config));
    BatchReader batches(reader, config, labels, extractor);
    result.final_loss = config.threads >= 2 ? train_with_reader_thread(config, batches, trainer, progress)
                                            : train_in_one_thread(config, batches, trainer, progress);
    progress.finish();
    result.train_s = seconds_since(train_start);
  }
  result.bad_rows = reader.bad_rows();
  if (config.quantize) model.quantize();
  if (!config.save_path.empty()) {
    save_model(config.save_path, model, vocabulary, config.hash_bits, config.bigrams, labels.labels());
  }
  const Confusion confusion =
      evaluate_streamed(config, model, extractor, labels, result.test_rows, result.bad_rows);
  result.accuracy = confusion.accuracy();
  result.macro_f1 = confusion.macro_f1();
  result.features = extractor.dimension();
  result.classes = labels.size();
  result.total_s = seconds_since(start);
  result.peak_rss_bytes = peak_rss_bytes();
  return result;
}

}  // namespace trainer
