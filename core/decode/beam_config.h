// Beam search settings with Hugging Face semantics (num_beams, top 2b
// candidates, EOS handling, length_penalty, early_stopping).
#pragma once
#include <cstdint>

#include <nlohmann/json.hpp>

#include "core/config/json_reader.h"

namespace triescope {

enum class EarlyStopping { yes, no, never };

struct BeamConfig {
  int32_t num_beams = 3;
  int32_t max_new_tokens = 16;
  int32_t eos_token = -1;  // -1: no EOS
  double length_penalty = 1.0;
  EarlyStopping early_stopping = EarlyStopping::no;
  int32_t gc_interval = 0;  // trie only: collect garbage after every g-th step (0: never)

  static BeamConfig from_json(JsonObjectReader r, int32_t vocab_size);
  nlohmann::json to_json() const;
};

}  // namespace triescope
