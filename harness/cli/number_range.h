// A numeric option's check. CLI11's Range says "Value abc not in range" of a word that is no
// number at all, and nothing of the range: this names the word and the range.
#pragma once

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdlib>
#include <string>
#include <type_traits>

#include <fmt/format.h>

namespace memstage::harness {

template <typename T>
CLI::Validator number_in(T low, T high) {
  const std::string range = fmt::format("{}..{}", low, high);
  return CLI::Validator(
      [low, high, range](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        const bool number = !text.empty() && end == text.c_str() + text.size() && std::isfinite(value) &&
                            (!std::is_integral_v<T> || value == std::floor(value));
        if (!number) return fmt::format("'{}' is not {} (expected {})", text, std::is_integral_v<T> ? "a whole number" : "a number", range);
        if (value < low || value > high) return fmt::format("{} is out of range (expected {})", text, range);
        return {};
      },
      "in " + range);
}

}  // namespace memstage::harness
