// How a decoder runs, apart from what it decodes: the trace's keyframe
// interval, the backend's name, and where mask rows and verification run.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "core/decode/verifier_set.h"
#include "core/mask/ancestor_mask.h"
#include "core/select/selector.h"

namespace triescope {

struct DecodeOptions {
  int32_t keyframe_interval = 16;  // steps between full-tree keyframes in the trace
  std::string backend = "cpu-reference";
  // The trace header's "seams": where the backend runs each seam of the
  // sample (BackendSupport::to_json, core/decode/backend.h); null: not
  // recorded (the CPU reference).
  nlohmann::json seams = nullptr;
  // Builds the trie decoder's mask rows; empty: the CPU reference
  // (IncrementalAncestorMask). The cuda backend installs its device builder.
  std::function<std::unique_ptr<MaskRowBuilder>()> make_mask;
  // Where verification runs, by verify kind; a kind with none: the CPU
  // reference. The cuda backend installs its device verifiers, which draw
  // the same Philox numbers.
  VerifierSet verifiers;
  // Builds the beam decoders' selection (the top 2b of a step); empty: the
  // CPU reference (CpuSelector). The cuda backend installs its device
  // selector, whose candidates and scores are the reference's bit for bit.
  SelectorFactory make_selector;
};

}  // namespace triescope
