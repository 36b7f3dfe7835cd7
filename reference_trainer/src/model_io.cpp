#include "trainer/model_io.h"

#include <cstdint>
#include <cstring>
#include <fstream>

#include "trainer/error.h"

namespace trainer {

namespace {

constexpr char kMagic[8] = {'M', 'S', 'T', 'G', 'M', 'D', 'L', '1'};
// Refuse absurd sizes from a corrupt file before allocating for them.
constexpr std::uint64_t kMaxElements = std::uint64_t{1} << 34;

class Writer {
 public:
  explicit Writer(const std::string& path) : path_(path), out_(path, std::ios::binary) {
    if (!out_) throw Error(path + ": cannot write the model file");
  }
  template <typename T>
  void scalar(T value) {
    out_.write(reinterpret_cast<const char*>(&value), sizeof value);
  }
  void text(const std::string& s) {
    scalar<std::uint64_t>(s.size());
    out_.write(s.data(), static_cast<std::streamsize>(s.size()));
  }
  template <typename T>
  void array(const std::vector<T>& values) {
    out_.write(reinterpret_cast<const char*>(values.data()),
               static_cast<std::streamsize>(values.size() * sizeof(T)));
  }
  void close() {
    out_.close();
    if (!out_) throw Error(path_ + ": write failed");
  }

 private:
  std::string path_;
  std::ofstream out_;
};

class Reader {
 public:
  explicit Reader(const std::string& path) : path_(path), in_(path, std::ios::binary) {
    if (!in_) throw Error(path + ": cannot open the model file");
  }
  void bytes(void* to, std::size_t count) {
    in_.read(static_cast<char*>(to), static_cast<std::streamsize>(count));
    if (!in_) throw Error(path_ + ": truncated model file");
  }
  template <typename T>
  T scalar() {
    T value{};
    bytes(&value, sizeof value);
    return value;
  }
  std::uint64_t count() {
    const auto n = scalar<std::uint64_t>();
    if (n > kMaxElements) throw Error(path_ + ": corrupt model file (size " + std::to_string(n) + ")");
    return n;
  }
  std::string text() {
    std::string s(count(), '\0');
    bytes(s.data(), s.size());
    return s;
  }
  template <typename T>
  void array(std::vector<T>& values) {
    bytes(values.data(), values.size() * sizeof(T));
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::ifstream in_;
};

}  // namespace

void save_model(const std::string& path, const Model& model, const Vocabulary& vocabulary,
                unsigned hash_bits, bool bigrams, const std::vector<std::string>& labels) {
  Writer out(path);
  const ModelShape& shape = model.shape();
  for (char c : kMagic) out.scalar(c);
  out.scalar<std::uint32_t>(hash_bits);
  out.scalar<std::uint8_t>(bigrams ? 1 : 0);
  out.scalar<std::uint8_t>(model.quantized() ? 1 : 0);
  out.scalar<std::uint64_t>(shape.inputs);
  out.scalar<std::uint64_t>(shape.hidden);
  out.scalar<std::uint64_t>(shape.classes);
  out.scalar<std::uint64_t>(labels.size());
  for (const std::string& label : labels) out.text(label);
  out.scalar<std::uint64_t>(vocabulary.size());
  out.scalar<std::uint64_t>(vocabulary.unigram_count());
  for (std::size_t id = 0; id < vocabulary.size(); ++id) {
    out.text(vocabulary.term(id));
    out.scalar<double>(vocabulary.idf(id));
  }
  if (model.quantized()) {
    out.array(model.w1_int8);
    out.array(model.w1_scale);
  } else {
    out.array(model.w1);
  }
  out.array(model.b1);
  out.array(model.w2);
  out.array(model.b2);
  out.close();
}

SavedModel load_model(const std::string& path) {
  Reader in(path);
  char magic[sizeof kMagic];
  in.bytes(magic, sizeof magic);
  if (std::memcmp(magic, kMagic, sizeof kMagic) != 0) throw Error(path + ": not a memstage-trainer model file");
  SavedModel saved;
  saved.hash_bits = in.scalar<std::uint32_t>();
  saved.bigrams = in.scalar<std::uint8_t>() != 0;
  const bool quantized = in.scalar<std::uint8_t>() != 0;
  ModelShape shape;
  shape.inputs = in.count();
  shape.hidden = in.count();
  shape.classes = in.count();
  if (saved.hash_bits > 30 || shape.classes < 2 || shape.inputs == 0) {
    throw Error(path + ": corrupt model file (bad shape)");
  }
  const std::uint64_t label_count = in.count();
  if (label_count != shape.classes) throw Error(path + ": corrupt model file (labels)");
  for (std::uint64_t i = 0; i < label_count; ++i) saved.labels.push_back(in.text());
  const std::uint64_t terms = in.count();
  const std::uint64_t unigrams = in.count();
  if (unigrams > terms || (saved.hash_bits == 0 && terms != shape.inputs)) {
    throw Error(path + ": corrupt model file (vocabulary)");
  }
  std::vector<std::string> words;
  std::vector<double> idf;
  words.reserve(terms);
  idf.reserve(terms);
  for (std::uint64_t i = 0; i < terms; ++i) {
    words.push_back(in.text());
    idf.push_back(in.scalar<double>());
  }
  saved.vocabulary = Vocabulary(std::move(words), std::move(idf), unigrams);
  saved.model.set_shape(shape, quantized);
  if (quantized) {
    in.array(saved.model.w1_int8);
    in.array(saved.model.w1_scale);
  } else {
    in.array(saved.model.w1);
  }
  in.array(saved.model.b1);
  in.array(saved.model.w2);
  in.array(saved.model.b2);
  return saved;
}

}  // namespace trainer
