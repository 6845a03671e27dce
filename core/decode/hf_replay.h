// A Hugging Face generate(num_beams=b, output_scores=True,
// return_dict_in_generate=True) run, re-decoded by our own batch and trie
// beam search over the scores it recorded (ScoresReplayModel), so the run
// gets the two traces TrieScope writes for its own decodes: HF's batch
// layout (batch_beam_search) and the equivalent trie (trie_beam_search).
// The replay must give back the sequences (and beam_indices) generate()
// returned; where it does not, the run's settings are not the ones given
// (num_beams, length_penalty, early_stopping, eos) and an Error says where.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/decode/beam_config.h"
#include "core/decode/decode_result.h"
#include "core/kv/kv_cache.h"
#include "core/trace/trace.h"

namespace triescope {

inline constexpr const char* kHfGenerateBackend = "hf-generate";

struct HfGenerateRun {
  std::vector<int32_t> prompt;
  int32_t vocab_size = 0;
  std::vector<std::vector<float>> scores;  // [steps][num_beams x vocab]: generate()'s `scores`
  // generate()'s `sequences` (prompt included, padded) and `beam_indices` ([returned][steps], -1 padded; may be empty).
  std::vector<std::vector<int64_t>> sequences;
  std::vector<std::vector<int64_t>> beam_indices;
  int32_t pad_token = -1;
  BeamConfig beam;  // num_beams, max_new_tokens, eos_token, length_penalty, early_stopping, gc_interval (trie)
  KvShape kv_shape;
  nlohmann::json model = nlohmann::json::object();  // what the header says about the model (type is set here)
  std::vector<std::string> vocab;
  int32_t keyframe_interval = 16;
  // One item of a batched generate(): `scores` may hold steps generate() ran
  // after this item finished (for the other items); they are not replayed.
  bool batch_item = false;
};

struct HfReplay {
  DecodeResult batch, trie;
};

// Replays `run` through batch_beam_search (trace to `batch_trace`) and
// trie_beam_search (to `trie_trace`); either sink may be null.
HfReplay hf_generate_replay(const HfGenerateRun& run, TraceSink* batch_trace, TraceSink* trie_trace);

}  // namespace triescope
