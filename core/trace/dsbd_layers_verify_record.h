// The payloads of kind "dsbd_layers" (DSBD, Algorithm 1; core/decode/dsbd.cpp):
// a draft step's `draft_layers` entries (the W_S draft beams of each layer)
// and a verify step's `verify` object (each layer verified with its width
// W_L^(l), the drafts tested, the beams sampled when it fell short, and the
// extra layer when every layer passed) (docs/trace-format.md, "Verification
// kinds"; $defs/draft_layer, $defs/verify_dsbd_layers, $defs/dsbd_layer and
// $defs/dsbd_extra_layer in docs/trace-format.schema.json). Their field names
// are written and read here only (ctest trace_field_literals); the kind's
// reader (core/analysis/dsbd_layers.cpp) is registered with these types.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/trace/trace.h"

namespace triescope {

// --- the draft step ---

// One draft beam of a layer: its node, the beam of the layer before it
// extends, its token and q_beam (Section 3.1).
struct DsbdDraftBeam {
  int32_t beam = 0;  // index within the layer
  int32_t node = 0;
  int32_t parent_beam = 0;
  int32_t token = 0;
  double q_beam = 0.0;

  bool operator==(const DsbdDraftBeam&) const = default;
};

// One entry of a draft step's `draft_layers`.
struct DsbdDraftLayer {
  int32_t layer = 1;  // 1-based
  std::vector<DsbdDraftBeam> beams;

  bool operator==(const DsbdDraftLayer&) const = default;

  nlohmann::json to_json() const;
  // `where` ("step 3: draft_layers[0]") names it in errors.
  static DsbdDraftLayer from_json(const nlohmann::json& j, const std::string& where);
};

// The draft step's field that holds its layers (an array of DsbdDraftLayer).
inline constexpr const char* kDsbdDraftLayersField = "draft_layers";

// A draft step's layers: its kDsbdDraftLayersField, which the decoder writes
// one layer at a time (StepRecord::push of each DsbdDraftLayer::to_json()).
struct DsbdLayersDraft {
  std::vector<DsbdDraftLayer> layers;

  bool operator==(const DsbdLayersDraft&) const = default;

  // The field's value: the layers' array.
  nlohmann::json to_json() const;
  // The field of the step record `step` (no layers when it has none);
  // `where` ("step 3: draft") names it in errors:
  // "step 3: draft: draft_layers[0]: field beams[1].q_beam must be a number, got null".
  static DsbdLayersDraft from_json(const nlohmann::json& step, const std::string& where);
};

// --- the verify step ---

// One tested draft of a layer (Algorithm 1 lines 13-29).
struct DsbdDraftDecision {
  int32_t beam = 0;  // the draft's index within its layer
  int32_t node = 0;
  double accept_prob = 0.0;
  double u = 0.0;
  bool accepted = false;
  double p = 0.0;  // p_beam of its (beam, token) pair
  double q = 0.0;  // q_beam of it

  bool operator==(const DsbdDraftDecision&) const = default;
};

// Where a sampled beam was drawn from: a short layer's first missing beam
// from the residual, the others from p_beam; the extra layer's beams name none.
enum class DsbdSampledFrom { unnamed, residual, p_beam };

struct DsbdSampledBeam {
  int32_t node = 0;
  DsbdSampledFrom from = DsbdSampledFrom::unnamed;
  double prob = 0.0;

  bool operator==(const DsbdSampledBeam&) const = default;
};

// One entry of verify.layers.
struct DsbdVerifiedLayer {
  int32_t layer = 1;
  int32_t width = 0;             // W_L^(l)
  int32_t surviving_drafts = 0;  // drafts whose parent was accepted
  double predicted_accept = 0.0;  // Eq. 5: P(at least W_L^(l) accepted)
  std::vector<DsbdDraftDecision> drafts;
  std::vector<int32_t> parent_rejected;  // drafts' nodes rejected because their parent was
  bool passed = false;
  std::vector<DsbdSampledBeam> sampled;  // a layer that fell short: the beams after its accepted drafts (written only then)

  bool operator==(const DsbdVerifiedLayer&) const = default;
};

// verify.extra_layer: every layer passed, W beams from p_beam^(g+1) (lines 32-34).
struct DsbdExtraLayer {
  int32_t layer = 1;
  int32_t width = 0;
  std::vector<DsbdSampledBeam> sampled;

  bool operator==(const DsbdExtraLayer&) const = default;
};

struct DsbdLayersVerify {
  static constexpr const char* kKind = kVerifyDsbdLayers;

  int64_t iteration = 0;  // in [0, INT32_MAX]
  int32_t gamma = 0;      // draft layers this iteration
  int32_t steps = 0;      // tokens this iteration produced
  std::optional<int32_t> stopped_at_layer;  // the layer that fell short; none (null) when every layer passed
  std::vector<DsbdVerifiedLayer> layers;
  std::optional<DsbdExtraLayer> extra_layer;  // none (null) unless every layer passed

  bool operator==(const DsbdLayersVerify&) const = default;

  // The `verify` object, with its kind.
  nlohmann::json to_json() const;
  // A recorded `verify` object; `where` ("step 4: verify") names it in errors:
  // "step 4: verify: field layers[0].drafts[1].accepted must be true or false, got 1".
  static DsbdLayersVerify from_json(const nlohmann::json& j, const std::string& where);
};

}  // namespace triescope
