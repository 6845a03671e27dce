#include "core/decode/multigen.h"

#include <chrono>

#include "core/common/error.h"
#include "core/select/log_normaliser.h"
#include "core/decode/decoder_call.h"
#include "core/decode/decoder_trace.h"
#include "core/decode/prompt_check.h"
#include "core/decode/tree_step.h"
#include "core/trace/trace_recorder.h"

namespace triescope {

const char* multigen_method_name(MultiGenMethod m) { return enum_name(kMultiGenMethodNames, m); }

// `seconds` is the summary's own field, not a metric.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(MultiGenMetrics, prompt_len, steps, model_calls, computed_tokens, peak_slots, peak_bytes,
                                   attention_cells_dense, attention_cells_needed)
nlohmann::json MultiGenMetrics::to_json() const { return *this; }

namespace {

// Draws sample i's token at step t from one logits row: the warp, then the
// inverse CDF at the Philox uniform keyed (seed, t, 0, i).
int32_t draw(const float* logits, int32_t vocab, const SamplingConfig& s, int32_t step, int32_t sample) {
  std::vector<double> lp(static_cast<size_t>(vocab));
  log_softmax_row(logits, vocab, lp.data());
  const std::vector<double> prob = warp_log_weights(lp, s);
  const double u = philox_uniform(PhiloxKey{s.seed}, static_cast<uint32_t>(step), 0, static_cast<uint32_t>(sample), 0,
                                  RandStream::target_sample);
  return static_cast<int32_t>(sample_index(prob, u));
}

void count_cells(MultiGenMetrics& m, const StepInput& in) {
  m.attention_cells_dense += static_cast<int64_t>(in.tokens.size()) * in.num_slots;
  for (int32_t r = 0; r < in.mask.rows; ++r) m.attention_cells_needed += in.mask.row_popcount(r);
  ++m.model_calls;
  m.computed_tokens += static_cast<int64_t>(in.tokens.size());
}


// k samples of one prompt, on the copy layout (Method 1) or one star tree
// (Methods 2 and 3); every step draws each live sample's next token.
class MultiGenRun : DecoderCall<MultiGenConfig> {
 public:
  MultiGenRun(Model& model, const std::vector<int32_t>& prompt, const MultiGenConfig& cfg, TraceSink* trace, const DecodeOptions& opt)
      : DecoderCall(model, prompt, cfg, trace, opt), k_(cfg.num_samples), done_(static_cast<size_t>(cfg.num_samples), 0),
        tip_(static_cast<size_t>(cfg.num_samples), kNoNode), row_of_(static_cast<size_t>(cfg.num_samples), 0) {}

  MultiGenResult run();

 private:
  void run_copies();
  void run_tree();
  StepInput copy_input(int32_t step, int32_t cap, std::vector<int32_t>& queries);
  // Draws every live sample's next token under its tip (logits row row_of_);
  // `place(i, id)` gives a node that continues a slot.
  template <class Place>
  void draw_all(int32_t step, StepRecord& ev, Place&& place);
  void forward(const StepInput& in);

  const int32_t k_;
  MultiGenResult res_;
  std::vector<char> done_;       // [k]
  std::vector<int32_t> tip_;     // [k] each sample's last node
  std::vector<int32_t> row_of_;  // [k] its logits row
  Logits logits_;
  TokenTree tree_;
  int32_t num_slots_ = 0;  // the layout's slot count (for keyframes)
};

void MultiGenRun::forward(const StepInput& in) {
  model_.forward(in, logits_);
  count_cells(res_.metrics, in);
}

template <class Place>
void MultiGenRun::draw_all(int32_t step, StepRecord& ev, Place&& place) {
  for (int32_t i = 0; i < k_; ++i) {
    if (done_[static_cast<size_t>(i)]) continue;
    const int32_t tok = draw(logits_.row(row_of_[static_cast<size_t>(i)]), V_, cfg_.sampling, step, i);
    std::vector<int32_t>& sample = res_.samples[static_cast<size_t>(i)];
    sample.push_back(tok);
    const int32_t id = tree_.add_child(tip_[static_cast<size_t>(i)], tok, 0.0);
    tip_[static_cast<size_t>(i)] = id;
    ev.push("chosen", [&] { return json{{"sample", i}, {"node", id}, {"token", tok}}; });
    if (tok == cfg_.eos_token || static_cast<int32_t>(sample.size()) >= cfg_.max_new_tokens) {
      done_[static_cast<size_t>(i)] = 1;
      tree_.node(id).status = NodeStatus::finished;  // never written: no slot
    } else {
      place(i, id);
    }
    ev.added(tree_, id);
  }
}

// Step `step`'s queries on the copy layout: the prompt of every region
// (step 0) or every live sample's tip, each row causal inside its region.
StepInput MultiGenRun::copy_input(int32_t step, int32_t cap, std::vector<int32_t>& queries) {
  StepInput in;
  in.num_slots = num_slots_;
  std::vector<int32_t> who;
  for (int32_t i = 0; i < k_; ++i) {
    if (done_[static_cast<size_t>(i)]) continue;
    std::vector<int32_t> nodes = {tip_[static_cast<size_t>(i)]};
    if (step == 0) {
      nodes = tree_.add_chain(kNoNode, prompt_);
      for (int32_t p = 0; p < n_; ++p) tree_.node(nodes[static_cast<size_t>(p)]).slot = i * cap + p;
      tip_[static_cast<size_t>(i)] = nodes.back();
    }
    for (int32_t id : nodes) {
      in.tokens.push_back(tree_.node(id).token);
      in.positions.push_back(tree_.node(id).depth);
      in.slots.push_back(tree_.node(id).slot);
      who.push_back(i);
      queries.push_back(id);
    }
  }
  in.mask.reset(static_cast<int32_t>(in.tokens.size()), in.num_slots);
  for (int32_t r = 0; r < in.mask.rows; ++r)
    for (int32_t p = 0; p <= in.positions[static_cast<size_t>(r)]; ++p) in.mask.set(r, who[static_cast<size_t>(r)] * cap + p);
  // Each live sample's row: the last query of its region.
  for (int32_t r = 0; r < in.mask.rows; ++r) row_of_[static_cast<size_t>(who[static_cast<size_t>(r)])] = r;
  return in;
}

// Method 1: region i = slots [i * cap, (i + 1) * cap), each a causal copy.
// The trace's tree is the layout itself: k chains, region i's tokens in
// slots [i * cap, i * cap + length).
void MultiGenRun::run_copies() {
  MultiGenMetrics& m = res_.metrics;
  const int32_t cap = n_ + cfg_.max_new_tokens;
  num_slots_ = k_ * cap;
  int32_t len = n_;  // tokens per live region in the cache after this step's writes
  int64_t held = 0;  // slots written or reserved for a drawn token that the next step writes
  for (int32_t step = 0; step <= cfg_.max_new_tokens; ++step) {
    int64_t live = 0;
    for (int32_t i = 0; i < k_; ++i) live += done_[static_cast<size_t>(i)] ? 0 : 1;
    std::vector<int32_t> queries;
    const StepInput in = copy_input(step, cap, queries);
    if (in.tokens.empty()) break;
    if (step == 0) held += int64_t{n_} * k_;
    forward(in);
    StepRecord ev(rec_, {"added", "chosen"});
    ev.forward([&] { return tree_step_json(queries, in); });
    if (step == 0) ev.added(tree_, queries);
    if (step < cfg_.max_new_tokens) {
      draw_all(step, ev, [&](int32_t i, int32_t id) {
        tree_.node(id).slot = i * cap + len;  // written by the next step's forward
        ++held;
      });
      ++len;
    }
    m.peak_slots = std::max<int64_t>(m.peak_slots, held);
    m.steps = step + 1;
    ev.kv([&] { return KvRecord{.slots = held, .peak = m.peak_slots, .batch_slots = int64_t{k_} * len, .live_samples = live}; });
    rec_.step(step, step == 0 ? "prefill" : "decode", ev, tree_, num_slots_);
  }
}

// Methods 2 and 3: one star tree, one cache; the k tokens of a step sit side
// by side (blocked layout).
void MultiGenRun::run_tree() {
  MultiGenMetrics& m = res_.metrics;
  KvSlots slots;
  IncrementalAncestorMask mask;
  std::vector<int32_t> fed = tree_.add_chain(kNoNode, prompt_);
  for (int32_t id : fed) tree_.node(id).slot = slots.allocate();
  mask.reset(n_ + k_ * cfg_.max_new_tokens);
  tip_.assign(static_cast<size_t>(k_), fed.back());
  row_of_.assign(static_cast<size_t>(k_), n_ - 1);
  for (int32_t step = 0;; ++step) {
    StepInput in = tree_step_input(tree_, fed, slots.num_slots(), &mask);
    if (cfg_.method == MultiGenMethod::hybrid && step > 0) in.shared_prefix_slots = n_;
    forward(in);
    m.peak_slots = std::max<int64_t>(m.peak_slots, slots.num_slots());
    if (step > 0)
      for (size_t r = 0; r < fed.size(); ++r)
        for (int32_t i = 0; i < k_; ++i)
          if (tip_[static_cast<size_t>(i)] == fed[r]) row_of_[static_cast<size_t>(i)] = static_cast<int32_t>(r);
    const bool last = step == cfg_.max_new_tokens;
    StepRecord ev = last ? StepRecord(rec_) : StepRecord(rec_, {"added", "chosen"});  // the last pass draws nothing
    ev.forward([&] { return tree_step_json(fed, in); });
    std::vector<int32_t> next;
    if (!last) {
      if (step == 0) ev.added(tree_, fed);
      draw_all(step, ev, [&](int32_t, int32_t id) {
        tree_.node(id).slot = slots.allocate();
        next.push_back(id);
      });
      m.steps = step + 1;
      m.peak_slots = std::max<int64_t>(m.peak_slots, slots.peak());
    }
    num_slots_ = slots.num_slots();
    ev.kv([&] {
      return KvRecord{.slots = slots.num_slots(), .peak = slots.peak(), .batch_slots = int64_t{k_} * (n_ + std::min(step + 1, cfg_.max_new_tokens))};
    });
    rec_.step(step, step == 0 ? "prefill" : "decode", ev, tree_, num_slots_);
    if (last || next.empty()) break;
    mask.retain(fed);
    fed = next;
  }
}

MultiGenResult MultiGenRun::run() {
  const auto t0 = std::chrono::steady_clock::now();
  prompt_check(prompt_, V_, "multigen");
  TS_CHECK(k_ >= 1, "multigen: num_samples must be >= 1, got " << k_);
  TS_CHECK(cfg_.max_new_tokens >= 1, "multigen: max_new_tokens must be >= 1, got " << cfg_.max_new_tokens);
  model_.reset();
  res_.samples.assign(static_cast<size_t>(k_), {});
  MultiGenMetrics& m = res_.metrics;
  m.prompt_len = n_;
  record_header(rec_, multigen_spec(), opt_, model_, [&] {
    return json{{"num_samples", k_}, {"max_new_tokens", cfg_.max_new_tokens}, {"eos_token", cfg_.eos_token},
                {"sampling", cfg_.sampling.to_json()}, {"method", multigen_method_name(cfg_.method)}, {"prompt", prompt_}};
  });
  if (cfg_.method == MultiGenMethod::copy) run_copies();
  else run_tree();
  m.peak_bytes = m.peak_slots * model_.kv_shape().bytes_per_slot();
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  record_summary(rec_, [&] { return sequences_json(res_.samples); }, [&] { return m.to_json(); }, m.seconds, &tree_, num_slots_);
  return res_;
}

}  // namespace

MultiGenResult multigen_decode(Model& model, const std::vector<int32_t>& prompt, const MultiGenConfig& cfg,
                               TraceSink* trace, const DecodeOptions& opt) {
  return MultiGenRun(model, prompt, cfg, trace, opt).run();
}

}  // namespace triescope
