// Runs the real `triescope` binary: exit codes, messages, and that failures
// leave no output file behind.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>

namespace fs = std::filesystem;

namespace {
struct Result {
  int code;
  std::string out;
};
Result run(const std::string& args) {
  const std::string cmd = std::string(TRIESCOPE_BINARY_DIR) + "/app/triescope " + args + " 2>&1";
  Result r{-1, ""};
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::array<char, 4096> buf{};
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) r.out.append(buf.data(), n);
  const int st = pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}
fs::path scratch() {
  fs::path d = fs::temp_directory_path() / ("triescope-cli-" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}
const std::string kSamples = std::string(TRIESCOPE_SOURCE_DIR) + "/samples/";
}  // namespace

TEST_CASE("cli run: Figure 1 prints both KV counts and writes a trace", "[cli]") {
  const fs::path out = scratch() / "fig1.jsonl";
  auto r = run("run " + kSamples + "figure1_once_upon_a_time.json --out " + out.string());
  INFO(r.out);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("trie stores 12 tokens"));
  CHECK_THAT(r.out, Catch::Contains("batch layout stores 21 tokens"));
  CHECK(fs::exists(out));
  auto ins = run("inspect " + out.string() + " --step 2");
  INFO(ins.out);
  CHECK(ins.code == 0);
  CHECK_THAT(ins.out, Catch::Contains("garbage collection: 7 -> 6 slots"));
  CHECK_THAT(ins.out, Catch::Contains("position ids: 5 5 5"));
}

TEST_CASE("cli diff: equivalent traces exit 0, a planted divergence exits 1 and is named", "[cli]") {
  const fs::path d = scratch();
  REQUIRE(run("run " + kSamples + "figure1_once_upon_a_time.json --quiet --out " + (d / "a.jsonl").string()).code == 0);
  REQUIRE(run("run " + kSamples + "figure1_once_upon_a_time.json --quiet --out " + (d / "b.jsonl").string()).code == 0);
  auto same = run("diff " + (d / "a.jsonl").string() + " " + (d / "b.jsonl").string());
  CHECK(same.code == 0);
  // plant: change one chosen token in the copy
  std::ifstream in(d / "b.jsonl");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  const auto at = text.find("\"token\":8");  // "was"
  REQUIRE(at != std::string::npos);
  text.replace(at, 9, "\"token\":9");
  std::ofstream(d / "c.jsonl") << text;
  auto diff = run("diff " + (d / "a.jsonl").string() + " " + (d / "c.jsonl").string());
  INFO(diff.out);
  CHECK(diff.code == 1);
  CHECK_THAT(diff.out, Catch::Contains("first divergence at step 2"));
  CHECK_THAT(diff.out, Catch::Contains("A = 8, B = 9"));
}

TEST_CASE("cli: bad input fails with a named error and leaves no output file", "[cli]") {
  const fs::path d = scratch();
  SECTION("malformed sample") {
    std::ofstream(d / "bad.json") << "{ \"schema\": ";
    const fs::path out = d / "never.jsonl";
    auto r = run("run " + (d / "bad.json").string() + " --out " + out.string());
    CHECK(r.code == 2);
    CHECK_THAT(r.out, Catch::Contains("bad.json:1:"));
    CHECK_FALSE(fs::exists(out));
  }
  SECTION("out-of-range value") {
    std::ofstream(d / "b0.json") << R"({"schema":"triescope.sample","version":1,"name":"t","algorithm":"trie_beam_search",
      "model":{"type":"synthetic","vocab_size":16},"prompt":[1],"beam":{"num_beams":0,"max_new_tokens":3}})";
    auto r = run("run " + (d / "b0.json").string() + " --out " + (d / "x.jsonl").string());
    CHECK(r.code == 2);
    CHECK_THAT(r.out, Catch::Contains("b0.json: beam.num_beams must be in [1, 4096], got 0"));
    CHECK_FALSE(fs::exists(d / "x.jsonl"));
  }
  SECTION("unwritable output path") {
    auto r = run("run " + kSamples + "figure1_once_upon_a_time.json --out /nonexistent-dir/t.jsonl");
    CHECK(r.code == 2);
    CHECK_THAT(r.out, Catch::Contains("/nonexistent-dir/t.jsonl: cannot open for writing"));
  }
  SECTION("trace of another format") {
    std::ofstream(d / "other.jsonl") << R"({"kind":"header","schema":"someone.else","version":1})" << "\n";
    auto r = run("inspect " + (d / "other.jsonl").string());
    CHECK(r.code == 2);
    CHECK_THAT(r.out, Catch::Contains("other.jsonl:1: field schema must be \"triescope.trace\""));
  }
  SECTION("unknown option and command") {
    CHECK(run("run --frobnicate").code == 2);
    CHECK(run("transmogrify").code == 2);
  }
}

TEST_CASE("cli simulate: trie vs batch per step, CSV written atomically", "[cli]") {
  const fs::path csv = scratch() / "sim.csv";
  auto r = run("simulate --beams 3,5 --lengths 20 --prompt-len 16 --vocab 64 --csv " + csv.string());
  INFO(r.out);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("same outputs"));
  CHECK(r.out.find(" NO") == std::string::npos);
  std::ifstream in(csv);
  std::string header;
  std::getline(in, header);
  CHECK(header == "beams,max_new_tokens,step,trie_slots,batch_slots,trie_peak,trie_mem_per_tok,batch_mem_per_tok");
  std::string row;
  std::getline(in, row);
  CHECK(std::count(row.begin(), row.end(), ',') == 7);
}

TEST_CASE("cli inspect: a 50,000-node chain prints bounded output, its middle elided and said so", "[cli]") {
  // 9ae4cdc: SIGSEGV (a recursive printer); at 20,000 nodes 401 MB of output.
  const fs::path d = scratch();
  const fs::path t = d / "chain.jsonl";
  {
    std::ofstream out(t);
    out << R"({"kind":"header","schema":"triescope.trace","version":2,"algorithm":"external"})" << "\n";
    out << R"({"kind":"step","step":0,"phase":"prefill","added":[)";
    for (int i = 0; i < 50000; ++i)
      out << (i ? "," : "") << R"({"id":)" << i << R"(,"parent":)" << i - 1 << R"(,"token":7,"depth":)" << i << R"(,"slot":)" << i
          << R"(,"logprob":0.0,"status":"live"})";
    out << "]}\n";
  }
  auto r = run("inspect " + t.string() + " --step 0");
  CHECK(r.code == 0);
  CHECK(r.out.size() < 200000);
  CHECK_THAT(r.out, Catch::Contains("... 49991 nodes of a single chain elided (nodes 5 to 49995, pos 5 to 49995) ..."));
  CHECK_THAT(r.out, Catch::Contains("[node 49999, pos 49999, slot 49999"));
  CHECK_THAT(r.out, Catch::Contains("slots 512-49999: not shown (49488 slots)"));
}

TEST_CASE("cli inspect: records out of step order exit 2 with the named error", "[cli]") {
  const fs::path d = scratch();
  const fs::path t = d / "order.jsonl";
  {
    std::ofstream out(t);
    out << R"({"kind":"header","schema":"triescope.trace","version":2,"algorithm":"external"})" << "\n"
        << R"({"kind":"step","step":0,"phase":"prefill","added":[{"id":0,"parent":-1,"token":1,"depth":0,"slot":0,"logprob":0.0,"status":"live"}]})"
        << "\n"
        << R"({"kind":"step","step":2,"phase":"forward"})" << "\n"
        << R"({"kind":"step","step":1,"phase":"forward"})" << "\n";
  }
  auto r = run("inspect " + t.string() + " --step 1");
  CHECK(r.code != 0);  // 9ae4cdc: exit 0, step 1 shown without its records
  CHECK_THAT(r.out, Catch::Contains(t.string() + ":4: a record of step 1 after records of step 2"));
}

TEST_CASE("cli run --out -: the trace on standard output, the report on standard error", "[cli]") {
  const std::string cmd = std::string(TRIESCOPE_BINARY_DIR) + "/app/triescope run " + kSamples +
                          "figure1_once_upon_a_time.json --out - 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  std::array<char, 4096> buf{};
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  CHECK(pclose(p) == 0);
  CHECK(out.rfind(R"({"algorithm":)", 0) == 0);  // the header first, no report text
  CHECK_THAT(out, Catch::Contains(R"("kind":"summary")"));
  CHECK_FALSE(fs::exists("-"));
}

TEST_CASE("cli check and inspect read a trace from a pipe", "[cli]") {
  const fs::path d = scratch();
  REQUIRE(run("run " + kSamples + "figure1_once_upon_a_time.json --quiet --out " + (d / "p.jsonl").string()).code == 0);
  auto c = run("check /dev/stdin < " + (d / "p.jsonl").string());
  CHECK(c.code == 0);
  auto i = run("inspect /dev/stdin --step 2 < " + (d / "p.jsonl").string());
  CHECK(i.code == 0);
  CHECK_THAT(i.out, Catch::Contains("garbage collection: 7 -> 6 slots"));
  const std::string fifo_cmd = "sh -c 'cat " + (d / "p.jsonl").string() + " | " + std::string(TRIESCOPE_BINARY_DIR) + "/app/triescope check /dev/stdin'";
  FILE* p = popen(fifo_cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::array<char, 4096> buf{};
  std::string out;
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  CHECK(pclose(p) == 0);
  CHECK_THAT(out, Catch::Contains("every mask row and position id follows the ancestor rule"));
}
