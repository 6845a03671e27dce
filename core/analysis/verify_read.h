// The reading base every verify kind (verify_kind.h) reads its records with:
// a kind's spec tied to its typed payload (verify_kind_spec<Payload>: the
// verify object parsed once, a malformed field named in VerifyInfo::error
// instead of thrown), field access for what lies outside the payload (the
// first malformed field recorded the same way), the step's neighbouring
// records, and the pieces the kinds that draw draft layers share (rows,
// summary, acceptance-series bookkeeping).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/analysis/verify_kind.h"
#include "core/common/error.h"

namespace triescope {

struct VerifyRead {
  const StepView& view;
  const TraceReplay& replay;
  std::string& err;
  std::string where;  // "step 4"

  void bad(const std::string& path, const std::string& what);
  int32_t i(const nlohmann::json& o, const char* k, const std::string& path, int32_t dflt = -1);
  const nlohmann::json& arr(const nlohmann::json& o, const char* k, const std::string& path);
  // `j` read as the typed record P (P::from_json, its errors naming
  // "<where>: <path>: field ..."); none, with the error kept, when it does not parse.
  template <class P>
  std::optional<P> parse(const nlohmann::json& j, const std::string& path) {
    try {
      return P::from_json(j, where + ": " + path);
    } catch (const Error& e) {
      if (err.empty()) err = e.what();
      return std::nullopt;
    }
  }

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
// The same for a recorded layer number: null unless it lies in [1, 4096]
// (it sizes the table).
LayerAcceptance* acceptance_layer_in(AcceptanceSeries& s, int32_t l);

// A kind's spec over its typed verify payload `Payload` (a record of
// core/trace/ with kKind, to_json and from_json): the name is Payload::kKind
// and the payload type is recorded; read_verify and accumulate parse the
// verify object once and hand the typed payload to `read` and `add` (an
// object that does not parse: the step's error, nothing added to the
// series). rows and summary are the draft-layer ones (verify_layer_rows,
// verify_layer_summary) until the kind sets its own; `read_draft` reads
// the kind's draft steps (none: it has none).
template <class Payload>
VerifyKindSpec verify_kind_spec(std::string description, void (*read)(VerifyRead& rd, const Payload& verify, VerifyInfo& out),
                                void (*add)(const Payload& verify, int32_t step, AcceptanceSeries& series),
                                decltype(VerifyKindSpec::narrate) narrate, std::type_index verifier,
                                decltype(VerifyKindSpec::read_draft) read_draft = {}) {
  VerifyKindSpec k;
  k.name = Payload::kKind;
  k.description = std::move(description);
  k.payload = typeid(Payload);
  k.read_verify = [read](VerifyRead& rd, const nlohmann::json& verify, VerifyInfo& out) {
    if (const std::optional<Payload> p = rd.parse<Payload>(verify, "verify")) read(rd, *p, out);
  };
  k.accumulate = [add](const nlohmann::json& verify, int32_t step, AcceptanceSeries& series) {
    std::optional<Payload> p;
    try {
      p = Payload::from_json(verify, "verify");
    } catch (const Error&) {
      return;  // the step's reader names the field; the series skips the record
    }
    add(*p, step, series);
  };
  k.rows = [](const VerifyInfo& info, const StepView&) { return verify_layer_rows(info); };
  k.summary = verify_layer_summary;
  k.narrate = std::move(narrate);
  k.verifier = verifier;
  k.read_draft = std::move(read_draft);
  return k;
}

}  // namespace triescope
