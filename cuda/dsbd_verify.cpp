// The cuda backend's DSBD and speculative verifiers: marshal core's vectors
// into cuda/dsbd_verify.h's argument structs and run the block algorithm on
// the device (one block) or, for the CPU tests, on the host with a block of
// one thread. Both read back the same LayerResult / SpecChainResult.
#include <algorithm>
#include <vector>

#include "core/common/error.h"
#include "core/decode/dsbd.h"
#include "core/decode/speculative.h"
#include "core/trace/trace.h"
#include "cuda/cuda_common.cuh"
#include "cuda/device_verifiers.h"
#include "cuda/dsbd_verify.h"
#include "cuda/dsbd_verify.cuh"
#include "cuda/host_waits.h"

namespace triescope::cuda {

namespace {

void verify_error_check(int32_t code, const char* what) {
  const auto e = static_cast<VerifyError>(code);
  if (e == VerifyError::none) return;
  TS_CHECK(e != VerifyError::draft_out_of_range, what << ": a draft outside the domain");
  TS_CHECK(e != VerifyError::no_positive_entry, what << ": sample_index: distribution has no positive entry");
  TS_CHECK(e != VerifyError::empty_residual, what << ": empty residual after a rejection");
  TS_FAIL(what << ": unknown verification error " << code);
}

template <typename T>
void put(DeviceBuffer<T>& d, const T* src, size_t n, const char* what) {
  d.reserve_discard(std::max<size_t>(n, 1), what);
  if (n) TS_CUDA_CHECK(cudaMemcpyAsync(d.data(), src, n * sizeof(T), cudaMemcpyHostToDevice, 0), what);
}
template <typename T>
void get(T* dst, const DeviceBuffer<T>& d, size_t n, const char* what) {
  if (n) TS_CUDA_CHECK(counted_download(dst, d.data(), n * sizeof(T), 0), what);
}

class CudaSampleVerifier final : public DsbdLayerVerifier, public SpeculativeVerifier {
 public:
  explicit CudaSampleVerifier(VerifyExec exec) : exec_(exec) {
    if (exec_ == VerifyExec::device) {
      std::string why;
      TS_CHECK(device_count(&why) > 0, "cuda verifier: no usable CUDA device (" << why << ")");
    }
  }

  LayerResult verify_layer(const std::vector<double>& p, const std::vector<double>& q, const std::vector<int64_t>& drafts,
                           int32_t width, AcceptRatio ratio, uint64_t seed, uint32_t step, uint32_t layer) override {
    TS_CHECK(p.size() == q.size(), "dsbd verify (cuda): p and q have different domains");
    TS_CHECK(width >= 1, "dsbd verify (cuda): width must be >= 1, got " << width);
    for (int64_t x : drafts)
      TS_CHECK(x >= 0 && static_cast<size_t>(x) < p.size(), "dsbd verify (cuda): draft pair " << x << " outside the domain of " << p.size());
    const auto nd = static_cast<int32_t>(drafts.size());
    DsbdVerifyArgs a{};
    a.n = static_cast<int64_t>(p.size());
    a.num_drafts = nd;
    a.width = width;
    a.ratio_q_over_p = ratio == AcceptRatio::q_over_p ? 1 : 0;
    a.draws = {seed, step, layer, 0};
    std::vector<VerifyDecision> tested(drafts.size());
    std::vector<int64_t> outputs(static_cast<size_t>(width));
    int32_t counts[4] = {0, 0, 0, 0};
    if (exec_ == VerifyExec::host_twin) {
      std::vector<double> pp(p.size());
      a.p = p.data();
      a.q = q.data();
      a.drafts = drafts.data();
      a.pp = pp.data();
      a.tested = tested.data();
      a.outputs = outputs.data();
      a.counts = counts;
      VerifyShared sh{};
      SerialBlock blk;
      dsbd_verify_block(a, sh, blk);
    } else {
      put(p_, p.data(), p.size(), "dsbd verify: upload p");
      put(q_, q.data(), q.size(), "dsbd verify: upload q");
      put(drafts_, drafts.data(), drafts.size(), "dsbd verify: upload drafts");
      pp_.reserve_discard(std::max<size_t>(p.size(), 1), "dsbd verify: p'");
      tested_.reserve_discard(std::max<size_t>(drafts.size(), 1), "dsbd verify: decisions");
      outputs_.reserve_discard(static_cast<size_t>(width), "dsbd verify: outputs");
      counts_.reserve_discard(4, "dsbd verify: counts");
      a.p = p_.data();
      a.q = q_.data();
      a.drafts = drafts_.data();
      a.pp = pp_.data();
      a.tested = tested_.data();
      a.outputs = outputs_.data();
      a.counts = counts_.data();
      dsbd_verify_layer(a, 0);
      get(counts, counts_, 4, "dsbd verify: download counts");
      get(tested.data(), tested_, tested.size(), "dsbd verify: download decisions");
      get(outputs.data(), outputs_, outputs.size(), "dsbd verify: download outputs");
      TS_CUDA_CHECK(counted_stream_sync(0), "dsbd verify: synchronise");
    }
    verify_error_check(counts[3], "dsbd verify (cuda)");
    LayerResult r;
    for (int32_t i = 0; i < counts[0]; ++i) {
      const VerifyDecision& d = tested[static_cast<size_t>(i)];
      r.tested.push_back({d.pair, d.draft, d.accept_prob, d.u, d.accepted != 0});
    }
    r.outputs.assign(outputs.begin(), outputs.begin() + counts[1]);
    r.passed = counts[2] != 0;
    return r;
  }

  SpecChainResult verify_chain(const std::vector<std::vector<double>>& p, const std::vector<std::vector<double>>& q,
                               const std::vector<int32_t>& tokens, uint64_t seed, uint32_t iteration) override {
    const auto g = static_cast<int32_t>(tokens.size());
    TS_CHECK(q.size() == tokens.size() && p.size() == tokens.size() + 1,
             "speculative verify (cuda): need g + 1 target rows and g draft rows, got " << p.size() << " and " << q.size() << " for g = " << g);
    const size_t V = p.front().size();
    std::vector<double> pf, qf;
    for (const auto& r : p) {
      TS_CHECK(r.size() == V, "speculative verify (cuda): rows of different vocabularies");
      pf.insert(pf.end(), r.begin(), r.end());
    }
    for (const auto& r : q) {
      TS_CHECK(r.size() == V, "speculative verify (cuda): rows of different vocabularies");
      qf.insert(qf.end(), r.begin(), r.end());
    }
    SpecVerifyArgs a{};
    a.g = g;
    a.vocab = static_cast<int32_t>(V);
    a.draws = {seed, iteration, 0, 0};
    std::vector<VerifyDecision> tested(std::max<size_t>(tokens.size(), 1));
    int32_t counts[4] = {0, 0, 0, 0}, from = 0;
    if (exec_ == VerifyExec::host_twin) {
      std::vector<double> resid(V);
      a.p = pf.data();
      a.q = qf.data();
      a.tokens = tokens.data();
      a.resid = resid.data();
      a.tested = tested.data();
      a.counts = counts;
      a.from = &from;
      VerifyShared sh{};
      SerialBlock blk;
      speculative_verify_block(a, sh, blk);
    } else {
      put(p_, pf.data(), pf.size(), "speculative verify: upload p");
      put(q_, qf.data(), qf.size(), "speculative verify: upload q");
      put(tokens_, tokens.data(), tokens.size(), "speculative verify: upload tokens");
      pp_.reserve_discard(std::max<size_t>(V, 1), "speculative verify: residual");
      tested_.reserve_discard(tested.size(), "speculative verify: decisions");
      counts_.reserve_discard(5, "speculative verify: counts");
      a.p = p_.data();
      a.q = q_.data();
      a.tokens = tokens_.data();
      a.resid = pp_.data();
      a.tested = tested_.data();
      a.counts = counts_.data();
      a.from = counts_.data() + 4;
      speculative_verify_chain(a, 0);
      get(counts, counts_, 4, "speculative verify: download counts");
      TS_CUDA_CHECK(counted_download(&from, counts_.data() + 4, sizeof from, 0), "speculative verify: download");
      get(tested.data(), tested_, tested.size(), "speculative verify: download decisions");
      TS_CUDA_CHECK(counted_stream_sync(0), "speculative verify: synchronise");
    }
    verify_error_check(counts[3], "speculative verify (cuda)");
    SpecChainResult r;
    for (int32_t i = 0; i < counts[0]; ++i) {
      const VerifyDecision& d = tested[static_cast<size_t>(i)];
      r.tested.push_back({d.accept_prob, d.u, d.accepted != 0});
    }
    r.accepted = counts[1];
    r.next_token = counts[2];
    r.from_residual = from != 0;
    return r;
  }

 private:
  VerifyExec exec_;
  DeviceBuffer<double> p_, q_, pp_;
  DeviceBuffer<int64_t> drafts_;
  DeviceBuffer<int32_t> tokens_, counts_;
  DeviceBuffer<VerifyDecision> tested_;
  DeviceBuffer<int64_t> outputs_;
};

}  // namespace

std::shared_ptr<DsbdLayerVerifier> make_dsbd_verifier(VerifyExec exec) { return std::make_shared<CudaSampleVerifier>(exec); }
std::shared_ptr<SpeculativeVerifier> make_speculative_verifier(VerifyExec exec) { return std::make_shared<CudaSampleVerifier>(exec); }

TRIESCOPE_REGISTER_DEVICE_VERIFIER(device_verifier<DsbdLayerVerifier>(kVerifyDsbdLayers, make_dsbd_verifier));
TRIESCOPE_REGISTER_DEVICE_VERIFIER(device_verifier<SpeculativeVerifier>(kVerifySpeculativeChain, make_speculative_verifier));

}  // namespace triescope::cuda
