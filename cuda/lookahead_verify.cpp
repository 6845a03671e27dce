// The cuda backend's lookahead verifier: uploads the verification pass's
// logits and the candidate tree, runs cuda/lookahead_verify.h on the device
// (or, for the CPU tests, on the host with a block of one thread) and reads
// back every row's greedy token and the accepted path.
#include <algorithm>
#include <vector>

#include "core/common/error.h"
#include "core/decode/lookahead.h"
#include "core/trace/trace.h"
#include "cuda/cuda_common.cuh"
#include "cuda/device_verifiers.h"
#include "cuda/lookahead_verify.h"
#include "cuda/lookahead_verify.cuh"
#include "cuda/host_waits.h"

namespace triescope::cuda {

namespace {

template <typename T>
void put(DeviceBuffer<T>& d, const T* src, size_t n, const char* what) {
  d.reserve_discard(std::max<size_t>(n, 1), what);
  if (n) TS_CUDA_CHECK(cudaMemcpyAsync(d.data(), src, n * sizeof(T), cudaMemcpyHostToDevice, 0), what);
}

class CudaLookaheadVerifier final : public LookaheadVerifier {
 public:
  explicit CudaLookaheadVerifier(VerifyExec exec) : exec_(exec) {
    if (exec_ == VerifyExec::device) {
      require_device("cuda verifier");
    }
  }

  LookaheadVerifyOutput verify(const Logits& logits, int32_t root_row, const std::vector<int32_t>& cand_row,
                               const std::vector<int32_t>& cand_parent, const std::vector<int32_t>& cand_token) override {
    TS_CHECK(cand_row.size() == cand_parent.size() && cand_row.size() == cand_token.size(),
             "lookahead verify (cuda): candidate arrays of different lengths");
    TS_CHECK(logits.rows >= 1 && root_row >= 0 && root_row < logits.rows,
             "lookahead verify (cuda): root row " << root_row << " outside the " << logits.rows << " rows");
    const auto nc = static_cast<int32_t>(cand_row.size());
    LookaheadVerifyArgs a;
    a.rows = logits.rows;
    a.vocab = logits.vocab;
    a.root_row = root_row;
    a.num_cands = nc;
    LookaheadVerifyOutput out;
    out.greedy.assign(static_cast<size_t>(logits.rows), -1);
    std::vector<int32_t> depth(std::max<size_t>(cand_row.size(), 1)), matched(std::max<size_t>(cand_row.size(), 1));
    int32_t num_matched = 0, error = 0;
    if (exec_ == VerifyExec::host_twin) {
      SerialBlock blk;
      float s_val[1];
      int32_t s_idx[1];
      for (int32_t r = 0; r < logits.rows; ++r)
        out.greedy[static_cast<size_t>(r)] = argmax_row_block(logits.row(r), logits.vocab, s_val, s_idx, blk);
      a.logits = logits.data.data();
      a.cand_row = cand_row.data();
      a.cand_parent = cand_parent.data();
      a.cand_token = cand_token.data();
      a.greedy = out.greedy.data();
      a.depth = depth.data();
      a.matched = matched.data();
      a.num_matched = &num_matched;
      a.error = &error;
      lookahead_match_serial(a);
    } else {
      put(logits_, logits.data.data(), logits.data.size(), "lookahead verify: upload logits");
      std::vector<int32_t> packed;  // [rows | parent | token] of the candidates, then outputs
      packed.insert(packed.end(), cand_row.begin(), cand_row.end());
      packed.insert(packed.end(), cand_parent.begin(), cand_parent.end());
      packed.insert(packed.end(), cand_token.begin(), cand_token.end());
      const size_t n = cand_row.size();
      const size_t total = 3 * n + static_cast<size_t>(logits.rows) + 2 * n + 2;
      ints_.reserve_discard(total, "lookahead verify: candidates");
      if (!packed.empty())
        TS_CUDA_CHECK(cudaMemcpyAsync(ints_.data(), packed.data(), packed.size() * sizeof(int32_t), cudaMemcpyHostToDevice, 0),
                      "lookahead verify: upload candidates");
      int32_t* base = ints_.data();
      a.logits = logits_.data();
      a.cand_row = base;
      a.cand_parent = base + n;
      a.cand_token = base + 2 * n;
      a.greedy = base + 3 * n;
      a.depth = a.greedy + logits.rows;
      a.matched = a.depth + n;
      a.num_matched = a.matched + n;
      a.error = a.num_matched + 1;
      lookahead_verify(a, 0);
      TS_CUDA_CHECK(counted_download(out.greedy.data(), a.greedy, static_cast<size_t>(logits.rows) * sizeof(int32_t), 0),
                    "lookahead verify: download greedy tokens");
      if (n)
        TS_CUDA_CHECK(counted_download(matched.data(), a.matched, n * sizeof(int32_t), 0),
                      "lookahead verify: download path");
      TS_CUDA_CHECK(counted_download(&num_matched, a.num_matched, sizeof(int32_t), 0), "lookahead verify: download");
      TS_CUDA_CHECK(counted_download(&error, a.error, sizeof(int32_t), 0), "lookahead verify: download");
      TS_CUDA_CHECK(counted_stream_sync(0), "lookahead verify: synchronise");
    }
    TS_CHECK(error == 0, "lookahead verify (cuda): candidate " << error - 1 << " has a bad parent or row");
    out.matched.assign(matched.begin(), matched.begin() + num_matched);
    return out;
  }

 private:
  VerifyExec exec_;
  DeviceBuffer<float> logits_;
  DeviceBuffer<int32_t> ints_;
};

}  // namespace

std::shared_ptr<LookaheadVerifier> make_lookahead_verifier(VerifyExec exec) { return std::make_shared<CudaLookaheadVerifier>(exec); }

TRIESCOPE_REGISTER_DEVICE_VERIFIER(device_verifier<LookaheadVerifier>(kVerifyLookahead, make_lookahead_verifier));

}  // namespace triescope::cuda
