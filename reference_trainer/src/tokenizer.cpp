#include "trainer/tokenizer.h"

#include <cstdint>

namespace trainer {

namespace {

bool is_word_byte(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '_' || c >= 0x80;
}

}  // namespace

void Tokenizer::tokenize(std::string_view text, std::vector<std::string_view>& tokens) {
  tokens.clear();
  lowered_.resize(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    lowered_[i] = static_cast<char>(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
  }
  const std::string_view lowered(lowered_);
  std::size_t i = 0;
  const std::size_t n = lowered.size();
  while (i < n) {
    while (i < n && !is_word_byte(static_cast<unsigned char>(lowered[i]))) ++i;
    const std::size_t start = i;
    while (i < n && is_word_byte(static_cast<unsigned char>(lowered[i]))) ++i;
    if (i > start) tokens.push_back(lowered.substr(start, i - start));
  }
}

std::uint64_t hash_token(std::string_view token) {
  std::uint64_t h = 14695981039346656037ull;
  for (char c : token) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

std::uint64_t hash_bigram(std::uint64_t first, std::uint64_t second) {
  // splitmix64 finalizer over an asymmetric combination: (a, b) and (b, a) differ.
  std::uint64_t z = first * 0x9E3779B97F4A7C15ull + second + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace trainer
