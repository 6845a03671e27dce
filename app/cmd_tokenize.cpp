// triescope tokenize: our tokenizer.json BPE from the command line, to see how a
// prompt is cut and to check it against Hugging Face tokenizers
// (tests/peer/test_tokenizer_parity.py drives the --jsonl form).
#include <fstream>
#include <iostream>

#include "app/commands.h"
#include "core/config/json_reader.h"
#include "core/common/error.h"
#include "core/model/torch/bpe_tokenizer.h"
#include "core/model/torch/unicode_class.h"

namespace triescope::cli {

namespace {
std::vector<int32_t> ids_of(const nlohmann::json& j) {
  TS_CHECK(j.is_array(), "expected an array of ids, got " << j.dump());
  std::vector<int32_t> ids;
  for (const auto& v : j) {
    TS_CHECK(v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() <= INT32_MAX, "ids must be non-negative integers, got " << v.dump());
    ids.push_back(v.get<int32_t>());
  }
  return ids;
}

// Each line: a JSON string (printed back as its ids; with the post_processor's
// special tokens when `add_special`), an array of ids or
// {"decode": [ids], "skip_special_tokens": bool} (printed back as the decoded
// text, a JSON string); blank lines are skipped.
void run_jsonl(const BpeTokenizer& tok, const std::string& path, bool skip_special, bool add_special) {
  std::ifstream in(path, std::ios::binary);
  TS_CHECK(in, path << ": cannot open");
  std::string line;
  for (size_t n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + ":" + std::to_string(n);
    // The one depth-limited reader: errors name path:line:column.
    const nlohmann::json j = json_parse_text(line, path, n);
    try {
      if (j.is_string()) {
        std::cout << nlohmann::json(tok.encode(j.get<std::string>(), add_special)).dump() << "\n";
      } else if (j.is_object()) {
        TS_CHECK(j.contains("decode"), "an object line needs \"decode\": [ids]");
        const bool skip = j.value("skip_special_tokens", skip_special);
        std::cout << nlohmann::json(tok.decode(ids_of(j["decode"]), skip)).dump() << "\n";
      } else {
        std::cout << nlohmann::json(tok.decode(ids_of(j), skip_special)).dump() << "\n";
      }
    } catch (const Error& e) {
      TS_FAIL(where << ": " << e.what());
    } catch (const nlohmann::json::exception& e) {
      TS_FAIL(where << ": " << e.what());
    }
  }
}
}  // namespace

int cmd_tokenize(const Args& args) {
  auto p = parse_args(args, {"decode", "jsonl"}, {"skip-special", "add-special-tokens"});
  TS_CHECK(p.positional.size() == 1 || p.positional.size() == 2,
           "tokenize: expected <tokenizer.json> [TEXT], got " << p.positional.size() << " arguments");
  const BpeTokenizer tok = BpeTokenizer::load(p.positional[0]);
  const bool skip_special = p.has("skip-special");
  const bool add_special = p.has("add-special-tokens");
  const int modes = (p.positional.size() == 2) + p.has("decode") + p.has("jsonl");
  TS_CHECK(modes <= 1, "tokenize: give one of TEXT, --decode IDS, --jsonl FILE");
  if (p.positional.size() == 2) {
    const std::vector<int32_t> ids = tok.encode(p.positional[1], add_special);
    nlohmann::json tokens = nlohmann::json::array();
    for (int32_t id : ids) tokens.push_back(tok.token_display(id));
    std::cout << nlohmann::json{{"ids", ids}, {"tokens", tokens}}.dump() << "\n";
  } else if (p.has("decode")) {
    std::cout << tok.decode(token_ids_parse(p.get("decode"), "tokenize: --decode:"), skip_special) << "\n";
  } else if (p.has("jsonl")) {
    run_jsonl(tok, p.get("jsonl"), skip_special, add_special);
  } else {
    std::cout << p.positional[0] << ": byte-level BPE, " << tok.vocab_size() << " ids, normalizer " << tok.normalizer() << ", pre-tokenizer " << tok.pretokenizer()
              << ", post-processor " << tok.post_processor()
              << " (Unicode " << unicode_class_version() << " classes)\n";
  }
  return 0;
}

}  // namespace triescope::cli
