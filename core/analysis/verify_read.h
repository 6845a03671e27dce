// The reading base every verify kind (verify_kind.h) reads its records with:
// field access that records the first malformed field in VerifyInfo::error
// instead of throwing (the pane shows what it could read and names what it
// could not), the step's neighbouring records, and the pieces the kinds that
// draw draft layers share (rows, summary, acceptance-series bookkeeping).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/analysis/verify_kind.h"

namespace triescope {

struct VerifyRead {
  const StepView& view;
  const TraceReplay& replay;
  std::string& err;
  std::string where;  // "step 4"

  void bad(const std::string& path, const std::string& what);
  int32_t i(const nlohmann::json& o, const char* k, const std::string& path, int32_t dflt = -1);
  double d(const nlohmann::json& o, const char* k, const std::string& path);
  bool b(const nlohmann::json& o, const char* k, const std::string& path);
  const nlohmann::json& arr(const nlohmann::json& o, const char* k, const std::string& path);
  std::vector<int32_t> ints(const nlohmann::json& o, const char* k, const std::string& path);

  // The step record of `step`, or none; read from the trace whether it is
  // in memory or streamed (TraceReplay::records_view).
  std::optional<nlohmann::json> step_record(int32_t step) const;
  // This verify step's draft record (the step before, phase "draft"), or none.
  std::optional<nlohmann::json> draft_record() const;
  int32_t token_of(int32_t node) const;   // -1 when `node` is not in the view
  int32_t parent_of(int32_t node) const;  // -1 when `node` is not in the view
  VerifyChip chip(int32_t node, Decision d) const;
};

// "0.25" with `prec` decimals; "-" for NaN.
std::string verify_fixed(double x, int prec = 2);
// A draft layer's chip's second line (accept prob and u, q, "untested", ...).
std::string verify_layer_chip_label(const VerifyChip& c);
// The rows of the kinds that verify draft layers (DSBD, speculative): one per layer.
std::vector<VerifyRow> verify_layer_rows(const VerifyInfo& info);
// Their summary: the draft step's proposal or the verify step's outcome.
std::string verify_layer_summary(const VerifyInfo& info);

// Narration helpers for the kinds' `narrate`: the distinct nodes of L's
// chips with decision `d`, in chip order, with how many chips named each (a
// node drafted by several beams); appended to `b` as "'a' #4, 'b' #5 (x2)".
std::vector<std::pair<int32_t, int32_t>> verify_chip_nodes(const VerifyLayer& L, Decision d);
void verify_narrate_nodes(NarrationBuilder& b, const std::vector<std::pair<int32_t, int32_t>>& nodes);

// The series entry of draft layer `l` (>= 1), added when missing.
LayerAcceptance& acceptance_layer(AcceptanceSeries& s, int32_t l);
// An object's "layer" in [1, 4096] (it sizes the table), or none.
std::optional<int32_t> acceptance_layer_of(const nlohmann::json& o);
double acceptance_num(const nlohmann::json& o, const char* k);   // 0 unless a number
bool acceptance_flag(const nlohmann::json& o, const char* k);    // false unless true
// Adds (step, verify.steps) to the series' per-step tokens when "steps" is an int32.
void acceptance_add_steps(const nlohmann::json& verify, int32_t step, AcceptanceSeries& s);

}  // namespace triescope
