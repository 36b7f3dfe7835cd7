// A failure the user caused or can fix: printed as one line "memstage: ...", no trace.
#pragma once

#include <stdexcept>

namespace memstage::harness {

class CliError : public std::runtime_error {
 public:
  CliError(const std::string& message, int exit_code = 2)
      : std::runtime_error(message), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

}  // namespace memstage::harness
