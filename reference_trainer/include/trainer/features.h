// From tokens to TF-IDF weighted feature vectors, over a fitted vocabulary or, with the
// hashing trick, over 2^bits hashed buckets with no vocabulary at all.
//
// Feature ids put every unigram before every bigram: the layout a naive pipeline gets by
// vectorizing the two blocks separately and concatenating them (hstack), so both
// pipelines index the same weights.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace trainer {

// Transparent hashing, so that string_view keys are looked up without building a string.
struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct VocabularyOptions {
  std::size_t max_features = 0;  // keep the most frequent terms; 0 = all
  std::uint64_t min_count = 1;   // drop terms seen fewer times
  bool bigrams = false;          // also count word bigrams ("a b")
  // Bound on distinct terms held while counting; 0 = unbounded. Past it, the rarest terms
  // are dropped (an approximate count, like gensim's max_vocab_size), so that the counting
  // pass's memory does not grow with the corpus.
  std::size_t max_candidates = 0;
};

class Vocabulary {
 public:
  Vocabulary() = default;
  // Terms in id order: `unigram_count` unigrams first, then bigrams. idf per term.
  Vocabulary(std::vector<std::string> terms, std::vector<double> idf, std::size_t unigram_count);

  std::size_t size() const { return terms_.size(); }
  std::size_t unigram_count() const { return unigram_count_; }
  // The id of `term`, or -1.
  std::int64_t find(std::string_view term) const;
  const std::string& term(std::size_t id) const { return terms_[id]; }
  double idf(std::size_t id) const { return idf_[id]; }
  const std::vector<std::string>& terms() const { return terms_; }
  const std::vector<double>& idfs() const { return idf_; }

 private:
  std::vector<std::string> terms_;
  std::vector<double> idf_;
  std::size_t unigram_count_ = 0;
  std::unordered_map<std::string, std::uint32_t, StringHash, std::equal_to<>> index_;
};

class VocabularyBuilder {
 public:
  explicit VocabularyBuilder(VocabularyOptions options);
  // Counts the terms of one document (its tokens, in order).
  void add_document(const std::vector<std::string_view>& tokens);
  // Prunes (min_count, max_features), orders (count descending, then term) and computes
  // smoothed idf = ln((1 + documents) / (1 + document frequency)) + 1.
  Vocabulary build() const;
  std::uint64_t documents() const { return documents_; }
  std::size_t candidates() const { return counts_.size(); }

 private:
  struct Counts {
    std::uint64_t count = 0;
    std::uint64_t documents = 0;
    std::uint64_t last_document = 0;  // so a term counts once per document in `documents`
  };
  void add_term(std::string_view term, bool bigram);
  void prune_candidates();

  VocabularyOptions options_;
  std::uint64_t documents_ = 0;
  std::uint64_t drop_below_ = 0;
  std::unordered_map<std::string, Counts, StringHash, std::equal_to<>> counts_;
  std::string bigram_;
};

class FeatureExtractor {
 public:
  // Over a vocabulary (not owned; must outlive this).
  FeatureExtractor(const Vocabulary& vocabulary, bool bigrams);
  // Hashing trick: 2^hash_bits buckets, idf 1.
  FeatureExtractor(unsigned hash_bits, bool bigrams);

  std::size_t dimension() const { return dimension_; }
  bool bigrams() const { return bigrams_; }

  // Sorted, distinct feature ids of `tokens` with their TF-IDF weight (raw count × idf),
  // the row scaled to unit L2 norm. Out-of-vocabulary terms are ignored. Reuses buffers.
  void extract(const std::vector<std::string_view>& tokens, std::vector<std::uint32_t>& ids,
               std::vector<double>& values);

 private:
  void add(std::uint32_t id) { scratch_.push_back(id); }

  const Vocabulary* vocabulary_ = nullptr;
  unsigned hash_bits_ = 0;
  bool bigrams_ = false;
  std::size_t dimension_ = 0;
  std::vector<std::uint32_t> scratch_;
  std::string bigram_;
};

}  // namespace trainer
