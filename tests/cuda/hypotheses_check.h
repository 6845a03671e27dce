// A device decode's hypotheses against the CPU reference's: the same count,
// and each the same tokens and score, bit for bit.
#pragma once
#include <catch2/catch.hpp>

#include "core/decode/decode_result.h"

namespace triescope::testing {

inline void check_same_hypotheses(const DecodeResult& got, const DecodeResult& want) {
  REQUIRE(got.hypotheses.size() == want.hypotheses.size());
  for (size_t i = 0; i < want.hypotheses.size(); ++i) {
    CAPTURE(i);
    CHECK(got.hypotheses[i].tokens == want.hypotheses[i].tokens);
    CHECK(got.hypotheses[i].score == want.hypotheses[i].score);
  }
}

}  // namespace triescope::testing
