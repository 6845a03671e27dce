#include "core/constraint/static_constraint.h"

#include <algorithm>
#include <filesystem>

#include "core/common/error.h"
#include "core/common/text_excerpt.h"
#include "core/constraint/baselines.h"
#include "core/constraint/vntk.h"

namespace triescope {

const std::vector<std::string>& constraint_impl_names() {
  static const std::vector<std::string> names = {"vntk", "pointer_trie", "ppv_exact", "ppv_approx", "hash_bitmap"};
  return names;
}

std::shared_ptr<ConstraintIndex> constraint_index_make(const std::string& impl, std::shared_ptr<const ConstraintSet> set,
                                                       TransitionMatrixOptions opt, int32_t top_k) {
  TS_CHECK(set, "constraint: no constraint set");
  if (impl == "vntk") return std::make_shared<VntkIndex>(std::make_shared<const TransitionMatrix>(TransitionMatrix::build(*set, opt)));
  if (impl == "pointer_trie") return std::make_shared<PointerTrieIndex>(*set);
  if (impl == "ppv_exact") return std::make_shared<PpvIndex>(set, 0);
  if (impl == "ppv_approx") return std::make_shared<PpvIndex>(set, top_k);
  if (impl == "hash_bitmap") return std::make_shared<HashBitmapIndex>(*set);
  TS_FAIL("constraint: impl must be one of vntk, pointer_trie, ppv_exact, ppv_approx, hash_bitmap; got \"" << impl << "\"");
}

std::shared_ptr<ConstraintIndex> constraint_index_make(const ConstraintIndexRequest& request) {
  return constraint_index_make(request.impl, request.set, request.matrix, request.top_k);
}

StaticConstraint::StaticConstraint(std::shared_ptr<const ConstraintSet> set, std::shared_ptr<ConstraintIndex> index, bool sparse_ranking)
    : set_(std::move(set)), index_(std::move(index)) {
  TS_CHECK(set_ && index_, "static constraint: needs a set and an index");
  if (sparse_ranking) {
    const auto* vntk = dynamic_cast<const VntkIndex*>(index_.get());
    TS_CHECK(vntk, "constraint: ranking \"sparse\" needs impl vntk (the CSR index), not " << index_->name());
    step_ = std::make_unique<StaticStep>(vntk->matrix());
  }
}

void StaticConstraint::check_vocab(int32_t vocab) const {
  TS_CHECK(vocab == index_->vocab_size(), "constraint: the model's vocabulary has " << vocab << " tokens, the constraint set "
                                                                                    << set_->origin << " was read for " << index_->vocab_size());
}

void StaticConstraint::trace_beams(const std::vector<int64_t>& states, int32_t step, const int32_t* valid, const MaskPath* path,
                                   nlohmann::json& trace) const {
  if (!trace.is_array()) trace = nlohmann::json::array();
  for (size_t i = 0; i < states.size(); ++i) {
    nlohmann::json rec = {{"beam", i}, {"state", index_->trace_state(states[i], step)}, {"valid", valid[i]}, {"path", mask_path_name(path[i])}};
    index_->trace_extra(states[i], step, rec);
    trace.push_back(std::move(rec));
  }
}

void StaticConstraint::apply(const std::vector<int64_t>& states, int32_t step, double* logprobs, int32_t vocab, nlohmann::json* trace) {
  check_vocab(vocab);
  const int32_t n = static_cast<int32_t>(states.size());
  std::vector<int32_t> valid(static_cast<size_t>(n));
  std::vector<MaskPath> path(static_cast<size_t>(n));
  index_->mask(states.data(), n, step, logprobs, valid.data(), path.data());
  if (trace) trace_beams(states, step, valid.data(), path.data(), *trace);
}

bool StaticConstraint::rank(const std::vector<int64_t>& states, int32_t step, const std::vector<const float*>& rows, const double* beam_scores,
                            int32_t vocab, int32_t k, std::vector<ScoredCandidate>& out, nlohmann::json* trace) {
  if (!step_) return false;
  check_vocab(vocab);
  const int32_t n = static_cast<int32_t>(states.size());
  TS_CHECK(rows.size() == states.size(), "constraint: " << rows.size() << " logits rows for " << n << " beams");
  out.clear();
  if (n == 0) return true;
  step_->run(rows.data(), states.data(), beam_scores, n, 1, k, step, step_result_);
  for (int32_t j = 0; j < step_result_.count[0]; ++j)
    out.push_back({step_result_.score[static_cast<size_t>(j)], step_result_.flat[static_cast<size_t>(j)]});
  if (trace) {
    const std::vector<MaskPath> path(states.size(), step < step_->matrix().dense_levels ? MaskPath::dense : MaskPath::sparse);
    trace_beams(states, step, step_result_.valid.data(), path.data(), *trace);
  }
  return true;
}

nlohmann::json StaticConstraint::describe() const {
  nlohmann::json j = index_->describe();
  if (step_) j["ranking"] = "sparse";
  j["set"] = {{"items", set_->size()}, {"length", set_->length}, {"vocab_size", set_->vocab_size},
              {"duplicates_removed", set_->duplicates_removed}};
  if (!sample_file_.empty()) j["set"]["file"] = sample_file_;  // provenance: where the sample found it
  else j["set"]["origin"] = set_->origin;
  if (!set_->sha256.empty()) j["set"]["sha256"] = set_->sha256;  // config: what was read
  return j;
}

std::shared_ptr<StaticConstraint> static_constraint_from_json(JsonObjectReader r, int32_t vocab_size, const std::string& sample_path,
                                                              const ConstraintIndexMaker& make_index) {
  const std::string file = r.get_string("file");
  const std::string format = r.get_string("format", "auto");
  TS_CHECK(format == "text" || format == "npy" || format == "auto", r.where("format") << " must be text, npy or auto, got \"" << format << "\"");
  TransitionMatrixOptions opt;
  opt.dense_levels = static_cast<int32_t>(r.get_int("dense_levels", 0, 2, 0));
  opt.layout = csr_layout_parse(r.get_string("layout", "stacked"), r.where("layout"));
  const std::string impl = r.get_string("impl", "vntk");
  const auto& names = constraint_impl_names();
  TS_CHECK(std::find(names.begin(), names.end(), impl) != names.end(),
           r.where("impl") << " must be one of vntk, pointer_trie, ppv_exact, ppv_approx, hash_bitmap; got \"" << impl << "\"");
  const int32_t top_k = static_cast<int32_t>(r.get_int("top_k", 1, 1 << 20, 50));
  const std::string ranking = r.get_string("ranking", "full");
  TS_CHECK(ranking == "full" || ranking == "sparse", r.where("ranking") << " must be full or sparse, got \"" << ranking << "\"");
  TS_CHECK(ranking == "full" || impl == "vntk", r.where("ranking") << ": \"sparse\" needs impl vntk (the CSR index), not " << impl);
  r.finish();
  // Confined to the sample's folder: a sample names its set beside it, not any
  // file the user running it can read.
  std::filesystem::path p(file);
  bool escapes = p.is_absolute() || file.empty();
  for (const auto& part : p) escapes = escapes || part == "..";
  TS_CHECK(!escapes, r.where("file") << ": \"" << text_excerpt(file, 80)
                                     << "\" must be a relative path inside the sample's folder, without \"..\" (copy or link the set there)");
  p = std::filesystem::path(sample_path).parent_path() / p;
  auto set = std::make_shared<const ConstraintSet>(constraint_set_read(p.string(), format, vocab_size));
  const ConstraintIndexRequest request{impl, set, opt, top_k, ranking == "sparse"};
  try {
    auto index = make_index ? make_index(request) : constraint_index_make(request);
    auto c = std::make_shared<StaticConstraint>(set, std::move(index), request.sparse_ranking);
    c->set_sample_file(file);
    return c;
  } catch (const Error& e) {
    TS_FAIL(r.where("impl") << ": " << e.what());
  }
}

std::shared_ptr<SampleConstraint> sample_constraint_from_json(JsonObjectReader r, int32_t vocab_size, const std::string& sample_path,
                                                              const ConstraintIndexMaker& make_index) {
  return static_constraint_from_json(std::move(r), vocab_size, sample_path, make_index);
}

}  // namespace triescope
