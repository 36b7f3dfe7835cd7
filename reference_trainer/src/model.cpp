#include "trainer/model.h"

#include <algorithm>
#include <cmath>

namespace trainer {

namespace {

// splitmix64: a tiny generator whose output is the same everywhere.
std::uint64_t next_random(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void fill_uniform(std::vector<float>& weights, std::size_t fan_in, std::size_t fan_out,
                  std::uint64_t& state) {
  const double limit = std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  for (float& w : weights) {
    const double unit = static_cast<double>(next_random(state) >> 11) * 0x1.0p-53;  // [0, 1)
    w = static_cast<float>((2.0 * unit - 1.0) * limit);
  }
}

}  // namespace

void SparseBatch::add_row(const std::vector<std::uint32_t>& row_ids,
                          const std::vector<double>& row_values, std::uint32_t label) {
  ids.insert(ids.end(), row_ids.begin(), row_ids.end());
  for (double v : row_values) values.push_back(static_cast<float>(v));
  offsets.push_back(ids.size());
  labels.push_back(label);
}

Model::Model(ModelShape shape, std::uint64_t seed) {
  set_shape(shape, false);
  std::uint64_t state = seed;
  fill_uniform(w1, shape.inputs, shape.width(), state);
  if (shape.hidden != 0) fill_uniform(w2, shape.hidden, shape.classes, state);
}

void Model::set_shape(ModelShape shape, bool quantized) {
  shape_ = shape;
  quantized_ = quantized;
  const std::size_t width = shape.width();
  if (quantized) {
    w1.clear();
    w1.shrink_to_fit();
    w1_int8.assign(shape.inputs * width, 0);
    w1_scale.assign(shape.inputs, 0.0f);
  } else {
    w1.assign(shape.inputs * width, 0.0f);
  }
  b1.assign(width, 0.0f);
  w2.assign(shape.hidden * shape.classes, 0.0f);
  b2.assign(shape.hidden != 0 ? shape.classes : 0, 0.0f);
}

std::size_t Model::parameter_count() const {
  return shape_.inputs * shape_.width() + b1.size() + w2.size() + b2.size();
}

void Model::finish_forward(float* first, float* hidden, float* logits) const {
  if (shape_.hidden == 0) return;  // `first` already is the logits
  const std::size_t classes = shape_.classes;
  for (std::size_t i = 0; i < shape_.hidden; ++i) first[i] = std::max(first[i], 0.0f);
  std::copy(b2.begin(), b2.end(), logits);
  for (std::size_t i = 0; i < shape_.hidden; ++i) {
    const float h = hidden[i];
    if (h == 0.0f) continue;
    const float* row = w2.data() + i * classes;
    for (std::size_t c = 0; c < classes; ++c) logits[c] += h * row[c];
  }
}

void Model::forward_sparse(const std::uint32_t* ids, const float* values, std::size_t count,
                           float* hidden, float* logits) const {
  const std::size_t width = shape_.width();
  float* first = shape_.hidden != 0 ? hidden : logits;
  std::copy(b1.begin(), b1.end(), first);
  if (quantized_) {
    for (std::size_t k = 0; k < count; ++k) {
      const float v = values[k] * w1_scale[ids[k]];
      const std::int8_t* row = w1_int8.data() + static_cast<std::size_t>(ids[k]) * width;
      for (std::size_t i = 0; i < width; ++i) first[i] += v * static_cast<float>(row[i]);
    }
  } else {
    for (std::size_t k = 0; k < count; ++k) {
      const float v = values[k];
      const float* row = w1.data() + static_cast<std::size_t>(ids[k]) * width;
      for (std::size_t i = 0; i < width; ++i) first[i] += v * row[i];
    }
  }
  finish_forward(first, hidden, logits);
}

void Model::forward_dense(const float* x, float* hidden, float* logits) const {
  const std::size_t width = shape_.width();
  float* first = shape_.hidden != 0 ? hidden : logits;
  std::copy(b1.begin(), b1.end(), first);
  // Deliberately no zero test: a dense row costs inputs × width whatever it holds.
  for (std::size_t j = 0; j < shape_.inputs; ++j) {
    const float v = x[j];
    const float* row = w1.data() + j * width;
    for (std::size_t i = 0; i < width; ++i) first[i] += v * row[i];
  }
  finish_forward(first, hidden, logits);
}

void Model::quantize() {
  if (quantized_) return;
  const std::size_t width = shape_.width();
  w1_int8.assign(shape_.inputs * width, 0);
  w1_scale.assign(shape_.inputs, 0.0f);
  for (std::size_t j = 0; j < shape_.inputs; ++j) {
    const float* row = w1.data() + j * width;
    float largest = 0.0f;
    for (std::size_t i = 0; i < width; ++i) largest = std::max(largest, std::fabs(row[i]));
    if (largest == 0.0f) continue;
    const float scale = largest / 127.0f;
    w1_scale[j] = scale;
    for (std::size_t i = 0; i < width; ++i) {
      w1_int8[j * width + i] = static_cast<std::int8_t>(std::lround(row[i] / scale));
    }
  }
  w1.clear();
  w1.shrink_to_fit();
  quantized_ = true;
}

double softmax_in_place(float* logits, std::size_t classes, std::uint32_t label) {
  const float largest = *std::max_element(logits, logits + classes);
  double sum = 0.0;
  for (std::size_t c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(logits[c] - largest));
  const double log_sum = std::log(sum);
  const double log_p_label = static_cast<double>(logits[label] - largest) - log_sum;
  for (std::size_t c = 0; c < classes; ++c) {
    logits[c] = static_cast<float>(std::exp(static_cast<double>(logits[c] - largest) - log_sum));
  }
  return log_p_label;
}

Trainer::Trainer(Model& model, TrainOptions options)
    : model_(model), options_(options), shape_(model.shape()) {
  const std::size_t rows = std::max<std::size_t>(options.max_batch_rows, 1);
  const std::size_t width = shape_.width();
  hidden_.assign(rows * shape_.hidden, 0.0f);
  logits_.assign(rows * shape_.classes, 0.0f);
  delta1_.assign(rows * width, 0.0f);
  slot_.assign(shape_.inputs, 0);
  grad_b1_.assign(width, 0.0f);
  grad_w2_.assign(model.w2.size(), 0.0f);
  grad_b2_.assign(model.b2.size(), 0.0f);
  touched_step_.assign(shape_.inputs, 0);
  touched_.reserve(shape_.inputs);
  if (options.optimizer == Optimizer::adam) {
    m_w1_.assign(model.w1.size(), 0.0f);
    v_w1_.assign(model.w1.size(), 0.0f);
    m_b1_.assign(model.b1.size(), 0.0f);
    v_b1_.assign(model.b1.size(), 0.0f);
    m_w2_.assign(model.w2.size(), 0.0f);
    v_w2_.assign(model.w2.size(), 0.0f);
    m_b2_.assign(model.b2.size(), 0.0f);
    v_b2_.assign(model.b2.size(), 0.0f);
  }
}

double Trainer::row_backward(std::size_t r, std::uint32_t label, float scale) {
  const std::size_t classes = shape_.classes;
  const std::size_t hidden_size = shape_.hidden;
  float* probs = logits_.data() + r * classes;
  const double log_p = softmax_in_place(probs, classes, label);
  // d(loss)/d(logits) = p − onehot(label), averaged over the batch.
  for (std::size_t c = 0; c < classes; ++c) probs[c] *= scale;
  probs[label] -= scale;
  float* delta = delta1_.data() + r * shape_.width();
  if (hidden_size == 0) {
    std::copy(probs, probs + classes, delta);
  } else {
    const float* h = hidden_.data() + r * hidden_size;
    for (std::size_t c = 0; c < classes; ++c) grad_b2_[c] += probs[c];
    for (std::size_t i = 0; i < hidden_size; ++i) {
      const float* w2_row = model_.w2.data() + i * classes;
      float* g2_row = grad_w2_.data() + i * classes;
      float back = 0.0f;
      for (std::size_t c = 0; c < classes; ++c) {
        g2_row[c] += h[i] * probs[c];
        back += w2_row[c] * probs[c];
      }
      delta[i] = h[i] > 0.0f ? back : 0.0f;  // ReLU
    }
  }
  for (std::size_t i = 0; i < shape_.width(); ++i) grad_b1_[i] += delta[i];
  return -log_p;
}

namespace {

void sgd(float* w, float* g, std::size_t n, float lr) {
  for (std::size_t i = 0; i < n; ++i) {
    w[i] -= lr * g[i];
    g[i] = 0.0f;
  }
}

struct AdamStep {
  float lr, beta1, beta2, epsilon, correction1, correction2;
  void apply(float* w, float* g, float* m, float* v, std::size_t n) const {
    for (std::size_t i = 0; i < n; ++i) {
      m[i] = beta1 * m[i] + (1.0f - beta1) * g[i];
      v[i] = beta2 * v[i] + (1.0f - beta2) * g[i] * g[i];
      w[i] -= lr * (m[i] / correction1) / (std::sqrt(v[i] / correction2) + epsilon);
      g[i] = 0.0f;
    }
  }
};

}  // namespace

void Trainer::update_small_layers() {
  if (options_.optimizer == Optimizer::sgd) {
    sgd(model_.b1.data(), grad_b1_.data(), grad_b1_.size(), options_.learning_rate);
    sgd(model_.w2.data(), grad_w2_.data(), grad_w2_.size(), options_.learning_rate);
    sgd(model_.b2.data(), grad_b2_.data(), grad_b2_.size(), options_.learning_rate);
    return;
  }
  const AdamStep adam{options_.learning_rate, options_.adam_beta1, options_.adam_beta2,
                      options_.adam_epsilon, adam_correction1_, adam_correction2_};
  adam.apply(model_.b1.data(), grad_b1_.data(), m_b1_.data(), v_b1_.data(), grad_b1_.size());
  adam.apply(model_.w2.data(), grad_w2_.data(), m_w2_.data(), v_w2_.data(), grad_w2_.size());
  adam.apply(model_.b2.data(), grad_b2_.data(), m_b2_.data(), v_b2_.data(), grad_b2_.size());
}

void Trainer::update_first_layer_row(std::size_t input, float* gradient) {
  const std::size_t width = shape_.width();
  const std::size_t at = input * width;
  if (options_.optimizer == Optimizer::sgd) {
    sgd(model_.w1.data() + at, gradient, width, options_.learning_rate);
    return;
  }
  const AdamStep adam{options_.learning_rate, options_.adam_beta1, options_.adam_beta2,
                      options_.adam_epsilon, adam_correction1_, adam_correction2_};
  adam.apply(model_.w1.data() + at, gradient, m_w1_.data() + at, v_w1_.data() + at, width);
}

double Trainer::step_sparse(const SparseBatch& batch) {
  const std::size_t rows = std::min(batch.rows(), options_.max_batch_rows);
  if (rows == 0) return 0.0;
  ++steps_;
  adam_correction1_ = 1.0f - std::pow(options_.adam_beta1, static_cast<float>(steps_));
  adam_correction2_ = 1.0f - std::pow(options_.adam_beta2, static_cast<float>(steps_));
  const float scale = 1.0f / static_cast<float>(rows);
  const std::size_t width = shape_.width();
  touched_.clear();
  double loss = 0.0;
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t begin = batch.offsets[r];
    const std::size_t count = batch.offsets[r + 1] - begin;
    const std::uint32_t* ids = batch.ids.data() + begin;
    const float* values = batch.values.data() + begin;
    model_.forward_sparse(ids, values, count, hidden_.data() + r * shape_.hidden,
                          logits_.data() + r * shape_.classes);
    loss += row_backward(r, batch.labels[r], scale);
    const float* delta = delta1_.data() + r * width;
    for (std::size_t k = 0; k < count; ++k) {
      const std::uint32_t j = ids[k];
      if (touched_step_[j] != steps_) {
        touched_step_[j] = steps_;
        slot_[j] = static_cast<std::uint32_t>(touched_.size());
        touched_.push_back(j);
        const std::size_t needed = touched_.size() * width;
        if (grad_rows_.size() < needed) grad_rows_.resize(std::max(needed, 2 * grad_rows_.size()));
        std::fill_n(grad_rows_.data() + needed - width, width, 0.0f);
      }
      float* g = grad_rows_.data() + static_cast<std::size_t>(slot_[j]) * width;
      for (std::size_t i = 0; i < width; ++i) g[i] += values[k] * delta[i];
    }
  }
  update_small_layers();
  for (std::size_t k = 0; k < touched_.size(); ++k) {
    update_first_layer_row(touched_[k], grad_rows_.data() + k * width);
  }
  return loss;
}

double Trainer::step_dense(const float* x, const std::uint32_t* labels, std::size_t rows) {
  rows = std::min(rows, options_.max_batch_rows);
  if (rows == 0) return 0.0;
  ++steps_;
  adam_correction1_ = 1.0f - std::pow(options_.adam_beta1, static_cast<float>(steps_));
  adam_correction2_ = 1.0f - std::pow(options_.adam_beta2, static_cast<float>(steps_));
  const float scale = 1.0f / static_cast<float>(rows);
  const std::size_t width = shape_.width();
  const std::size_t inputs = shape_.inputs;
  if (grad_w1_.empty()) grad_w1_.assign(inputs * width, 0.0f);
  double loss = 0.0;
  for (std::size_t r = 0; r < rows; ++r) {
    const float* row = x + r * inputs;
    model_.forward_dense(row, hidden_.data() + r * shape_.hidden,
                         logits_.data() + r * shape_.classes);
    loss += row_backward(r, labels[r], scale);
    // The dense gradient Xᵀ·Δ: every input, zero or not.
    const float* delta = delta1_.data() + r * width;
    for (std::size_t j = 0; j < inputs; ++j) {
      float* g = grad_w1_.data() + j * width;
      for (std::size_t i = 0; i < width; ++i) g[i] += row[j] * delta[i];
    }
  }
  update_small_layers();
  for (std::size_t j = 0; j < inputs; ++j) update_first_layer_row(j, grad_w1_.data() + j * width);
  return loss;
}

}  // namespace trainer
