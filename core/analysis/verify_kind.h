// The verify-kind registry: one spec per verification kind (the trace
// header's `verify_kind`, each step's `verify.kind`), so the analysis, the
// GUI's verification pane and the backends iterate it instead of naming
// kinds. A kind is one file in core/analysis/ (dsbd_layers.cpp,
// speculative_chain.cpp, lookahead_candidates.cpp) over the reading base
// (verify_read.h), registered with TRIESCOPE_REGISTER_VERIFY_KIND together
// with its verify object's typed payload (core/trace/*_verify_record.h;
// verify_kind_spec<Payload> in verify_read.h), so the decoder writes and the
// kind reads the same type; a test in tests/registry/ adds one. An
// unregistered kind is a named error, never read as another.
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <typeindex>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/analysis/narration_sentence.h"
#include "core/analysis/verify_info.h"
#include "core/common/spec_registry.h"

namespace triescope {

class VerifierSet;
struct HeaderRecord;
struct VerifyRead;

// The colour role of a drawn row's tag; the pane picks the colour.
enum class VerifyRowTag { neutral, draft, passed, stopped, matched, window };

// One chip of a row: the draft and its second line (the first is its token).
struct VerifyRowChip {
  VerifyChip chip;
  std::string label;
};

// One row the verification pane draws (Qt-free): three head lines, the tag
// and the chips.
struct VerifyRow {
  std::string head1, head2, head3;
  VerifyRowTag tag = VerifyRowTag::neutral;
  std::vector<VerifyRowChip> chips;
};

struct VerifyKindSpec {
  std::string name;         // verify.kind and the header's verify_kind (kVerify* in core/trace/trace.h)
  std::string description;  // one line
  // Reads a "draft" step (out.iteration and out.verify_step already set);
  // empty: the kind has no draft steps (one is a named error).
  std::function<void(VerifyRead& rd, VerifyInfo& out)> read_draft;
  // Reads a verify step's `verify` object (for a typed kind: parsed as its
  // payload, a field that does not parse is out.error).
  std::function<void(VerifyRead& rd, const nlohmann::json& verify, VerifyInfo& out)> read_verify;
  // Adds one step record's `verify` object (a JSON object) to the whole-trace series.
  std::function<void(const nlohmann::json& verify, int32_t step, AcceptanceSeries& series)> accumulate;
  // The verify object's typed payload (core/trace/*_verify_record.h), whose
  // kKind is `name`; typeid(void): the kind reads its JSON itself.
  std::type_index payload = typeid(void);
  // What the pane draws for `info` (a step of this kind; `view` is its step).
  std::function<std::vector<VerifyRow>(const VerifyInfo& info, const StepView& view)> rows;
  // The pane's one-paragraph summary of `info` (rich text).
  std::function<std::string(const VerifyInfo& info)> summary;
  // The narration pane's sentences for `info` in the kind's own words
  // (core/analysis/step_narration.h): what was decided and why, from the
  // records only; `replay` labels the nodes it names.
  std::function<std::vector<NarrationSentence>(const VerifyInfo& info, const StepView& view, const TraceReplay& replay)> narrate;
  // The device verifier type this kind's decoder looks up in a VerifierSet
  // (core/decode/verifier_set.h); typeid(void): the kind has none.
  std::type_index verifier = typeid(void);
};

// Adds a spec; throws Error when the name is taken or a field is missing.
void verify_kind_register(VerifyKindSpec spec);
// The spec named `name`, or null.
const VerifyKindSpec* verify_kind_find(std::string_view name);
// Every registered spec, by name.
std::vector<const VerifyKindSpec*> verify_kinds();
// "a, b, c": the registered names, for error messages.
std::string verify_kind_names();
// The verification kind of a trace's verify records: v2 headers name it
// ("verify_kind", absent when the algorithm verifies nothing); a v1 header
// wrote none, so its algorithm's registered spec (core/decode/algorithm.h)
// gives it. "" for none, and for a header this build cannot read.
std::string trace_verify_kind(const HeaderRecord& header);
std::string trace_verify_kind(const nlohmann::json& header);
// The spec of the kind `header` names (trace_verify_kind), null when it names
// none; throws Error naming `origin`, the field and the registered kinds when
// the kind is not registered.
const VerifyKindSpec* verify_kind_of_header(const nlohmann::json& header, const std::string& origin);
// Throws Error naming the kind and both types when `set` holds a verifier
// for a registered kind as another type than the kind's spec accepts, or
// one for an unregistered kind.
void verifier_set_check(const VerifierSet& set);

using VerifyKindRegistrar = SpecRegistrar<VerifyKindSpec, verify_kind_register>;

}  // namespace triescope

// At namespace scope in the kind's file: TRIESCOPE_REGISTER_VERIFY_KIND(spec_function());
#define TRIESCOPE_REGISTER_VERIFY_KIND(spec) \
  static const ::triescope::VerifyKindRegistrar TRIESCOPE_SPEC_REGISTRAR_NAME(triescope_verify_kind_registrar_)(spec)
