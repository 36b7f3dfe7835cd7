// A synthetic labelled corpus for scaling runs: words drawn from a Zipf distribution over
// a large vocabulary (so that, as in real text, distinct words keep appearing as the corpus
// grows), mixed with each class's own topic words (so that labels are learnable).
#pragma once

#include <cstdint>
#include <cstdio>

#include "trainer/examples.h"

namespace trainer {

struct CorpusOptions {
  std::uint64_t lines = 1000;
  std::size_t vocabulary = 1000000;  // background vocabulary size
  std::size_t classes = 8;
  std::size_t topic_words = 300;     // words per class topic
  double zipf_exponent = 1.05;
  std::size_t words_per_line = 40;   // mean; lines have 50 % to 150 % of it
  double topic_share = 0.15;         // chance that a word comes from the line's class topic
  std::uint64_t seed = 1;
  Format format = Format::csv;
};

// Writes the corpus to `out`; throws Error on a write error. Deterministic for a seed.
void write_corpus(std::FILE* out, const CorpusOptions& options);

// The synthetic word of rank `rank`: distinct ranks give distinct lowercase words.
void synthetic_word(std::uint64_t rank, std::string& out);

}  // namespace trainer
