#include "core/model/scores_replay_model.h"

#include <algorithm>
#include <limits>

#include "core/common/error.h"
#include "core/common/list_text.h"

namespace triescope {

ScoresReplayModel::ScoresReplayModel(int32_t vocab, int32_t rows, std::vector<std::vector<float>> steps,
                                     std::vector<int32_t> prompt, KvShape shape, nlohmann::json description,
                                     std::vector<std::string> vocab_strings)
    : vocab_(vocab), rows_(rows), steps_(std::move(steps)), prompt_(std::move(prompt)), shape_(shape),
      description_(std::move(description)), vocab_strings_(std::move(vocab_strings)) {
  TS_CHECK(vocab_ >= 1 && rows_ >= 1, "scores replay: vocab " << vocab_ << " and rows " << rows_ << " must be >= 1");
  TS_CHECK(!steps_.empty(), "scores: no step recorded");
  TS_CHECK(!prompt_.empty(), "prompt: empty");
  for (size_t t = 0; t < steps_.size(); ++t)
    TS_CHECK(steps_[t].size() == static_cast<size_t>(rows_) * static_cast<size_t>(vocab_),
             "scores[" << t << "]: " << steps_[t].size() << " values, expected " << rows_ << " rows x " << vocab_);
}

void ScoresReplayModel::reset() {
  cache_.reset();
  calls_ = 0;
}

const float* ScoresReplayModel::row(int32_t step, int32_t r) const {
  return steps_[static_cast<size_t>(step)].data() + static_cast<size_t>(r) * static_cast<size_t>(vocab_);
}

void ScoresReplayModel::forward(const StepInput& in, Logits& out) {
  step_input_check(in, vocab_);
  cache_.write(in);
  const int32_t call = calls_++;
  const int32_t q = static_cast<int32_t>(in.tokens.size());
  out.resize(q, vocab_);
  const int32_t deepest = q ? *std::max_element(in.positions.begin(), in.positions.end()) : 0;
  int32_t next_row = 0;
  std::vector<int32_t> ctx;
  for (int32_t r = 0; r < q; ++r) {
    float* o = out.row(r);
    const bool exact = cache_.context(in, r, ctx);
    const bool prompt_prefix = exact && ctx.size() < prompt_.size() && std::equal(ctx.begin(), ctx.end(), prompt_.begin());
    if (lookup_ == Lookup::by_row && in.positions[static_cast<size_t>(r)] == deepest) {
      TS_CHECK(call < steps(), "scores: the replay needs step " << call << "'s scores, the run recorded " << steps()
                                                                << " steps (the decode did not stop where the engine's did)");
      TS_CHECK(next_row < rows_, "scores[" << call << "]: the replay feeds more than its " << rows_ << " rows");
      TS_CHECK(exact, "scores replay: row " << next_row << " of step " << call << " does not read one token per position");
      std::copy_n(row(call, next_row), vocab_, o);
      seen_.emplace(ctx, std::make_pair(call, next_row));
      ++next_row;
      continue;
    }
    if (prompt_prefix) {
      std::fill(o, o + vocab_, std::numeric_limits<float>::quiet_NaN());
      continue;
    }
    TS_CHECK(exact, "scores replay: query " << r << " of call " << call << " does not read one token per position");
    const auto it = seen_.find(ctx);
    TS_CHECK(it != seen_.end(), "scores replay: the engine never computed the continuation of " << list_text(ctx)
                                                                                               << " (the two decodes kept different beams)");
    std::copy_n(row(it->second.first, it->second.second), vocab_, o);
  }
}

}  // namespace triescope
