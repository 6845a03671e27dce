// Logits another engine computed, replayed through the Model seam so our own
// decoders can re-run that engine's decode and record it (how a Hugging Face
// generate() result becomes a trace: core/decode/hf_replay.h). Steps are
// given in the batch layout the engine used: step t holds one row per beam
// copy, row r = the logits (or log-probabilities) it read for copy r.
//
// Two lookups. by_row (the batch decoder's run): in forward call t, the
// queries at the call's deepest position take step t's rows in order, and
// each one's context (SlotTokenCache::context: the tokens its mask row
// reads) is remembered with its row. by_context (any later run, e.g. the trie
// decoder): a query gets the row remembered for its context. A context the
// engine never computed is an Error naming it, except strict prefixes of the
// prompt, whose rows no beam decoder reads (they are NaN).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/model/model.h"

namespace triescope {

class ScoresReplayModel final : public Model {
 public:
  enum class Lookup { by_row, by_context };
  // `steps[t]` holds `rows` x `vocab` floats. `description` is the trace
  // header's model object; `vocab_strings` may be empty.
  ScoresReplayModel(int32_t vocab, int32_t rows, std::vector<std::vector<float>> steps, std::vector<int32_t> prompt,
                    KvShape shape, nlohmann::json description, std::vector<std::string> vocab_strings = {});

  void set_lookup(Lookup l) { lookup_ = l; }
  int32_t steps() const { return static_cast<int32_t>(steps_.size()); }
  int32_t calls() const { return calls_; }  // forward calls since reset()

  int32_t vocab_size() const override { return vocab_; }
  void forward(const StepInput& in, Logits& out) override;
  void compact(const CompactionPlan& plan) override { cache_.compact(plan); }
  void reset() override;
  nlohmann::json describe() const override { return description_; }
  KvShape kv_shape() const override { return shape_; }
  std::vector<std::string> vocab_strings() const override { return vocab_strings_; }

 private:
  const float* row(int32_t step, int32_t r) const;
  int32_t vocab_, rows_;
  std::vector<std::vector<float>> steps_;
  std::vector<int32_t> prompt_;
  KvShape shape_;
  nlohmann::json description_;
  std::vector<std::string> vocab_strings_;
  Lookup lookup_ = Lookup::by_row;
  SlotTokenCache cache_;
  int32_t calls_ = 0;
  std::map<std::vector<int32_t>, std::pair<int32_t, int32_t>> seen_;  // context -> (step, row)
};

}  // namespace triescope
