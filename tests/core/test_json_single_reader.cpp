// Every JSON input goes through the one depth-limited reader
// (core/config/json_reader.h): a scan of the product's sources for any other
// way into nlohmann's parser. 9ae4cdc had three (tokenize --jsonl, logits
// --prompts, convert-checkpoint's config.json); the first two segfaulted on a
// 100,000-deep array.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <regex>

namespace fs = std::filesystem;

TEST_CASE("no JSON is parsed outside core/config/json_reader.cpp", "[config]") {
  // parse, accept, sax_parse, operator>> into a json, the binary formats.
  const std::regex entry(R"((json|nlohmann::json)\s*::\s*(parse|accept|sax_parse|from_cbor|from_msgpack|from_ubjson|from_bson|from_bjdata)\s*\(|>>\s*\w*json\w*\s*;|\bjson\s+\w+\s*=\s*\w*\.\s*get<json>)");
  const fs::path root = TRIESCOPE_SOURCE_DIR;
  std::vector<std::string> found;
  size_t files = 0;
  for (const char* dir : {"core", "app", "gui", "python", "tools", "cuda", "bench"}) {
    if (!fs::exists(root / dir)) continue;
    for (const auto& e : fs::recursive_directory_iterator(root / dir)) {
      const std::string ext = e.path().extension().string();
      if (!e.is_regular_file() || (ext != ".cpp" && ext != ".h" && ext != ".cu" && ext != ".cuh")) continue;
      if (e.path() == root / "core/config/json_reader.cpp") continue;
      ++files;
      std::ifstream in(e.path());
      std::string line;
      for (int n = 1; std::getline(in, line); ++n)
        if (std::regex_search(line, entry)) found.push_back(fs::relative(e.path(), root).string() + ":" + std::to_string(n) + ": " + line);
    }
  }
  INFO("JSON parsed outside json_parse_text / json_load_file:\n" << [&] {
    std::string s;
    for (auto& f : found) s += f + "\n";
    return s;
  }());
  CHECK(files > 100);
  CHECK(found.empty());
  // The scan finds what it looks for.
  CHECK(std::regex_search(std::string("  j = nlohmann::json::parse(line);"), entry));
  CHECK(std::regex_search(std::string("auto x = json::sax_parse (a, b, &h);"), entry));
  CHECK(std::regex_search(std::string("  in >> json_value;"), entry));
}
