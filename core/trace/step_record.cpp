#include "core/trace/step_record.h"

#include "core/trace/trace_recorder.h"

namespace triescope {

StepRecord::StepRecord(const TraceRecorder& rec, std::initializer_list<const char*> lists) : on_(rec.on()) {
  if (!on_) return;
  verify_kind_ = rec.verify_kind();
  fields_ = json::object();
  for (const char* key : lists) fields_[key] = json::array();
}

}  // namespace triescope
