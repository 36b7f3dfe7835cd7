// Shell-like word splitting for `--variant name='CMD ARGS'`, without a shell: the words
// are run with execvp, so nothing is expanded ($VAR, globs, ~) and no shell is started.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace memstage::compare {

class WordSplitError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Splits at unquoted blanks (space, tab, newline). As in POSIX sh: '…' keeps everything
// literally; "…" keeps everything but lets a backslash escape \ " $ ` and newline; an unquoted
// backslash escapes the next character. '' and "" make an empty word. Throws WordSplitError on an
// unterminated quote or a trailing backslash.
std::vector<std::string> split_words(std::string_view text);

}  // namespace memstage::compare
