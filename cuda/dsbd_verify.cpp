// The cuda backend's DSBD and speculative verifiers: marshal core's vectors
// into cuda/dsbd_verify.h's argument structs and run the block algorithm on
// the device (one block) or, for the CPU tests, on the host with a block of
// one thread. Both read back the same LayerResult / SpecChainResult.
#include <algorithm>
#include <functional>
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

// Where one verification's arrays live, and its run. The host twin works in
// the caller's own arrays; the device gets a copy of each input and a buffer
// for each scratch and output array, and reads the outputs back after the
// launch, in the order out() named them.
class VerifyArrays {
 public:
  explicit VerifyArrays(VerifyExec exec) : on_device_(exec == VerifyExec::device) {}

  template <typename T>
  const T* in(DeviceBuffer<T>& d, const std::vector<T>& host, const char* what) {
    if (!on_device_) return host.data();
    put(d, host.data(), host.size(), what);
    return d.data();
  }
  // Scratch of n entries: `host` on the host, `d` on the device.
  template <typename T>
  T* scratch(DeviceBuffer<T>& d, std::vector<T>& host, size_t n, const char* what) {
    if (!on_device_) {
      host.resize(n);
      return host.data();
    }
    d.reserve_discard(std::max<size_t>(n, 1), what);
    return d.data();
  }
  template <typename T>
  T* out(DeviceBuffer<T>& d, T* host, size_t n, const char* what, const char* download_what) {
    if (!on_device_) return host;
    d.reserve_discard(std::max<size_t>(n, 1), what);
    downloads_.push_back([&d, host, n, download_what] { get(host, d, n, download_what); });
    return d.data();
  }

  // The block code with a block of one thread (host twin), or the launch and
  // the outputs read back (device).
  template <typename Args>
  void run(const Args& a, void (*block)(const Args&, VerifyShared&, SerialBlock&), void (*launch)(const Args&, cudaStream_t),
           const char* sync_what) {
    if (!on_device_) {
      VerifyShared sh{};
      SerialBlock blk;
      block(a, sh, blk);
      return;
    }
    launch(a, 0);
    for (const auto& download : downloads_) download();
    TS_CUDA_CHECK(counted_stream_sync(0), sync_what);
  }

 private:
  bool on_device_;
  std::vector<std::function<void()>> downloads_;
};

class CudaSampleVerifier final : public DsbdLayerVerifier, public SpeculativeVerifier {
 public:
  explicit CudaSampleVerifier(VerifyExec exec) : exec_(exec) {
    if (exec_ == VerifyExec::device) {
      require_device("cuda verifier");
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
    std::vector<double> pp;
    VerifyArrays arrays(exec_);
    a.p = arrays.in(p_, p, "dsbd verify: upload p");
    a.q = arrays.in(q_, q, "dsbd verify: upload q");
    a.drafts = arrays.in(drafts_, drafts, "dsbd verify: upload drafts");
    a.pp = arrays.scratch(pp_, pp, p.size(), "dsbd verify: p'");
    a.counts = arrays.out(counts_, counts, 4, "dsbd verify: counts", "dsbd verify: download counts");
    a.tested = arrays.out(tested_, tested.data(), tested.size(), "dsbd verify: decisions", "dsbd verify: download decisions");
    a.outputs = arrays.out(outputs_, outputs.data(), outputs.size(), "dsbd verify: outputs", "dsbd verify: download outputs");
    arrays.run(a, dsbd_verify_block<SerialBlock>, dsbd_verify_layer, "dsbd verify: synchronise");
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
    std::vector<double> resid;
    VerifyArrays arrays(exec_);
    a.p = arrays.in(p_, pf, "speculative verify: upload p");
    a.q = arrays.in(q_, qf, "speculative verify: upload q");
    a.tokens = arrays.in(tokens_, tokens, "speculative verify: upload tokens");
    a.resid = arrays.scratch(pp_, resid, V, "speculative verify: residual");
    a.counts = arrays.out(counts_, counts, 4, "speculative verify: counts", "speculative verify: download counts");
    a.from = arrays.out(from_, &from, 1, "speculative verify: counts", "speculative verify: download");
    a.tested = arrays.out(tested_, tested.data(), tested.size(), "speculative verify: decisions", "speculative verify: download decisions");
    arrays.run(a, speculative_verify_block<SerialBlock>, speculative_verify_chain, "speculative verify: synchronise");
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
  DeviceBuffer<int32_t> tokens_, counts_, from_;
  DeviceBuffer<VerifyDecision> tested_;
  DeviceBuffer<int64_t> outputs_;
};

}  // namespace

std::shared_ptr<DsbdLayerVerifier> make_dsbd_verifier(VerifyExec exec) { return std::make_shared<CudaSampleVerifier>(exec); }
std::shared_ptr<SpeculativeVerifier> make_speculative_verifier(VerifyExec exec) { return std::make_shared<CudaSampleVerifier>(exec); }

TRIESCOPE_REGISTER_DEVICE_VERIFIER(device_verifier<DsbdLayerVerifier>(kVerifyDsbdLayers, make_dsbd_verifier));
TRIESCOPE_REGISTER_DEVICE_VERIFIER(device_verifier<SpeculativeVerifier>(kVerifySpeculativeChain, make_speculative_verifier));

}  // namespace triescope::cuda
