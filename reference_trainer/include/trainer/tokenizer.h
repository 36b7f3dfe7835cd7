// Word tokens: maximal runs of ASCII letters, digits, '_' and any byte >= 0x80, lowercased
// (ASCII only). Counting every UTF-8 byte as a word character approximates Unicode `\w+`
// (what the data sets' vocabulary figures use) without a Unicode table; non-ASCII
// punctuation such as '—' then stays inside words, which is rare in these corpora.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace trainer {

class Tokenizer {
 public:
  // Fills `tokens` with views into this tokenizer's buffer; they stay valid until the
  // next call. Reuses all buffers.
  void tokenize(std::string_view text, std::vector<std::string_view>& tokens);

 private:
  std::string lowered_;
};

// FNV-1a, 64 bit: stable across runs and machines, so hashed models can be saved.
std::uint64_t hash_token(std::string_view token);
// The hash of the word bigram (a, b), from the hashes of its words.
std::uint64_t hash_bigram(std::uint64_t first, std::uint64_t second);

}  // namespace trainer
