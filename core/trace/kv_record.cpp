#include "core/trace/kv_record.h"

#include <climits>
#include <utility>

#include "core/common/error.h"
#include "core/config/json_reader.h"
#include "core/trace/trace.h"

namespace triescope {

namespace {

// The fields of the group with their ranges, in one table for both directions.
struct KvField {
  const char* name;
  int64_t max;
};
constexpr KvField kSlots{"slots", kTraceMaxSlots}, kPeak{"peak", kTraceMaxSlots};

template <class Fn>
void for_each_optional(Fn&& fn) {
  // (field, member) pairs of the optional figures, in the schema's order.
  fn(KvField{"bytes", INT64_MAX}, &KvRecord::bytes);
  fn(KvField{"batch_slots", kTraceMaxSlots}, &KvRecord::batch_slots);
  fn(KvField{"batch_bytes", INT64_MAX}, &KvRecord::batch_bytes);
  fn(KvField{"live_beams", INT64_MAX}, &KvRecord::live_beams);
  fn(KvField{"live_samples", INT64_MAX}, &KvRecord::live_samples);
  fn(KvField{"engine_cells", INT64_MAX}, &KvRecord::engine_cells);
  fn(KvField{"engine_seq_ids", INT64_MAX}, &KvRecord::engine_seq_ids);
}

int64_t read_count(const nlohmann::json& j, const KvField& f, const std::string& where) {
  const auto it = j.find(f.name);
  TS_CHECK(it != j.end(), where << ": field " << f.name << " is missing (an integer in [0, " << f.max << "])");
  TS_CHECK(it->is_number_integer(), where << ": field " << f.name << " must be an integer, got " << json_brief(*it));
  const auto x = json_int_in(*it, 0, f.max);
  TS_CHECK(x, where << ": field " << f.name << " must be in [0, " << f.max << "], got " << json_brief(*it));
  return *x;
}

}  // namespace

nlohmann::json KvRecord::to_json() const {
  nlohmann::json j = {{kSlots.name, slots}, {kPeak.name, peak}};
  for_each_optional([&](const KvField& f, std::optional<int64_t> KvRecord::*member) {
    if (const auto& v = this->*member) j[f.name] = *v;
  });
  return j;
}

KvRecord KvRecord::from_json(const nlohmann::json& j, const std::string& where) {
  TS_CHECK(j.is_object(), where << " must be an object, got " << json_brief(j));
  KvRecord k;
  k.slots = read_count(j, kSlots, where);
  k.peak = read_count(j, kPeak, where);
  for_each_optional([&](const KvField& f, std::optional<int64_t> KvRecord::*member) {
    if (j.contains(f.name)) k.*member = read_count(j, f, where);
  });
  return k;
}

}  // namespace triescope
