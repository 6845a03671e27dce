#include "core/decode/run_sample.h"

#include <sstream>

#include "core/common/error.h"
#include "core/config/json_reader.h"
#include "core/constraint/sample_constraint.h"
#include "core/model/model_factory.h"

namespace triescope {

namespace {

// A field the sample holds but its algorithm does not accept: a named error
// that lists the algorithms that do.
void refuse_unaccepted(const JsonObjectReader& r, const Sample& s, const char* field,
                       bool AlgorithmAccepts::*accepts) {
  TS_CHECK(!r.has(field) || s.spec->accepts.*accepts,
           r.where(field) << ": algorithm " << s.algorithm << " does not accept a " << field << " (algorithms that do: "
                          << algorithm_names_if([&](const AlgorithmSpec& a) { return a.accepts.*accepts; }) << ")");
}

}  // namespace

static Sample sample_parse_checked(const json& j, const std::string& origin, const BackendSpec& backend);

Sample sample_parse(const json& j, const std::string& origin, const BackendSpec& backend) {
  return reader_boundary(origin, [&] { return sample_parse_checked(j, origin, backend); });
}

static Sample sample_parse_checked(const json& j, const std::string& origin, const BackendSpec& backend) {
  Sample s;
  s.path = origin;
  s.raw = j;
  JsonObjectReader r(j, origin);
  const std::string schema = r.get_string("schema");
  TS_CHECK(schema == kSampleFormat, r.where("schema") << " must be \"" << kSampleFormat << "\", got \"" << schema << "\"");
  const int64_t version = r.get_int("version", INT32_MIN, INT32_MAX);
  TS_CHECK(version == kSampleVersion, r.where("version") << " is " << version << ", this build reads version " << kSampleVersion);
  s.name = r.get_string("name");
  s.description = r.get_string("description", "");
  s.algorithm = r.get_string("algorithm");
  s.spec = algorithm_find(s.algorithm);
  TS_CHECK(s.spec, r.where("algorithm") << " must be one of " << algorithm_names() << ", got \"" << s.algorithm << "\"");
  refuse_unaccepted(r, s, "constraint", &AlgorithmAccepts::constraint);
  refuse_unaccepted(r, s, "draft_model", &AlgorithmAccepts::draft_model);
  refuse_unaccepted(r, s, "sampling", &AlgorithmAccepts::sampling);
  TS_CHECK(!s.spec->accepts.draft_model || r.has("draft_model"), origin << ": algorithm " << s.algorithm << " needs a draft_model object");

  s.model = backend.build_model(r.object("model"));
  const int32_t V = s.model->vocab_size();
  if (s.spec->accepts.draft_model) {
    s.draft = backend.build_model(r.object("draft_model"));
    TS_CHECK(s.draft->vocab_size() == V,
             r.where("draft_model.vocab_size") << " = " << s.draft->vocab_size() << " differs from model.vocab_size " << V);
  }
  // Models refuse themselves (build_model names the file and field); every
  // other seam the backend refuses is refused here, before the constraint is built.
  s.support = backend_supports(backend, j, *s.spec);
  backend_support_check(s.support, origin);
  TS_CHECK(r.has("prompt") != r.has("prompt_text"), origin << ": give exactly one of prompt (ids) or prompt_text (strings)");
  if (r.has("prompt")) {
    s.prompt = r.get_int_array("prompt", 0, V - 1);
  } else {
    const auto vocab = s.model->vocab_strings();
    TS_CHECK(!vocab.empty(), r.where("prompt_text") << " needs a model with a vocabulary");
    s.prompt = tokens_from_strings(vocab, r.raw("prompt_text"), r.where("prompt_text"));
  }
  TS_CHECK(!s.prompt.empty(), origin << ": prompt must hold at least one token");
  if (r.has("trace")) {
    auto t = r.object("trace");
    TS_CHECK(!t.has("keyframe_interval") || s.spec->has_tree,
             t.where("keyframe_interval") << ": algorithm " << s.algorithm << " records no token tree, so its trace has no keyframes");
    s.options.keyframe_interval = static_cast<int32_t>(t.get_int("keyframe_interval", 0, 1 << 20, 16));
    t.finish();
  }
  if (r.has("constraint")) s.constraint = sample_constraint_from_json(r.object("constraint"), V, origin, backend.make_constraint_index);
  s.config = s.spec->parse(r, s);
  r.finish();
  backend.prepare(s);
  return s;
}

Sample sample_load(const std::string& path, const BackendSpec& backend) {
  return reader_boundary(path, [&] { return sample_parse(json_load_file(path), path, backend); });
}

std::string tokens_to_text(const Model& m, const std::vector<int32_t>& tokens) {
  const auto vocab = m.vocab_strings();
  std::ostringstream os;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (i) os << ' ';
    if (tokens[i] >= 0 && static_cast<size_t>(tokens[i]) < vocab.size()) os << vocab[static_cast<size_t>(tokens[i])];
    else os << tokens[i];
  }
  return os.str();
}

SampleRun run_sample(const Sample& s, TraceSink* trace, std::ostream& os) {
  TS_CHECK(s.spec && s.model, s.path << ": run_sample needs a loaded sample");
  os << "sample: " << s.name << " (" << s.path << ")\n";
  if (!s.description.empty()) os << "  " << s.description << "\n";
  return s.spec->run(s, trace, os);
}

}  // namespace triescope
