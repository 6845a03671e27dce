#include "core/decode/beam_config.h"

#include "core/common/error.h"

namespace triescope {

BeamConfig BeamConfig::from_json(JsonObjectReader r, int32_t vocab_size) {
  BeamConfig c;
  c.num_beams = static_cast<int32_t>(r.get_int("num_beams", 1, 4096));
  TS_CHECK(int64_t{2} * c.num_beams <= vocab_size,
           r.where("num_beams") << " = " << c.num_beams << " needs a vocabulary of at least 2 x num_beams tokens, model has "
                                << vocab_size);
  c.max_new_tokens = static_cast<int32_t>(r.get_int("max_new_tokens", 1, 1 << 20));
  c.eos_token = static_cast<int32_t>(r.get_int("eos_token", -1, vocab_size - 1, -1));
  c.length_penalty = r.get_double("length_penalty", -100.0, 100.0, 1.0);
  if (r.has("early_stopping")) {
    const json& v = r.raw("early_stopping");
    if (v.is_boolean()) {
      c.early_stopping = v.get<bool>() ? EarlyStopping::yes : EarlyStopping::no;
    } else {
      TS_CHECK(v.is_string() && v.get<std::string>() == "never",
               r.where("early_stopping") << " must be true, false or \"never\", got " << v.dump());
      c.early_stopping = EarlyStopping::never;
    }
  }
  c.gc_interval = static_cast<int32_t>(r.get_int("gc_interval", 0, 1 << 20, 0));
  r.finish();
  return c;
}

nlohmann::json BeamConfig::to_json() const {
  nlohmann::json es = early_stopping == EarlyStopping::never ? nlohmann::json("never")
                                                             : nlohmann::json(early_stopping == EarlyStopping::yes);
  return {{"num_beams", num_beams},       {"max_new_tokens", max_new_tokens}, {"eos_token", eos_token},
          {"length_penalty", length_penalty}, {"early_stopping", es},          {"gc_interval", gc_interval}};
}

}  // namespace triescope
