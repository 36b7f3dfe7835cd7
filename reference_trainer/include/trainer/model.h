// The one model both pipelines train: TF-IDF features → optional hidden layer (ReLU) →
// softmax, cross-entropy loss, SGD or Adam. The sparse path (CSR rows) and the dense path
// (full rows, zeros included) compute the same function; only their cost differs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace trainer {

struct ModelShape {
  std::size_t inputs = 0;
  std::size_t hidden = 0;  // 0: no hidden layer, the softmax reads the features directly
  std::size_t classes = 0;
  // Width of the first layer's output: the hidden layer, or the logits.
  std::size_t width() const { return hidden != 0 ? hidden : classes; }
};

// Rows of a sparse matrix (CSR). clear() keeps every buffer's capacity, so a batch
// refilled with rows no longer than before allocates nothing.
struct SparseBatch {
  std::vector<std::size_t> offsets{0};  // row r holds entries offsets[r] .. offsets[r+1]-1
  std::vector<std::uint32_t> ids;
  std::vector<float> values;
  std::vector<std::uint32_t> labels;

  std::size_t rows() const { return labels.size(); }
  void clear() {
    offsets.resize(1);
    ids.clear();
    values.clear();
    labels.clear();
  }
  void add_row(const std::vector<std::uint32_t>& row_ids, const std::vector<double>& row_values,
               std::uint32_t label);
};

class Model {
 public:
  Model() = default;
  // Weights drawn uniformly in ±sqrt(6 / (fan_in + fan_out)) from a fixed-seed generator
  // of our own (the standard distributions' output differs between library versions).
  Model(ModelShape shape, std::uint64_t seed);

  const ModelShape& shape() const { return shape_; }
  std::size_t parameter_count() const;

  // Logits of one sparse row. `hidden` (shape.hidden floats, may be null when there is
  // no hidden layer) receives the post-ReLU activations, `logits` shape.classes floats.
  // Uses the int8 first layer once quantize() has run.
  void forward_sparse(const std::uint32_t* ids, const float* values, std::size_t count,
                      float* hidden, float* logits) const;
  // The same for a dense row of shape.inputs floats, every input multiplied in.
  void forward_dense(const float* x, float* hidden, float* logits) const;

  // Replaces the float first layer by int8 weights with one scale per input row
  // (symmetric, max |w| → 127). For evaluation and saving; training needs float weights.
  void quantize();
  bool quantized() const { return quantized_; }

  // Parameters, public for the trainer and the model file.
  std::vector<float> w1;  // inputs × width, row-major by input: a feature's weights are contiguous
  std::vector<float> b1;  // width
  std::vector<float> w2;  // hidden × classes (empty without a hidden layer)
  std::vector<float> b2;  // classes (empty without a hidden layer)
  std::vector<std::int8_t> w1_int8;  // inputs × width, when quantized
  std::vector<float> w1_scale;       // inputs, when quantized

  // Sets shape and sizes for a model read from a file.
  void set_shape(ModelShape shape, bool quantized);

 private:
  void finish_forward(float* first, float* hidden, float* logits) const;

  ModelShape shape_;
  bool quantized_ = false;
};

// Softmax of `logits` in place; returns the log-probability of `label` (for the loss).
double softmax_in_place(float* logits, std::size_t classes, std::uint32_t label);

enum class Optimizer { sgd, adam };

struct TrainOptions {
  Optimizer optimizer = Optimizer::sgd;
  float learning_rate = 1.0f;
  std::size_t max_batch_rows = 64;
  float adam_beta1 = 0.9f;
  float adam_beta2 = 0.999f;
  float adam_epsilon = 1e-8f;
};

// Minibatch gradient steps on a Model, loss averaged over the batch. Every buffer a step
// needs is allocated by the constructor: steps themselves never allocate.
//
// The sparse step touches only the first-layer rows of the batch's features. With SGD that
// is exactly the dense step. With Adam it is "lazy" Adam: untouched rows keep their
// moments and weights, where dense Adam would still move them by their decaying moments.
class Trainer {
 public:
  Trainer(Model& model, TrainOptions options);

  // One step on a CSR batch (rows ≤ max_batch_rows). Returns the summed loss.
  double step_sparse(const SparseBatch& batch);
  // One step on `rows` dense rows of shape.inputs floats each, stored row after row.
  double step_dense(const float* x, const std::uint32_t* labels, std::size_t rows);

  std::uint64_t steps() const { return steps_; }

 private:
  // Forward, loss and backward down to the first layer's output for row r of the batch:
  // fills delta1_ row r and accumulates the small layers' gradients.
  double row_backward(std::size_t r, std::uint32_t label, float scale);
  void update_small_layers();
  void update_first_layer_row(std::size_t input, float* gradient);

  Model& model_;
  TrainOptions options_;
  ModelShape shape_;
  std::uint64_t steps_ = 0;

  std::vector<float> hidden_;   // max_batch_rows × hidden
  std::vector<float> logits_;   // max_batch_rows × classes
  std::vector<float> delta1_;   // max_batch_rows × width: loss gradient at layer 1's output
  // Sparse step: one gradient row per input the batch touched, in touched_ order. Grows to
  // the largest batch's distinct features, then stays: not inputs × width, which with the
  // hashing trick would double the model's memory.
  std::vector<float> grad_rows_;
  std::vector<std::uint32_t> slot_;  // inputs: the grad_rows_ row of an input touched now
  std::vector<float> grad_w1_;  // dense step only: inputs × width, made by the first one
  std::vector<float> grad_b1_, grad_w2_, grad_b2_;
  std::vector<std::uint64_t> touched_step_;  // inputs: last step that touched the row
  std::vector<std::uint32_t> touched_;       // rows touched in this step (capacity: inputs)
  // Adam moments, same layout as the parameters (empty with SGD).
  std::vector<float> m_w1_, v_w1_, m_b1_, v_b1_, m_w2_, v_w2_, m_b2_, v_b2_;
  float adam_correction1_ = 1.0f, adam_correction2_ = 1.0f;
};

}  // namespace trainer
