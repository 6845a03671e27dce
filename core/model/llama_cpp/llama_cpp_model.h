// "type": "llama_cpp": a Model whose forward passes run in llama.cpp (the
// libllama of llama-cpp-python 0.3.36, scripts/install-engines.sh) over one
// unified KV cache. The model sees only StepInput, so it realises every mask
// row with llama.cpp's sequence ids:
//
// - llama.cpp's rule (src/llama-kv-cache.cpp, set_input_kq_mask): a token
//   sees a cell iff the cell holds the token's FIRST seq id and the cell's
//   position is <= the token's.
// - A row must be an ancestor path: path(parent) + the query's own slot,
//   the parent being the row's slot of highest position (else a named Error).
// - Seq ids are held by leaves only: each leaf owns one seq id whose cells
//   are exactly its ancestors-or-self. A new leaf inherits the seq id of its
//   nearest written ancestor when that one was a leaf (and no sibling took it
//   first), else gets a free one put on the ancestor's path by
//   llama_memory_seq_cp. A token of a step carries the seq ids of the step's
//   leaves below it (a prompt chain: one seq id); each of them sees the same
//   cells up to the token's position, so which one llama.cpp takes as the
//   first (its std::unordered_set's order) does not matter.
// - After each llama_decode the cells are read back (llama_state_get_data),
//   matched to the shadow of what they should hold, and llama.cpp's rule
//   applied to them (with each of a query's seq ids) must give every query
//   exactly its mask row: the proof
//   that the engine computed what the trace says ("check_cells", default on).
// - compact(): a freed leaf's seq id is removed (llama_memory_seq_rm), so its
//   cells free up; the occupied cells are then packed to the front in their
//   order (one whole-state round trip), so later cells append and every path
//   stays in ascending cell order: llama.cpp's CPU flash attention accumulates
//   a query's cells in cell order (V in f16), so a node placed in a freed cell
//   before its ancestors would change its logits. A gather that repeats a
//   source (batch beam search's reorder) copies that sequence's cells
//   (llama_state_seq_get_data / _set_data: a physical copy, as Hugging Face's
//   index_select of the cache is). Our slots are handles, renumbered by the plan.
// With both, and fewer than 64 tokens per micro-batch (n_ubatch), trie and
// batch beam search give the same logits bit for bit (tests/engines/llama_cpp).
// The state format read back is that of llama-cpp-python 0.3.36 (packing hands
// llama.cpp its own blob back unread).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/model/model.h"

namespace triescope {

struct LlamaCppOptions {
  std::string path;         // the .gguf file
  int32_t n_ctx = 4096;     // cells of the unified KV cache (and the most tokens one step may feed)
  // Tokens per llama.cpp micro-batch. Below 64 (GGML_FA_TILE_Q) the CPU
  // flash-attention kernel runs every query as one online softmax over its
  // visible cells in cell order; from 64 on it tiles queries and cells, and a
  // query's result then depends on which other cells share its tiles.
  int32_t n_ubatch = 32;
  bool flash_attn = true;   // llama.cpp's flash_attn_type enabled / disabled
  int32_t threads = 0;      // ggml threads; 0: the machine's hardware threads
  bool check_cells = true;  // read the cells back after every forward and compact and check them
};

// One occupied KV cell as llama_state_get_data writes it: its position and
// seq ids (ascending). Cells come in cell order; their indices are not written.
struct LlamaCppCell {
  int32_t pos = 0;
  std::vector<int32_t> seq_ids;
  bool operator==(const LlamaCppCell&) const = default;
};

// The occupied cells of a llama_state_get_data blob. The format is llama.cpp's
// internal one as of llama-cpp-python 0.3.36 (llama_context::state_write_data:
// the arch string, then llama_kv_cache::state_write: n_stream, per stream the
// cell count, every non-empty cell's pos, n_seq_id and seq ids, then the K and
// V rows); every read is guarded, the K/V sizes must add up to the blob's end,
// and any difference is an Error naming the byte offset and this version.
std::vector<LlamaCppCell> llama_cpp_state_cells(const uint8_t* data, size_t size, int32_t n_layer, int32_t n_seq_max);

class LlamaCppModel final : public Model {
 public:
  explicit LlamaCppModel(LlamaCppOptions opt);
  ~LlamaCppModel() override;
  LlamaCppModel(const LlamaCppModel&) = delete;
  LlamaCppModel& operator=(const LlamaCppModel&) = delete;

  int32_t vocab_size() const override;
  void forward(const StepInput& in, Logits& out) override;
  void compact(const CompactionPlan& plan) override;
  void reset() override;
  nlohmann::json describe() const override;
  KvShape kv_shape() const override;
  std::vector<std::string> vocab_strings() const override;
  // {"engine_cells": occupied cells, "engine_seq_ids": distinct seq ids in
  // them}, as read back after the last forward or compact; null when
  // check_cells is off (nothing was read back).
  nlohmann::json engine_state() const override;

  // The engine's occupied cells now, read back.
  std::vector<LlamaCppCell> read_cells();
  // The figures engine_state() reports (-1 before anything was read back).
  int32_t engine_cells() const;
  int32_t engine_seq_ids() const;
  // Turns the read-back checks on or off (a timing run turns them off).
  void set_check_cells(bool on);
  int32_t threads() const;
  // Token ids of `text` by the GGUF's own tokenizer (llama_tokenize, BOS and
  // special tokens parsed).
  std::vector<int32_t> tokenize(const std::string& text) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> p_;
};

// Registers "llama_cpp" with model_from_json (core/model/model_factory.h).
void llama_cpp_models_register();

}  // namespace triescope
