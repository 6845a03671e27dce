#include "core/decode/prompt_check.h"

#include "core/common/error.h"

namespace triescope {

void prompt_check(const std::vector<int32_t>& prompt, int32_t vocab_size, const char* who) {
  TS_CHECK(!prompt.empty(), who << ": prompt must hold at least one token");
  for (size_t i = 0; i < prompt.size(); ++i)
    TS_CHECK(prompt[i] >= 0 && prompt[i] < vocab_size,
             who << ": prompt[" << i << "] = " << prompt[i] << " outside vocabulary [0, " << vocab_size << ")");
}

}  // namespace triescope
