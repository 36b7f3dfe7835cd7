#include "reports/analysis/ascending_numbers.h"

#include <catch2/catch.hpp>
#include <vector>

using memstage::reports::AscendingNumbers;

TEST_CASE("ascending numbers: ids met in ascending order are numbered 0, 1, 2, ... across words") {
  AscendingNumbers numbers(300);
  CHECK(numbers.number_of(0) == AscendingNumbers::kNone);
  const std::vector<uint32_t> ids = {0, 5, 63, 64, 127, 128, 200, 299};
  for (const uint32_t id : ids) CHECK(numbers.add(id));
  CHECK(numbers.size() == ids.size());
  for (uint32_t n = 0; n < ids.size(); ++n) CHECK(numbers.number_of(ids[n]) == n);
  for (const uint32_t id : {1u, 62u, 65u, 129u, 250u}) CHECK(numbers.number_of(id) == AscendingNumbers::kNone);
}

TEST_CASE("ascending numbers: an id not above the last, or out of range, is refused and changes nothing") {
  AscendingNumbers numbers(130);
  CHECK(numbers.add(70));
  CHECK_FALSE(numbers.add(70));
  CHECK_FALSE(numbers.add(3));
  CHECK_FALSE(numbers.add(130));
  CHECK(numbers.size() == 1);
  CHECK(numbers.number_of(3) == AscendingNumbers::kNone);
  CHECK(numbers.add(129));  // skips a word's worth of ids
  CHECK(numbers.number_of(70) == 0);
  CHECK(numbers.number_of(129) == 1);
  CHECK(numbers.number_of(200) == AscendingNumbers::kNone);
}

TEST_CASE("ascending numbers: made for no ids, it numbers none") {
  AscendingNumbers numbers;
  CHECK_FALSE(numbers.add(0));
  CHECK(numbers.number_of(0) == AscendingNumbers::kNone);
}
