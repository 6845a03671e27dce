// The one way a decoder feeds nodes of its token tree to a model: tokens,
// positions = depths, the nodes' slots, and their ancestor-mask rows.
#pragma once
#include <vector>

#include <nlohmann/json.hpp>

#include "core/mask/ancestor_mask.h"
#include "core/model/model.h"

namespace triescope {

// Mask rows come from `inc` when given (parents' rows must be held or are
// walked), else from a full ancestor walk. With `mask_on_device` they stay
// where `inc` built them (StepInput::mask_device; `inc` must build on a
// device) and `mask` is empty.
StepInput tree_step_input(const TokenTree& tree, const std::vector<int32_t>& nodes, int32_t num_slots,
                          MaskRowBuilder* inc = nullptr, bool mask_on_device = false);

// The trace's "forward" object for a StepInput built from `nodes`.
nlohmann::json tree_step_json(const std::vector<int32_t>& nodes, const StepInput& in);

int32_t argmax_row(const float* row, int32_t vocab);  // ties: the lowest token id

}  // namespace triescope
