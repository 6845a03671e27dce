// What the CUDA backend declares it supports (cuda::sample_supports, its
// BackendSpec::supports) against what it does. Every bundled sample, and every
// value of a sample option that moves a seam (STATIC's constraint.ranking,
// impl, layout and dense_levels; a transformer's attention, and its dtype
// bf16 with "auto" and "tree_kernel" attention), runs on the CPU
// and on this build's CUDA backend: the traces diff equal with `triescope
// diff`'s comparison (trace_diff, provenance such as "backend" aside), or the
// CUDA run is refused with an Error naming the sample file, exactly where the
// declaration has a refused seam. A constraint declared on the device must
// have the device index, one declared on the host the host index.
//
// Run time: every section's max_new_tokens is capped at kMaxNewTokens (3: a
// prefill and two decode steps reach every seam: GC, masks, verification, a
// STATIC step past its dense levels at d <= 2) and every prompt at its first
// kMaxPrompt ids (8), and a checkpoint model (SmolLM2) runs as bundled only,
// so the real model's emulated tree attention costs seconds; a sample the
// backend refuses is not run on the CPU. The sweep takes about 20 s of CPU
// time (one core).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "core/config/json_reader.h"
#include "core/constraint/static_constraint.h"
#include "core/decode/algorithm.h"
#include "core/decode/backend.h"
#include "core/decode/greedy_decode.h"
#include "core/decode/run_sample.h"
#include "core/trace/trace.h"
#include "core/trace/trace_diff.h"
#include "cuda/cuda_backend.h"
#include "cuda/static/static_constraint_index.h"
#ifdef TRIESCOPE_TEST_WITH_TORCH
#include "core/model/torch/torch_transformer.h"
#endif
#ifdef TRIESCOPE_TEST_WITH_LLAMA_CPP
#include "core/model/llama_cpp/llama_cpp_model.h"
#endif

namespace triescope {
namespace {

constexpr int64_t kMaxNewTokens = 3;
constexpr size_t kMaxPrompt = 8;
// A transformer on the device runs the tree attention kernel in fp32: its
// logits equal the CPU's within the kernel's stated 1e-4 (docs/cuda.md,
// "Kernels and their CPU twins"), so its traces compare at that tolerance.
constexpr double kTransformerTolerance = 1e-4;

std::vector<std::string> bundled_samples() {
  std::vector<std::string> paths;
  for (const auto& e : std::filesystem::directory_iterator(std::string(TRIESCOPE_SOURCE_DIR) + "/samples"))
    if (e.path().extension() == ".json") paths.push_back(e.path().string());
  std::sort(paths.begin(), paths.end());
  return paths;
}

void cap_steps(json& sample) {
  for (auto& [key, section] : sample.items())
    if (section.is_object() && section.contains("max_new_tokens") && section["max_new_tokens"].is_number_integer())
      section["max_new_tokens"] = std::min<int64_t>(section["max_new_tokens"].get<int64_t>(), kMaxNewTokens);
  if (sample.contains("prompt") && sample["prompt"].is_array() && sample["prompt"].size() > kMaxPrompt)
    sample["prompt"].erase(sample["prompt"].begin() + kMaxPrompt, sample["prompt"].end());
}

// A model read from a checkpoint (a "path"): a real model, run as bundled
// only; the random-init transformers take every attention value (the same
// seam at a fraction of the cost).
bool checkpoint_model(const json& sample) { return sample.contains("model") && sample["model"].contains("path"); }

struct Variant {
  std::string label;
  json sample;
};

// The sample as bundled, then one variant per option value that moves a seam.
std::vector<Variant> variants_of(const json& sample) {
  std::vector<Variant> out{{"as bundled", sample}};
  auto add = [&](const std::string& label, json j) {
    if (j != sample) out.push_back({label, std::move(j)});
  };
  if (sample.value("algorithm", std::string()) == "lookahead") {  // its reference, greedy (its own argmax seam)
    json j = sample;
    j["algorithm"] = "greedy";
    j["greedy"] = {{"max_new_tokens", j["lookahead"]["max_new_tokens"]}, {"eos_token", j["lookahead"].value("eos_token", -1)}};
    j.erase("lookahead");
    add("as greedy", std::move(j));
  }
  if (sample.contains("constraint")) {
    auto constraint = [&](auto edit) {
      json j = sample;
      edit(j["constraint"]);
      return j;
    };
    add("ranking sparse", constraint([](json& c) { c["impl"] = "vntk", c["ranking"] = "sparse"; }));
    for (const char* impl : {"vntk", "pointer_trie", "ppv_exact", "ppv_approx", "hash_bitmap"})
      add(std::string("impl ") + impl, constraint([&](json& c) { c["impl"] = impl, c["ranking"] = "full"; }));
    for (const char* layout : {"stacked", "compact"})
      add(std::string("layout ") + layout, constraint([&](json& c) { c["impl"] = "vntk", c["layout"] = layout; }));
    for (int d = 0; d <= 2; ++d) add("dense_levels " + std::to_string(d), constraint([&](json& c) { c["impl"] = "vntk", c["dense_levels"] = d; }));
  }
  for (const char* attention : {"auto", "dense", "gather", "tree_kernel"}) {
    if (checkpoint_model(sample)) break;
    json j = sample;
    bool changed = false;  // an absent attention is "auto"
    for (const char* field : {"model", "draft_model"})
      if (j.contains(field) && j[field].value("type", std::string()) == "transformer") {
        changed = changed || j[field].value("attention", std::string("auto")) != attention;
        j[field]["attention"] = attention;
      }
    if (changed) add(std::string("attention ") + attention, std::move(j));
  }
  // bf16: as bundled (on the host runtime "auto" stays LibTorch attention on
  // the CPU), and with the tree kernel, which bf16 refuses on every backend.
  for (const char* attention : {"", "tree_kernel"}) {
    if (checkpoint_model(sample)) break;
    json j = sample;
    bool any = false;
    for (const char* field : {"model", "draft_model"})
      if (j.contains(field) && j[field].value("type", std::string()) == "transformer") {
        j[field]["dtype"] = "bfloat16";
        if (*attention) j[field]["attention"] = attention;
        any = true;
      }
    if (any) add(std::string("dtype bfloat16") + (*attention ? ", attention " + std::string(attention) : std::string()), std::move(j));
  }
  return out;
}

bool bf16_variant(const json& sample) {
  for (const char* field : {"model", "draft_model"})
    if (sample.contains(field) && sample[field].value("dtype", std::string()) == "bfloat16") return true;
  return false;
}

// The CPU run of a variant configured as the backend configures it: a
// transformer's attention as cuda::transformer_on_cuda resolves it (so the
// headers' model config agrees, "auto" included).
json as_cuda_configures(json sample) {
  for (const char* field : {"model", "draft_model"})
    if (sample.contains(field) && sample[field].value("type", std::string()) == "transformer")
      sample[field]["attention"] = cuda::transformer_on_cuda(sample[field])["attention"];
  return sample;
}

struct Outcome {
  bool loaded = false;
  std::string error;  // the Error that refused the load or failed the run
  BackendSupport support;
  bool device_index = false;  // a STATIC constraint whose index is cuda::StaticIndexCuda
  json installed = json::object();  // the seams the backend installed: {"mask": true, "verify.<kind>": true, "greedy_argmax": true}
  std::vector<json> records;
};

json installed_seams(const Sample& s) {
  json j = json::object();
  if (s.options.make_mask) j["mask"] = true;
  for (const std::string& kind : s.options.verifiers.kinds()) j["verify." + kind] = true;
  if (s.options.verifiers.find_seam<GreedyArgmax>(kGreedyArgmaxSeam)) j["greedy_argmax"] = true;
  return j;
}

// What `support` places on the device among the seams installed_seams sees.
json declared_installed(const BackendSupport& support, const json& installed) {
  json j = json::object();
  for (const SeamSupport& x : support.seams)
    if (x.place == SeamPlace::device && (x.seam == "mask" || x.seam == "greedy_argmax" || x.seam.rfind("verify.", 0) == 0)) j[x.seam] = true;
  for (const auto& [seam, on] : installed.items())  // a seam the sample's algorithm does not call
    if (!support.find(seam)) j[seam] = on;
  return j;
}

Outcome run_on(const json& sample, const std::string& path, const BackendSpec& backend) {
  Outcome o;
  try {
    Sample s = sample_parse(sample, path, backend);
    o.loaded = true;
    o.support = s.support;
    o.installed = installed_seams(s);
    if (auto* c = dynamic_cast<StaticConstraint*>(s.constraint.get())) o.device_index = dynamic_cast<cuda::StaticIndexCuda*>(&c->index());
    MemoryTraceSink sink;
    std::ostringstream report;
    run_sample(s, &sink, report);
    o.records = std::move(sink.records);
  } catch (const Error& e) {
    o.error = e.what();
  }
  return o;
}

// The model types this build has, as the CLI registers them (app/cli_main.cpp).
void model_types_register() {
  static const bool once = [] {
#ifdef TRIESCOPE_TEST_WITH_TORCH
    torch_models_register();
#endif
#ifdef TRIESCOPE_TEST_WITH_LLAMA_CPP
    llama_cpp_models_register();
#endif
    return true;
  }();
  (void)once;
}

bool transformer_on_device(const BackendSupport& s) {
  for (const char* seam : {"model", "draft_model"})
    if (const SeamSupport* x = s.find(seam); x && x->value == "transformer" && x->place == SeamPlace::device) return true;
  return false;
}

}  // namespace

TEST_CASE("backend options: every sample and seam option diffs equal on cpu and the cuda backend, or is refused by name",
          "[cuda][trace][backend_options]") {
  model_types_register();
  cuda::backend_register();
  const BackendSpec* device = backend_find(cuda::kCliName);
  REQUIRE(device);
  int compared = 0, refused = 0, variants = 0, transformers = 0;
  for (const std::string& path : bundled_samples()) {
    json bundled = json_load_file(path);
    cap_steps(bundled);
    for (const Variant& v : variants_of(bundled)) {
      CAPTURE(path, v.label);
      ++variants;
      const AlgorithmSpec* algorithm = algorithm_find(v.sample.value("algorithm", std::string()));
      REQUIRE(algorithm);
      const BackendSupport declared = cuda::sample_supports(v.sample, *algorithm);
      INFO("declared: " << declared.to_json().dump());
      const Outcome gpu = run_on(v.sample, path, *device);
      INFO(cuda::kCliName << ": " << (gpu.error.empty() ? "ran" : gpu.error));
      if (const SeamSupport* r = declared.refused()) {
        REQUIRE(!gpu.loaded);
        CHECK_THAT(gpu.error, Catch::Contains(path) && Catch::Contains(r->value));
        ++refused;
        continue;
      }
      // A bf16 transformer on a GPU is not compared here: it differs from the
      // CPU's bf16 by more than the fp32 kernel's tolerance.
      if (bf16_variant(v.sample) && transformer_on_device(declared)) continue;
      const Outcome cpu = run_on(as_cuda_configures(v.sample), path, backend_cpu());
      INFO("cpu: " << (cpu.error.empty() ? "ran" : cpu.error));
      if (!cpu.loaded) {  // a model this build or machine does not have (transformer_byo.json: bring your own)
        CHECK(!gpu.loaded);
        continue;
      }
      REQUIRE(cpu.error.empty());
      REQUIRE(gpu.error.empty());
      REQUIRE(gpu.support.to_json() == declared.to_json());
      CHECK(!cpu.device_index);
      CHECK(cpu.installed == json::object());
      CHECK(gpu.installed == declared_installed(declared, gpu.installed));
      if (const SeamSupport* c = declared.find("constraint")) CHECK(gpu.device_index == (c->place == SeamPlace::device));
      REQUIRE(gpu.records.front().value("backend", std::string()) == device->trace_name);
      TraceDiffOptions opt;
      if (transformer_on_device(declared)) opt.tolerance = kTransformerTolerance;
      const auto d = trace_diff(cpu.records, gpu.records, opt);
      INFO((d ? d->describe() : std::string("equivalent")));
      REQUIRE(!d);
      ++compared;
      if (declared.find("model")->value == "transformer") ++transformers;
    }
  }
  CHECK(variants >= 30);
  CHECK(compared >= 20);
  CHECK(refused >= 3);  // the scripted samples (and llama.cpp's where it is built)
#ifdef TRIESCOPE_TEST_WITH_TORCH
  CHECK(transformers >= 8);  // transformer_tiny, dsbd_transformer: every attention value
#endif
}

TEST_CASE("backend options: a refused seam fails the load naming the file, the field and the backend", "[cuda][backend_options]") {
  const std::string name = "test-refuses-sparse";
  if (!backend_find(name)) {
    BackendSpec b = backend_cpu();
    b.name = name;
    b.supports = [name](const json& sample, const AlgorithmSpec& algorithm) {
      BackendSupport s = backend_support_host(name, sample, algorithm, "the CPU reference");
      for (SeamSupport& x : s.seams)
        if (x.seam == "constraint.ranking" && x.value == "sparse") x.place = SeamPlace::refused, x.reason = "no sparse ranking here";
      return s;
    };
    backend_register(std::move(b));
  }
  const std::string path = std::string(TRIESCOPE_SOURCE_DIR) + "/samples/static_figure1.json";
  json j = json_load_file(path);
  const Sample full = sample_parse(j, path, *backend_find(name));
  CHECK(full.support.find("constraint.ranking")->place == SeamPlace::host);
  CHECK(full.support.to_json().value("constraint.ranking", "") == "host");
  j["constraint"]["ranking"] = "sparse";
  CHECK_THROWS_WITH(sample_parse(j, path, *backend_find(name)),
                    Catch::Contains(path + ": constraint.ranking \"sparse\" is not supported on backend " + name + ": no sparse ranking here"));
  // The CPU and the cuda backend run it: the cuda backend with its documented host part.
  CHECK(sample_parse(j, path, backend_cpu()).support.to_json().value("constraint", "") == "host");
  cuda::backend_register();
  const Sample dev = sample_parse(j, path, *backend_find(cuda::kCliName));
  CHECK(dev.support.to_json().value("constraint", "") == "host");
  CHECK_THAT(dev.support.find("constraint")->reason, Catch::Contains("StaticStep"));
  j["constraint"]["ranking"] = "full";
  const Sample dev_full = sample_parse(j, path, *backend_find(cuda::kCliName));
  CHECK(dev_full.support.to_json().value("constraint", "") == "device");
  CHECK(dev_full.support.to_json().value("constraint.ranking", "") == dev_full.support.to_json().value("selection", ""));
  CHECK(dev.support.to_json().value("constraint.ranking", "") == "host");
}

}  // namespace triescope

namespace triescope {

TEST_CASE("backend options: a sample declares only the seams its algorithm calls; wide beams rank on the host",
          "[cuda][backend_options]") {
  cuda::backend_register();
  const BackendSpec& dev = *backend_find(cuda::kCliName);
  json j = json_load_file(std::string(TRIESCOPE_SOURCE_DIR) + "/samples/synthetic_long.json");
  const AlgorithmSpec& trie = *algorithm_find("trie_beam_search");
  REQUIRE(j.at("algorithm") == "trie_beam_search");
  const json placed = backend_supports(dev, j, trie).to_json();
  CHECK(placed.value("mask", "") == "device");
  CHECK(placed.value("selection", "") == "device");
  CHECK_FALSE(placed.contains("greedy_argmax"));  // greedy's seam: trie beam search never calls it
  // 2 x num_beams past the radix top-k's kTopkMaxK: the host ranks, and says so.
  j["beam"]["num_beams"] = 513;
  const BackendSupport wide = backend_supports(dev, j, trie);
  REQUIRE(wide.find("selection"));
  CHECK(wide.find("selection")->place == SeamPlace::host);
  CHECK(wide.find("selection")->value == "513");
  CHECK_THAT(wide.find("selection")->reason, Catch::Contains("1024"));
  j["beam"]["num_beams"] = 512;
  CHECK(backend_supports(dev, j, trie).find("selection")->place == SeamPlace::device);
  // A DSBD sample: its verify kind, no mask or selection seam.
  const json dsbd = json_load_file(std::string(TRIESCOPE_SOURCE_DIR) + "/samples/dsbd_synthetic.json");
  const json d = backend_supports(dev, dsbd, *algorithm_find("dsbd")).to_json();
  CHECK(d.contains(std::string("verify.") + kVerifyDsbdLayers));
  CHECK_FALSE(d.contains("mask"));
  CHECK_FALSE(d.contains("selection"));
}

}  // namespace triescope
