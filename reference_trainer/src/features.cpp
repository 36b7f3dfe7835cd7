#include "trainer/features.h"

#include <algorithm>
#include <cmath>

#include "trainer/tokenizer.h"

namespace trainer {

Vocabulary::Vocabulary(std::vector<std::string> terms, std::vector<double> idf,
                       std::size_t unigram_count)
    : terms_(std::move(terms)), idf_(std::move(idf)), unigram_count_(unigram_count) {
  index_.reserve(terms_.size());
  for (std::size_t id = 0; id < terms_.size(); ++id) {
    index_.emplace(terms_[id], static_cast<std::uint32_t>(id));
  }
}

std::int64_t Vocabulary::find(std::string_view term) const {
  const auto it = index_.find(term);
  return it == index_.end() ? -1 : static_cast<std::int64_t>(it->second);
}

VocabularyBuilder::VocabularyBuilder(VocabularyOptions options) : options_(options) {}

void VocabularyBuilder::add_term(std::string_view term, bool /*bigram*/) {
  auto it = counts_.find(term);
  if (it == counts_.end()) it = counts_.emplace(std::string(term), Counts{}).first;
  Counts& c = it->second;
  ++c.count;
  if (c.last_document != documents_) {
    c.last_document = documents_;
    ++c.documents;
  }
}

void VocabularyBuilder::add_document(const std::vector<std::string_view>& tokens) {
  ++documents_;  // documents are numbered from 1, so last_document 0 means "never"
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    add_term(tokens[i], false);
    if (options_.bigrams && i + 1 < tokens.size()) {
      bigram_.assign(tokens[i]);
      bigram_.push_back(' ');
      bigram_.append(tokens[i + 1]);
      add_term(bigram_, true);
    }
  }
  if (options_.max_candidates != 0 && counts_.size() > options_.max_candidates) {
    prune_candidates();
  }
}

void VocabularyBuilder::prune_candidates() {
  // Raise the bar until at most half the budget is left, so that pruning is rare.
  while (counts_.size() > options_.max_candidates / 2) {
    ++drop_below_;
    std::erase_if(counts_, [&](const auto& entry) { return entry.second.count < drop_below_; });
  }
}

Vocabulary VocabularyBuilder::build() const {
  struct Candidate {
    const std::string* term;
    const Counts* counts;
    bool bigram;
  };
  std::vector<Candidate> kept;
  kept.reserve(counts_.size());
  for (const auto& [term, counts] : counts_) {
    if (counts.count < options_.min_count) continue;
    kept.push_back({&term, &counts, term.find(' ') != std::string::npos});
  }
  const auto by_frequency = [](const Candidate& a, const Candidate& b) {
    if (a.counts->count != b.counts->count) return a.counts->count > b.counts->count;
    return *a.term < *b.term;
  };
  if (options_.max_features != 0 && kept.size() > options_.max_features) {
    std::partial_sort(kept.begin(), kept.begin() + static_cast<std::ptrdiff_t>(options_.max_features),
                      kept.end(), by_frequency);
    kept.resize(options_.max_features);
  }
  // Unigram block first, then bigrams; each by frequency.
  std::sort(kept.begin(), kept.end(), [&](const Candidate& a, const Candidate& b) {
    if (a.bigram != b.bigram) return !a.bigram;
    return by_frequency(a, b);
  });
  std::vector<std::string> terms;
  std::vector<double> idf;
  terms.reserve(kept.size());
  idf.reserve(kept.size());
  std::size_t unigrams = 0;
  const double n = static_cast<double>(documents_);
  for (const Candidate& c : kept) {
    terms.push_back(*c.term);
    idf.push_back(std::log((1.0 + n) / (1.0 + static_cast<double>(c.counts->documents))) + 1.0);
    if (!c.bigram) ++unigrams;
  }
  return Vocabulary(std::move(terms), std::move(idf), unigrams);
}

FeatureExtractor::FeatureExtractor(const Vocabulary& vocabulary, bool bigrams)
    : vocabulary_(&vocabulary), bigrams_(bigrams), dimension_(vocabulary.size()) {}

FeatureExtractor::FeatureExtractor(unsigned hash_bits, bool bigrams)
    : hash_bits_(hash_bits), bigrams_(bigrams), dimension_(std::size_t{1} << hash_bits) {}

void FeatureExtractor::extract(const std::vector<std::string_view>& tokens,
                               std::vector<std::uint32_t>& ids, std::vector<double>& values) {
  scratch_.clear();
  if (vocabulary_ != nullptr) {
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      const std::int64_t id = vocabulary_->find(tokens[i]);
      if (id >= 0) add(static_cast<std::uint32_t>(id));
      if (bigrams_ && i + 1 < tokens.size()) {
        bigram_.assign(tokens[i]);
        bigram_.push_back(' ');
        bigram_.append(tokens[i + 1]);
        const std::int64_t bigram_id = vocabulary_->find(bigram_);
        if (bigram_id >= 0) add(static_cast<std::uint32_t>(bigram_id));
      }
    }
  } else {
    const std::uint64_t mask = (std::uint64_t{1} << hash_bits_) - 1;
    std::uint64_t previous = 0;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      const std::uint64_t h = hash_token(tokens[i]);
      add(static_cast<std::uint32_t>(h & mask));
      if (bigrams_ && i > 0) add(static_cast<std::uint32_t>(hash_bigram(previous, h) & mask));
      previous = h;
    }
  }
  std::sort(scratch_.begin(), scratch_.end());
  ids.clear();
  values.clear();
  double norm_squared = 0.0;
  for (std::size_t i = 0; i < scratch_.size();) {
    std::size_t j = i;
    while (j < scratch_.size() && scratch_[j] == scratch_[i]) ++j;
    const double weight =
        static_cast<double>(j - i) * (vocabulary_ != nullptr ? vocabulary_->idf(scratch_[i]) : 1.0);
    ids.push_back(scratch_[i]);
    values.push_back(weight);
    norm_squared += weight * weight;
    i = j;
  }
  if (norm_squared > 0.0) {
    const double scale = 1.0 / std::sqrt(norm_squared);
    for (double& v : values) v *= scale;
  }
}

}  // namespace trainer
