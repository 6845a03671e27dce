// How a decoder runs, apart from what it decodes: the trace's keyframe
// interval, the backend's name, and where mask rows and verification run.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/mask/ancestor_mask.h"

namespace triescope {

class DsbdLayerVerifier;    // core/decode/dsbd.h
class SpeculativeVerifier;  // core/decode/speculative.h
class LookaheadVerifier;    // core/decode/lookahead.h

struct DecodeOptions {
  int32_t keyframe_interval = 16;  // steps between full-tree keyframes in the trace
  std::string backend = "cpu-reference";
  // Builds the trie decoder's mask rows; empty: the CPU reference
  // (IncrementalAncestorMask). The cuda backend installs its device builder.
  std::function<std::unique_ptr<MaskRowBuilder>()> make_mask;
  // Where verification runs; null: the CPU reference. The cuda backend
  // installs device verifiers that draw the same Philox numbers.
  std::shared_ptr<DsbdLayerVerifier> dsbd_verifier;
  std::shared_ptr<SpeculativeVerifier> speculative_verifier;
  std::shared_ptr<LookaheadVerifier> lookahead_verifier;
};

}  // namespace triescope
