// triescope subcommands; each returns the process exit code.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace triescope::cli {

using Args = std::vector<std::string>;
// The whole CLI (app/main.cpp calls it; tests run it in-process): registers
// the backends this build has, runs argv[1]'s command, maps errors to exit
// codes (2: bad input, 3: internal error).
int cli_main(int argc, char** argv);
void register_backends();   // idempotent
std::string backend_names_bar();  // "cpu|cuda-emu"
int cmd_run(const Args& args);
int cmd_diff(const Args& args);
int cmd_inspect(const Args& args);
int cmd_check(const Args& args);  // exit 1 when a mask row or position id breaks its rule
int cmd_simulate(const Args& args);
int cmd_constraint(const Args& args);
int cmd_make_checkpoint(const Args& args);  // only in builds with LibTorch
int cmd_convert_checkpoint(const Args& args);  // only in builds with LibTorch
int cmd_logits(const Args& args);           // only in builds with LibTorch
int cmd_tokenize(const Args& args);         // only in builds with LibTorch

// Small argument helper: "--name value" pairs and positionals.
struct ParsedArgs {
  std::vector<std::string> positional;
  std::vector<std::pair<std::string, std::string>> options;  // name without dashes -> value ("" for flags)
  bool has(const std::string& name) const;
  std::string get(const std::string& name, const std::string& dflt = "") const;
  // An integer option in [lo, hi] (dflt when absent); anything else is an Error naming it.
  int64_t get_int(const std::string& name, int64_t lo, int64_t hi, int64_t dflt) const;
};
// The integer that is the whole of `s` ("12", "-3"; not "", "1x" or one
// beyond int64), nullopt for anything else.
std::optional<int64_t> integer_parse(const std::string& s);
// The token ids in `text`, separated by white space ("3 17 4"); a word that is
// not an integer in [0, INT32_MAX] is an Error: `<what> "<word>" is not a token id`.
std::vector<int32_t> token_ids_parse(const std::string& text, const std::string& what);
// --dtype of `command` (run, logits): "fp32" or "bf16" (or the names they
// stand for) as a transformer's "dtype", "float32" or "bfloat16"; anything
// else is an Error naming the command and the value.
std::string dtype_option_parse(const std::string& command, const std::string& value);
// `flags` lists options that take no value. Throws Error on an unknown option.
ParsedArgs parse_args(const Args& args, const std::vector<std::string>& valued, const std::vector<std::string>& flags);

}  // namespace triescope::cli
