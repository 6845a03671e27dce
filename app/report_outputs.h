// The report files of `check` and `diff` (--junit FILE, --html FILE), under
// the project's output-file rules (core/common/output_file.h): opened before
// any trace is read, so a bad path is refused by name before the work;
// written through a temporary renamed into place once the result is known,
// whatever the result: a failing check is what a report is for. Writing a
// report never changes the command's exit code; failing to write one is an
// error naming the file (exit 2).
#pragma once
#include <memory>
#include <string>

#include "app/commands.h"
#include "core/common/output_file.h"

namespace triescope::cli {

class ReportOutputs {
 public:
  // `command`: "check" or "diff", for messages.
  ReportOutputs(const ParsedArgs& p, const std::string& command);
  bool junit() const { return junit_ != nullptr; }
  bool html() const { return html_ != nullptr; }
  void write_junit(const std::string& xml);
  void write_html(const std::string& page);
  // The input could not be read (the command exits 2): a JUnit <error> and a
  // page saying so, so CI shows why instead of a missing file.
  void write_error(const std::string& case_name, const std::string& classname, const std::string& message, double seconds);

 private:
  std::unique_ptr<OutputFile> junit_, html_;
  std::string command_;
};

}  // namespace triescope::cli
