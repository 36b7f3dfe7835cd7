// The one exception type of the trainer: a message that is shown to the user as is,
// on one line, after "memstage-trainer: ". Anything else that escapes is a bug.
#pragma once

#include <stdexcept>
#include <string>

namespace trainer {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace trainer
