// The prompt checks every decoder runs first: non-empty, ids inside the vocabulary.
#pragma once
#include <cstdint>
#include <vector>

namespace triescope {

// Throws Error naming `who` and the first bad index.
void prompt_check(const std::vector<int32_t>& prompt, int32_t vocab_size, const char* who);

}  // namespace triescope
