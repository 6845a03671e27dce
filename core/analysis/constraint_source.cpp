#include "core/analysis/constraint_source.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <sstream>

#include "core/common/error.h"
#include "core/config/json_reader.h"

namespace triescope {

namespace {
constexpr int64_t kMaxStates = int64_t{1} << 40;
constexpr const char* kLivePrefix = "live: ";

std::string joined(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A mismatch between the file and the header, or "" when they agree.
std::string set_mismatch(const ConstraintHeader& h, const ConstraintSet& c, const std::string& path) {
  std::ostringstream m;
  const std::string field = "the trace header's config.constraint.set.";
  if (!h.set_sha256.empty() && c.sha256 != h.set_sha256)
    m << path << ": sha256 is " << c.sha256 << ", " << field << "sha256 is " << h.set_sha256 << " (the file changed since the decode)";
  else if (h.set_items >= 0 && c.size() != h.set_items)
    m << path << ": " << c.size() << " ids, " << field << "items is " << h.set_items;
  else if (c.length != h.length)
    m << path << ": ids of length " << c.length << ", the trace header's config.constraint.length is " << h.length;
  return m.str();
}
}  // namespace

std::optional<ConstraintHeader> constraint_header_read(const HeaderRecord& header, const std::string& origin) {
  const auto constraint = header.config.find("constraint");
  if (constraint == header.config.end()) return std::nullopt;
  return reader_boundary(origin, [&] {
    JsonObjectReader r(*constraint, origin, "config.constraint");
    ConstraintHeader h;
    h.impl = r.get_string("impl");
    h.name = r.get_string("name", h.impl);
    h.layout = csr_layout_parse(r.get_string("layout", "stacked"), r.where("layout"));
    h.dense_levels = static_cast<int32_t>(r.get_int("dense_levels", 0, 2, 0));
    h.length = static_cast<int32_t>(r.get_int("length", 1, kConstraintMaxLength));
    h.vocab_size = static_cast<int32_t>(r.get_int("vocab_size", 1, INT32_MAX));
    h.states = r.get_int("states", 1, kMaxStates, -1);
    if (r.has("max_branch")) h.max_branch = r.get_int_array("max_branch", 0, INT32_MAX);
    if (r.has("set")) {
      JsonObjectReader s = r.object("set");
      h.set_file = s.get_string("file", "");
      h.set_sha256 = s.get_string("sha256", "");
      h.set_items = s.get_int("items", 1, kMaxStates, -1);
      const int64_t len = s.get_int("length", 1, kConstraintMaxLength, h.length);
      TS_CHECK(len == h.length, s.where("length") << " is " << len << ", config.constraint.length is " << h.length);
      const int64_t v = s.get_int("vocab_size", 1, INT32_MAX, h.vocab_size);
      TS_CHECK(v == h.vocab_size, s.where("vocab_size") << " is " << v << ", config.constraint.vocab_size is " << h.vocab_size);
    }
    return h;
  });
}

std::vector<std::string> constraint_file_candidates(const ConstraintHeader& h, const std::string& trace_origin,
                                                    const std::string& chosen, const std::vector<std::string>& also_in) {
  namespace fs = std::filesystem;
  if (!chosen.empty()) return {chosen};
  if (h.set_file.empty()) return {};
  const fs::path file(h.set_file);
  if (file.is_absolute()) return {file.string()};
  // A live run: the sample resolved the file against its own folder.
  const std::string prefix = kLivePrefix;
  const bool live = trace_origin.rfind(prefix, 0) == 0;
  std::vector<fs::path> dirs{fs::path(live ? trace_origin.substr(prefix.size()) : trace_origin).parent_path()};
  dirs.insert(dirs.end(), also_in.begin(), also_in.end());
  std::vector<std::string> out;
  for (const fs::path& dir : dirs) {  // each file once, however its folder is spelled
    const std::string c = (dir / file).lexically_normal().string();
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  }
  return out;
}

namespace {

// One file: read, checked against the header and indexed; the message says
// what was loaded or why not (without what the viewer then shows).
ConstraintLoadResult constraint_index_load_one(const ConstraintHeader& h, const std::string& path) {
  ConstraintLoadResult out;
  try {
    const auto t0 = std::chrono::steady_clock::now();
    auto set = std::make_shared<const ConstraintSet>(constraint_set_read(path, "auto", h.vocab_size));
    auto loaded = std::make_shared<ConstraintIndexLoaded>();
    loaded->read_seconds = seconds_since(t0);
    if (std::string bad = set_mismatch(h, *set, path); !bad.empty()) {
      out.message = bad;
      return out;
    }
    const auto t1 = std::chrono::steady_clock::now();
    auto tm = std::make_shared<const TransitionMatrix>(TransitionMatrix::build(*set, {h.dense_levels, h.layout}));
    loaded->build_seconds = seconds_since(t1);
    if (h.states >= 0 && tm->num_states() != h.states) {
      out.message = path + ": the index has " + std::to_string(tm->num_states()) + " states, config.constraint.states is " +
                    std::to_string(h.states);
      return out;
    }
    loaded->set = std::move(set);
    loaded->matrix = std::move(tm);
    loaded->path = path;
    std::ostringstream m;
    m << path << ": " << loaded->set->size() << " ids, " << loaded->matrix->num_states() << " states, sha256 matches the header";
    out.message = m.str();
    out.index = std::move(loaded);
  } catch (const std::exception& e) {
    out.message = e.what();
  }
  return out;
}

}  // namespace

ConstraintLoadResult constraint_index_load(const ConstraintHeader& h, const std::vector<std::string>& candidates) {
  ConstraintLoadResult out;
  if (candidates.empty()) {
    out.message = "the trace header's config.constraint.set names no file (a set made in memory): showing what the records alone say";
    return out;
  }
  std::vector<std::string> refused;  // why each existing candidate was not used
  for (const auto& c : candidates) {
    if (!std::filesystem::is_regular_file(c)) continue;
    ConstraintLoadResult one = constraint_index_load_one(h, c);
    if (one.index) {
      if (!refused.empty()) one.message += " (not used: " + joined(refused, "; ") + ")";
      return one;
    }
    refused.push_back(std::move(one.message));
  }
  std::ostringstream m;
  if (refused.empty()) {
    m << "constraint set \"" << h.set_file << "\" (config.constraint.set.file) not found at";
    for (const auto& c : candidates) m << " " << c;
    m << ": showing what the records alone say; pick the file to see the prefix tree and the CSR rows";
  } else {
    m << joined(refused, "; ") << ": showing what the records alone say";
  }
  out.message = m.str();
  return out;
}

}  // namespace triescope
