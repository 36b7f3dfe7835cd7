// Tokenizer, vocabulary fitting and pruning, the hashing trick, TF-IDF rows.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>

#include "trainer/features.h"
#include "trainer/tokenizer.h"


namespace {

std::vector<std::string> tokens_of(const std::string& text) {
  trainer::Tokenizer tokenizer;
  std::vector<std::string_view> views;
  tokenizer.tokenize(text, views);
  return {views.begin(), views.end()};
}

}  // namespace

TEST_CASE("tokenizer: lowercase word runs, punctuation splits, UTF-8 kept in words",
          "[features][tokenizer]") {
  CHECK(tokens_of("Hello, World!") == std::vector<std::string>{"hello", "world"});
  CHECK(tokens_of("libfoo-dev (2.0_rc1) C++") ==
        std::vector<std::string>{"libfoo", "dev", "2", "0_rc1", "c"});
  CHECK(tokens_of("  \t ").empty());
  CHECK(tokens_of("caf\xC3\xA9 na\xC3\xAFve") ==
        std::vector<std::string>{"caf\xC3\xA9", "na\xC3\xAFve"});
  CHECK(tokens_of("URL EMAIL") == std::vector<std::string>{"url", "email"});
}

TEST_CASE("vocabulary: counts, min count, max features, unigrams before bigrams",
          "[features][vocabulary]") {
  trainer::Tokenizer tokenizer;
  std::vector<std::string_view> tokens;
  trainer::VocabularyOptions options;
  options.bigrams = true;
  trainer::VocabularyBuilder all(options);
  options.min_count = 2;
  trainer::VocabularyBuilder frequent(options);
  options.min_count = 1;
  options.max_features = 3;
  trainer::VocabularyBuilder top3(options);
  for (const char* doc : {"a b a c", "a b d", "a e"}) {
    tokenizer.tokenize(doc, tokens);
    all.add_document(tokens);
    frequent.add_document(tokens);
    top3.add_document(tokens);
  }
  const auto v = all.build();
  // unigrams a(4) b(2) c d e(1), then bigrams "a b"(2) "a c" "a e" "b a" "b d"(1)
  REQUIRE(v.unigram_count() == 5);
  REQUIRE(v.size() == 10);
  CHECK(v.term(0) == "a");
  CHECK(v.term(1) == "b");
  CHECK(v.term(2) == "c");  // ties by term
  CHECK(v.term(5) == "a b");
  CHECK(v.find("zzz") == -1);
  CHECK(v.find("b d") >= 5);
  // idf: a is in all 3 documents → ln(4/4)+1 = 1; c in one → ln(4/2)+1.
  CHECK(v.idf(0) == Approx(1.0));
  CHECK(v.idf(2) == Approx(std::log(2.0) + 1.0));

  const auto f = frequent.build();
  CHECK(f.terms() == std::vector<std::string>{"a", "b", "a b"});

  const auto t = top3.build();
  CHECK(t.terms() == std::vector<std::string>{"a", "b", "a b"});
}

TEST_CASE("vocabulary: a bounded counting pass keeps the frequent terms", "[features][vocabulary]") {
  trainer::VocabularyOptions options;
  options.max_features = 10;
  options.max_candidates = 50;
  trainer::VocabularyBuilder builder(options);
  std::vector<std::string_view> tokens;
  std::vector<std::string> storage;
  for (int doc = 0; doc < 400; ++doc) {
    storage.clear();
    for (int k = 0; k < 10; ++k) storage.push_back("common" + std::to_string(k));
    storage.push_back("rare" + std::to_string(doc));  // 400 one-off terms
    tokens.assign(storage.begin(), storage.end());
    builder.add_document(tokens);
    CHECK(builder.candidates() <= 50);
  }
  const auto v = builder.build();
  REQUIRE(v.size() == 10);
  for (std::size_t id = 0; id < v.size(); ++id) CHECK(v.term(id).rfind("common", 0) == 0);
}

TEST_CASE("TF-IDF rows: counts times idf, unit norm, sorted ids, unknown terms ignored",
          "[features]") {
  trainer::Vocabulary v({"a", "b"}, {1.0, 2.0}, 2);
  trainer::FeatureExtractor extractor(v, false);
  std::vector<std::string_view> tokens{"b", "a", "a", "zzz"};
  std::vector<std::uint32_t> ids;
  std::vector<double> values;
  extractor.extract(tokens, ids, values);
  REQUIRE(ids == std::vector<std::uint32_t>{0, 1});
  // raw: a = 2 × 1, b = 1 × 2 → both 2, normalised to 1/√2
  CHECK(values[0] == Approx(1.0 / std::sqrt(2.0)));
  CHECK(values[1] == Approx(1.0 / std::sqrt(2.0)));
  tokens = {"zzz"};
  extractor.extract(tokens, ids, values);
  CHECK(ids.empty());
}

TEST_CASE("hashing trick: stable, in range, bigrams are ordered", "[features][hashing]") {
  CHECK(trainer::hash_token("") == 14695981039346656037ull);  // FNV-1a offset basis
  CHECK(trainer::hash_token("a") == 0xaf63dc4c8601ec8cull);   // published FNV-1a test vector
  const auto ha = trainer::hash_token("alpha");
  const auto hb = trainer::hash_token("beta");
  CHECK(trainer::hash_bigram(ha, hb) != trainer::hash_bigram(hb, ha));

  trainer::FeatureExtractor extractor(10, true);
  CHECK(extractor.dimension() == 1024);
  std::vector<std::string_view> tokens{"alpha", "beta", "gamma", "alpha"};
  std::vector<std::uint32_t> ids;
  std::vector<double> values;
  extractor.extract(tokens, ids, values);
  double norm = 0;
  for (std::size_t k = 0; k < ids.size(); ++k) {
    CHECK(ids[k] < 1024);
    if (k > 0) CHECK(ids[k] > ids[k - 1]);
    norm += values[k] * values[k];
  }
  CHECK(norm == Approx(1.0));
  CHECK(ids.size() >= 5);  // 3 words + 3 bigrams, unless two collide in 1024 buckets
  std::vector<std::uint32_t> again;
  extractor.extract(tokens, again, values);
  CHECK(again == ids);
}
