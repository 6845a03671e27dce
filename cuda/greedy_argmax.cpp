// The cuda backend's greedy argmax: uploads one logits row and runs the
// lookahead verification kernel over it with no candidates
// (cuda/greedy_argmax.h).
#include "cuda/greedy_argmax.h"

#include <algorithm>

#include "core/common/error.h"
#include "core/decode/greedy_decode.h"
#include "cuda/cuda_common.cuh"
#include "cuda/lookahead_verify.cuh"
#include "cuda/host_waits.h"

namespace triescope::cuda {

namespace {

class CudaGreedyArgmax final : public GreedyArgmax {
 public:
  explicit CudaGreedyArgmax(VerifyExec exec) : exec_(exec) {
    if (exec_ == VerifyExec::device) {
      require_device("cuda greedy argmax");
    }
  }

  int32_t argmax(const Logits& logits, int32_t row) override {
    TS_CHECK(row >= 0 && row < logits.rows && logits.vocab >= 1,
             "greedy argmax (cuda): row " << row << " outside the " << logits.rows << " rows of vocab " << logits.vocab);
    const float* src = logits.row(row);
    if (exec_ == VerifyExec::host_twin) {
      SerialBlock blk;
      float s_val[1];
      int32_t s_idx[1];
      return argmax_row_block(src, logits.vocab, s_val, s_idx, blk);
    }
    const auto V = static_cast<size_t>(logits.vocab);
    row_.reserve_discard(V, "greedy argmax: logits row");
    TS_CUDA_CHECK(cudaMemcpyAsync(row_.data(), src, V * sizeof(float), cudaMemcpyHostToDevice, 0), "greedy argmax: upload logits row");
    ints_.reserve_discard(3, "greedy argmax: outputs");  // [greedy, num_matched, error]
    LookaheadVerifyArgs a;
    a.logits = row_.data();
    a.rows = 1;
    a.vocab = logits.vocab;
    a.root_row = 0;
    a.num_cands = 0;
    a.greedy = ints_.data();
    a.depth = a.matched = a.num_matched = ints_.data() + 1;  // no candidates: never written but num_matched
    a.error = ints_.data() + 2;
    lookahead_verify(a, 0);
    int32_t out = -1;
    TS_CUDA_CHECK(counted_download(&out, a.greedy, sizeof(int32_t), 0), "greedy argmax: download");
    TS_CUDA_CHECK(counted_stream_sync(0), "greedy argmax: synchronise");
    return out;
  }

 private:
  VerifyExec exec_;
  DeviceBuffer<float> row_;
  DeviceBuffer<int32_t> ints_;
};

}  // namespace

std::shared_ptr<GreedyArgmax> make_greedy_argmax(VerifyExec exec) { return std::make_shared<CudaGreedyArgmax>(exec); }

}  // namespace triescope::cuda
