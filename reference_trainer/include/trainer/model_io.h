// The saved model: everything needed to classify new text (feature settings, vocabulary
// with idf, labels, weights as float32 or int8), in one little-endian binary file.
//
//   "MSTGMDL1" | u32 hash_bits | u8 bigrams | u8 quantized | u64 inputs, hidden, classes
//   | u64 label count, labels (u64 length + bytes)
//   | u64 vocabulary size, u64 unigram count, terms (u64 length + bytes, f64 idf)
//   | first layer: f32 × inputs·width, or i8 × inputs·width then f32 scale × inputs
//   | f32 b1 × width | f32 w2 × hidden·classes | f32 b2 × (hidden ? classes : 0)
#pragma once

#include <string>
#include <vector>

#include "trainer/features.h"
#include "trainer/model.h"

namespace trainer {

struct SavedModel {
  Model model;
  Vocabulary vocabulary;  // empty with the hashing trick
  unsigned hash_bits = 0;
  bool bigrams = false;
  std::vector<std::string> labels;
};

void save_model(const std::string& path, const Model& model, const Vocabulary& vocabulary,
                unsigned hash_bits, bool bigrams, const std::vector<std::string>& labels);
// Throws Error naming the file when it is missing, truncated or not a model file.
SavedModel load_model(const std::string& path);

}  // namespace trainer
