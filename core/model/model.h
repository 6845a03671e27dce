// The model seam (docs/architecture.md): every decoder talks to a model only
// through StepInput -> Logits, and a model reads context ONLY through the
// mask rows and the KV slots, exactly as attention does.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/common/device_handles.h"
#include "core/kv/kv_cache.h"
#include "core/mask/bit_mask.h"

namespace triescope {

struct StepInput {
  std::vector<int32_t> tokens;     // [num_queries] token fed at each query
  std::vector<int32_t> positions;  // [num_queries] position id (tree depth) of each query
  std::vector<int32_t> slots;      // [num_queries] KV slot each query's K/V is written to
  BitMask mask;                    // [num_queries x num_slots] row q: slots query q may read (incl. its own)
  int32_t num_slots = 0;           // slots in the cache once this step's writes are done
  // Every query's row allows all of slots [0, shared_prefix_slots) (e.g. the
  // prompt in MultiGen). A model may attend to that block densely and gather
  // the rest per query (MultiGen Method 3, "hybrid attention"); 0 = no hint.
  // The result must not depend on it.
  int32_t shared_prefix_slots = 0;
  // The queries whose logits the caller reads, strictly ascending; empty:
  // every query. A model may then compute only those rows (the LibTorch
  // model skips the others' LM head: a batch prefill of b x 2,048 queries
  // would otherwise move b x 2,048 x |V| floats for b rows read) or ignore
  // it; logits_keep_rows after the forward makes both the same.
  std::vector<int32_t> logits_rows;
  // The caller reads this step's logits only through a device selector of
  // the model's backend (Selector::run_device_logits): a model that computes
  // them on a device may leave them there (Logits::device) and `data` empty,
  // so they never cross to the host. Ignored by a host model.
  bool logits_may_stay_on_device = false;
  // Set (rows not null) when the decoder's mask builder left this step's rows
  // on the device (MaskRowBuilder::extend_on_device) for a model that reads
  // them there (Model::reads_device_mask); `mask` is then empty. A decoder
  // sets it only together with logits_may_stay_on_device, so the builder's
  // status rides back with the selector's answer (DeviceLogits::input_status).
  DeviceMask mask_device;
};

struct Logits {
  int32_t rows = 0;
  int32_t vocab = 0;
  std::vector<float> data;  // [rows x vocab]; empty when the rows stayed on the device (StepInput::logits_may_stay_on_device)
  DeviceLogits device;      // rows null: the model computed them on the host
  // The rows stayed on the device (StepInput::logits_may_stay_on_device).
  bool on_device() const { return data.empty() && device.rows != nullptr; }
  const float* row(int32_t r) const { return data.data() + host_offset(r); }
  float* row(int32_t r) { return data.data() + host_offset(r); }
  void resize(int32_t r, int32_t v) {
    rows = r;
    vocab = v;
    data.assign(static_cast<size_t>(r) * static_cast<size_t>(v), 0.0f);
    device = {};
  }
  // Row r's offset in `data`; throws Error when the rows are not on the host.
  size_t host_offset(int32_t r) const;
};

class Model {
 public:
  virtual ~Model() = default;
  virtual int32_t vocab_size() const = 0;
  // Writes the queries' K/V into their slots, then computes one logits row
  // per query from the slots its mask row allows.
  virtual void forward(const StepInput& in, Logits& out) = 0;
  // Whether forward reads StepInput::mask_device (a device model of the mask
  // builder's backend); false: every StepInput carries its mask on the host.
  virtual bool reads_device_mask() const { return false; }
  // Applies a compaction/reorder plan to the cache: one gather.
  virtual void compact(const CompactionPlan& plan) = 0;
  // Empties the cache.
  virtual void reset() = 0;
  // What a trace header says about this model.
  virtual nlohmann::json describe() const = 0;
  // Shape used for byte accounting (a real model's, or a nominal one).
  virtual KvShape kv_shape() const = 0;
  // Token strings when known (empty otherwise).
  virtual std::vector<std::string> vocab_strings() const { return {}; }
  // A model whose cache lives in another engine: what that engine holds after
  // the last forward or compact, as read back from it (fields a step's "kv"
  // gets, e.g. {"engine_cells": 120}); null for a model whose cache is its own.
  virtual nlohmann::json engine_state() const { return nullptr; }
};

// Validates a StepInput against a model's vocabulary; names the bad index.
void step_input_check(const StepInput& in, int32_t vocab_size);

// After model.forward(in, out): out holds one row per entry of
// in.logits_rows, in order (row r: query in.logits_rows[r]), whether the
// model computed only those rows or one per query; nothing when the list is
// empty. Any other row count is an Error.
void logits_keep_rows(const StepInput& in, Logits& out);

// The whole "KV cache" of a mask-honest toy model (synthetic, scripted): the
// (token, position) pair written into each slot. Such a model reads context
// only through this and its mask rows.
struct SlotTokenCache {
  std::vector<int32_t> tokens;     // [num_slots] token in each slot, -1: empty
  std::vector<int32_t> positions;  // [num_slots] position id of that token
  // Grows to in.num_slots, then writes every query's pair (all writes happen
  // before any read: queries of one forward may attend to each other).
  void write(const StepInput& in);
  // One gather. Pads to plan.old_num_slots first: in a slot layout shared with
  // a second model (DSBD's draft and target) a slot may not be written here yet.
  void compact(const CompactionPlan& plan);
  // The context query `r` of `in` reads: the tokens of the slots its mask row
  // allows, by position, one per position 0 .. in.positions[r]. False when
  // the row does not read exactly one token at each of those positions.
  bool context(const StepInput& in, int32_t r, std::vector<int32_t>& ctx) const;
  void reset() {
    tokens.clear();
    positions.clear();
  }
};

}  // namespace triescope
