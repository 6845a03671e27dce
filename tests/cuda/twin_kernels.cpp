// The device launchers of the kernel twin cases (twin_kernels.h).
#include "twin_kernels.h"

#include <algorithm>

#include "cuda/ancestor_mask.cuh"
#include "cuda/cuda_synthetic_model.h"
#include "cuda/kv_compact.cuh"
#include "cuda/synthetic_logits.cuh"
#include "cuda/topk_candidates.cuh"
#include "cuda/tree_attention.cuh"
#include "device_util.h"
#include "test_util.h"

namespace triescope::testing {

MaskBuildOut mask_build_on_device(const MaskBuildIn& in) {
  const int32_t words_per_row = BitMask::words_for(in.num_slots);
  const size_t words = in.queries.size() * static_cast<size_t>(words_per_row);
  auto d_parent = upload(parents_of(in.tree));
  auto d_slot = upload(slots_of(in.tree));
  auto d_queries = upload(in.queries);
  auto d_mask = poisoned<uint64_t>(words);
  auto d_status = fresh_status();
  cuda::AncestorMaskBuildParams p;
  p.parent = d_parent.data();
  p.slot = d_slot.data();
  p.num_nodes = in.tree.size();
  p.queries = d_queries.data();
  p.num_queries = static_cast<int32_t>(in.queries.size());
  p.num_slots = in.num_slots;
  p.words_per_row = words_per_row;
  p.mask = d_mask.data();
  p.maybe_status = d_status.data();
  cuda::ancestor_mask_build(p, nullptr);
  MaskBuildOut out;
  out.words = download(d_mask, words);
  out.status = read_status(d_status);
  return out;
}

PositionIdsOut position_ids_on_device(const PositionIdsIn& in) {
  std::vector<int32_t> root_depth;  // a root's depth; other entries are never read
  for (const auto& n : in.tree.nodes()) root_depth.push_back(n.parent == kNoNode ? n.depth : -12345);
  auto d_parent = upload(parents_of(in.tree));
  auto d_root = upload(root_depth);
  auto d_queries = upload(in.queries);
  auto d_pos = poisoned<int32_t>(in.queries.size());
  auto d_status = fresh_status();
  cuda::PositionIdsParams p;
  p.parent = d_parent.data();
  p.maybe_root_depth = d_root.data();
  p.num_nodes = in.tree.size();
  p.queries = d_queries.data();
  p.num_queries = static_cast<int32_t>(in.queries.size());
  p.positions = d_pos.data();
  p.maybe_status = d_status.data();
  cuda::position_ids(p, nullptr);
  PositionIdsOut out;
  out.positions = download(d_pos, in.queries.size());
  out.status = read_status(d_status);
  return out;
}

MaskExtendOut mask_extend_on_device(const MaskExtendIn& in) {
  const auto num_new = static_cast<int32_t>(in.src.size());
  const size_t out_words = static_cast<size_t>(num_new) * static_cast<size_t>(in.words);
  auto d_table = upload(in.table);
  auto d_src = upload(in.src), d_bp = upload(in.batch_parent), d_slot = upload(in.slot), d_dst = upload(in.dst);
  auto d_out = poisoned<uint64_t>(out_words);
  auto d_status = fresh_status();
  cuda::AncestorMaskExtendParams p;
  p.src_row = d_src.data();
  p.batch_parent = d_bp.data();
  p.slot = d_slot.data();
  p.dst_row = d_dst.data();
  p.num_new = num_new;
  p.table = d_table.data();
  p.table_rows = in.table_rows;
  p.table_words = in.words;
  p.num_slots = in.num_slots;
  p.maybe_out = d_out.data();
  p.out_words = in.words;
  p.maybe_status = d_status.data();
  cuda::ancestor_mask_extend(p, nullptr);
  MaskExtendOut out;
  out.out = download(d_out, out_words);
  out.table = download(d_table, in.table.size());
  out.status = read_status(d_status);
  return out;
}

KvCompactOut kv_compact_on_device(const KvCompactIn& in) {
  const size_t bytes = in.plan.src.size() * static_cast<size_t>(in.row_bytes);
  auto d_cache = upload(in.cache);
  auto d_dst = poisoned<unsigned char>(bytes + 16);
  auto d_plan = upload(in.plan.src);
  auto d_status = fresh_status();
  cuda::KvCompactParams p;
  p.src = d_cache.data() + in.offset;
  p.dst = d_dst.data() + in.offset;
  p.plan_src = d_plan.data();
  p.new_num_slots = static_cast<int32_t>(in.plan.src.size());
  p.old_num_slots = in.plan.old_num_slots;
  p.row_bytes = in.row_bytes;
  p.maybe_status = d_status.data();
  cuda::kv_compact(p, nullptr);
  const auto got = download(d_dst, bytes + 16);
  KvCompactOut out;
  out.before.assign(got.begin(), got.begin() + in.offset);
  out.rows.assign(got.begin() + in.offset, got.begin() + in.offset + static_cast<std::ptrdiff_t>(bytes));
  out.status = read_status(d_status);
  return out;
}

SyntheticLogitsOut synthetic_logits_on_device(const SyntheticLogitsIn& in) {
  const size_t n = in.query_positions.size() * static_cast<size_t>(in.cfg.vocab_size);
  auto d_tok = upload(in.kv_tokens), d_pos = upload(in.kv_positions), d_qpos = upload(in.query_positions);
  auto d_mask = upload(in.mask.words);
  auto d_fixed = poisoned<int32_t>(n);
  auto d_logits = poisoned<float>(n);
  auto d_status = fresh_status();
  cuda::SyntheticLogitsParams p;
  p.cfg = in.cfg;
  p.kv_tokens = d_tok.data();
  p.kv_positions = d_pos.data();
  p.num_slots = static_cast<int32_t>(in.kv_tokens.size());
  p.mask = d_mask.data();
  p.words_per_row = in.mask.words_per_row;
  p.query_positions = d_qpos.data();
  p.num_queries = static_cast<int32_t>(in.query_positions.size());
  p.maybe_out_fixed = d_fixed.data();
  p.maybe_out_logits = d_logits.data();
  p.maybe_status = d_status.data();
  cuda::synthetic_logits(p, nullptr);
  SyntheticLogitsOut out;
  out.fixed = download(d_fixed, n);
  out.logits = download(d_logits, n);
  out.status = read_status(d_status);
  return out;
}

LogSoftmaxOut log_softmax_on_device(const LogSoftmaxIn& in) {
  const auto num_rows = static_cast<int32_t>(in.rows.size());
  const size_t n = in.rows.size() * static_cast<size_t>(in.vocab);
  auto d_logits = upload(in.logits);
  auto d_rows = upload(in.rows);
  auto d_out = poisoned<double>(n);
  auto d_ws = poisoned<double>(static_cast<size_t>(cuda::log_softmax_workspace_size(num_rows, in.vocab)));
  auto d_status = fresh_status();
  cuda::LogSoftmaxParams p;
  p.logits = d_logits.data();
  p.logits_rows = in.logits_rows;
  p.vocab = in.vocab;
  p.maybe_rows = d_rows.data();
  p.num_rows = num_rows;
  p.out = d_out.data();
  p.workspace = d_ws.data();
  p.maybe_status = d_status.data();
  cuda::log_softmax_rows(p, nullptr);
  LogSoftmaxOut out;
  out.out = download(d_out, n);
  out.status = read_status(d_status);
  return out;
}

TopkOut topk_on_device(const TopkIn& in) {
  auto d_lp = upload(in.logprobs), d_beam = upload(in.beam_scores);
  const auto ws_entries = static_cast<size_t>(cuda::topk_candidates_workspace_size(in.rows, in.vocab, in.k));
  auto d_ws_score = poisoned<double>(ws_entries);
  auto d_ws_flat = poisoned<int64_t>(ws_entries);
  auto d_score = poisoned<double>(static_cast<size_t>(in.k));
  auto d_flat = poisoned<int64_t>(static_cast<size_t>(in.k));
  auto d_count = poisoned<int32_t>(1);
  cuda::TopkCandidatesParams p;
  p.logprobs = d_lp.data();
  p.beam_scores = d_beam.data();
  p.num_rows = in.rows;
  p.vocab = in.vocab;
  p.k = in.k;
  p.workspace_score = d_ws_score.data();
  p.workspace_flat = d_ws_flat.data();
  p.out_score = d_score.data();
  p.out_flat = d_flat.data();
  p.out_count = d_count.data();
  cuda::topk_candidates(p, nullptr);
  TopkOut out;
  out.count = download(d_count, 1)[0];
  out.score = download(d_score, static_cast<size_t>(in.k));
  out.flat = download(d_flat, static_cast<size_t>(in.k));
  return out;
}

TreeAttentionArgs TreeAttentionIn::host_args(std::vector<float>& out) const {
  TreeAttentionArgs a = shape;
  out.resize(q.size());
  a.q = q.data();
  a.kv = kv.data();
  a.indptr = csr.indptr.data();
  a.slot_ids = csr.slot_ids.data();
  a.out = out.data();
  a.cascade = cascade.items > 0 ? cascade.view(cascade.table.data()) : TreeAttentionCascade{};
  return a;
}

TreeAttentionOut tree_attention_on_device(const TreeAttentionIn& in) {
  auto d_table = upload(in.cascade.table);
  auto d_q = upload(in.q);
  auto d_kv = upload(in.kv);
  auto d_ptr = upload(in.csr.indptr);
  auto d_ids = upload(in.csr.slot_ids);
  const size_t n_out = static_cast<size_t>(in.shape.num_queries) * static_cast<size_t>(in.shape.heads) * static_cast<size_t>(in.shape.head_dim);
  auto d_out = poisoned<float>(n_out);
  auto d_status = fresh_status();
  TreeAttentionArgs a = in.shape;
  a.q = d_q.data();
  a.kv = d_kv.data();
  a.indptr = d_ptr.data();
  a.slot_ids = d_ids.data();
  a.out = d_out.data();
  a.status = reinterpret_cast<int32_t*>(d_status.data());
  a.cascade = in.cascade.items > 0 ? in.cascade.view(d_table.data()) : TreeAttentionCascade{};
  const size_t ws = cuda::tree_attention_workspace_bytes(a);
  cuda::DeviceBuffer<unsigned char> d_ws(std::max<size_t>(ws, 1), "test workspace");
  TS_CUDA_CHECK(cudaMemset(d_ws.data(), kPoisonByte, d_ws.bytes()), "poison workspace");
  a.workspace = d_ws.data();
  a.workspace_bytes = ws;
  cuda::tree_attention(a);
  TreeAttentionOut out;
  const std::vector<float> got = download(d_out, n_out);
  out.out.assign(got.begin(), got.end());
  out.status = read_status(d_status);
  return out;
}

}  // namespace triescope::testing
