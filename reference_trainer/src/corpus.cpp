#include "trainer/corpus.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "trainer/error.h"

namespace trainer {

namespace {

struct Random {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  std::uint64_t below(std::uint64_t n) { return next() % n; }
};

constexpr const char* kSyllables[] = {"ba", "ke", "li", "mo", "nu", "ra", "se", "ti", "vo", "zu",
                                      "da", "fe", "gi", "ho", "ju", "pa", "qe", "wi", "xo", "yu"};
constexpr std::uint64_t kSyllableCount = sizeof kSyllables / sizeof kSyllables[0];

}  // namespace

void synthetic_word(std::uint64_t rank, std::string& out) {
  // Bijective base-20 numeral in syllables: every rank its own word, frequent ones short.
  out.clear();
  std::uint64_t n = rank + 1;
  while (n > 0) {
    --n;
    out += kSyllables[n % kSyllableCount];
    n /= kSyllableCount;
  }
}

void write_corpus(std::FILE* out, const CorpusOptions& options) {
  if (options.classes < 2) throw Error("a corpus needs at least 2 classes");
  if (options.vocabulary < options.topic_words * 2) throw Error("the vocabulary is too small");
  Random random{options.seed};
  // Cumulative Zipf weights: rank r has weight 1 / (r + 1)^s.
  std::vector<double> cumulative(options.vocabulary);
  double sum = 0.0;
  for (std::size_t r = 0; r < options.vocabulary; ++r) {
    sum += 1.0 / std::pow(static_cast<double>(r + 1), options.zipf_exponent);
    cumulative[r] = sum;
  }
  // Topic words come from the middle ranks: frequent enough to be seen, not stop words.
  const std::size_t topic_low = std::min<std::size_t>(200, options.vocabulary / 4);
  const std::size_t topic_span = std::min<std::size_t>(50000, options.vocabulary - topic_low);
  std::vector<std::uint64_t> topics(options.classes * options.topic_words);
  for (std::uint64_t& word : topics) word = topic_low + random.below(topic_span);

  if (options.format == Format::csv) std::fputs("text,label\n", out);
  std::string word;
  std::string line;
  for (std::uint64_t i = 0; i < options.lines; ++i) {
    const std::size_t label = random.below(options.classes);
    const std::size_t words =
        std::max<std::size_t>(1, options.words_per_line / 2 + random.below(options.words_per_line + 1));
    line.clear();
    if (options.format == Format::fasttext) {
      line += "__label__c";
      line += std::to_string(label);
      line += ' ';
    }
    for (std::size_t w = 0; w < words; ++w) {
      std::uint64_t rank;
      if (random.unit() < options.topic_share) {
        rank = topics[label * options.topic_words + random.below(options.topic_words)];
      } else {
        const double target = random.unit() * sum;
        rank = static_cast<std::uint64_t>(
            std::lower_bound(cumulative.begin(), cumulative.end(), target) - cumulative.begin());
        rank = std::min<std::uint64_t>(rank, options.vocabulary - 1);
      }
      synthetic_word(rank, word);
      if (w != 0) line += ' ';
      line += word;
    }
    if (options.format == Format::csv) {
      line += ",c";
      line += std::to_string(label);
    }
    line += '\n';
    if (std::fwrite(line.data(), 1, line.size(), out) != line.size()) {
      throw Error("write error while writing the corpus");
    }
  }
  if (std::fflush(out) != 0) throw Error("write error while writing the corpus");
}

}  // namespace trainer
