#include "harness/compare/word_split.h"

namespace memstage::compare {

std::vector<std::string> split_words(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;  // separate from word.empty(): '' is a word, and an empty one
  size_t i = 0;
  const size_t n = text.size();
  while (i < n) {
    const char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      ++i;
    } else if (c == '\'') {
      const size_t close = text.find('\'', i + 1);
      if (close == std::string_view::npos) throw WordSplitError("unterminated ' in: " + std::string(text));
      word.append(text.substr(i + 1, close - i - 1));
      in_word = true;
      i = close + 1;
    } else if (c == '"') {
      ++i;
      bool closed = false;
      while (i < n) {
        const char d = text[i];
        if (d == '"') {
          closed = true;
          ++i;
          break;
        }
        if (d == '\\' && i + 1 < n &&
            (text[i + 1] == '\\' || text[i + 1] == '"' || text[i + 1] == '$' || text[i + 1] == '`' ||
             text[i + 1] == '\n')) {
          if (text[i + 1] != '\n') word.push_back(text[i + 1]);  // \newline joins lines
          i += 2;
          continue;
        }
        word.push_back(d);
        ++i;
      }
      if (!closed) throw WordSplitError("unterminated \" in: " + std::string(text));
      in_word = true;
    } else if (c == '\\') {
      if (i + 1 >= n) throw WordSplitError("trailing \\ in: " + std::string(text));
      if (text[i + 1] != '\n') {
        word.push_back(text[i + 1]);
        in_word = true;
      }
      i += 2;
    } else {
      word.push_back(c);
      in_word = true;
      ++i;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

}  // namespace memstage::compare
