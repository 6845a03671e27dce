// Sample files for the sampling decoders: "beam_sampling", "speculative" and
// "dsbd". They add a "sampling" object (warp and seed), and for the two
// speculative decoders a "draft_model" object and a "speculative" or "dsbd"
// object (docs/dsbd.md lists the fields).
#pragma once
#include <ostream>
#include <string>

#include "core/config/json_reader.h"
#include "core/decode/run_sample.h"

namespace triescope {

bool sample_algorithm_is_sampling(const std::string& algorithm);
// Reads and validates the extra objects of a sampling sample (marks them used in `r`).
void sample_sampling_check(JsonObjectReader& r, const Sample& s);
// Runs a sampling sample and writes its report.
SampleRun run_sample_sampling(Sample& s, TraceSink* trace, std::ostream& report);

}  // namespace triescope
