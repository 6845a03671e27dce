#include "app/report_outputs.h"

#include "app/report_escape.h"
#include "app/report_html_page.h"
#include "app/report_junit.h"
#include "core/common/error.h"

namespace triescope::cli {

namespace {
std::unique_ptr<OutputFile> open_report(const ParsedArgs& p, const std::string& option, const std::string& command) {
  if (!p.has(option)) return nullptr;
  const std::string path = p.get(option);
  TS_CHECK(!path.empty(), command << ": --" << option << " needs a file name");
  // Standard output carries the command's text result; a report mixed into it would be neither.
  TS_CHECK(path != "-", command << ": --" << option << " -: a report is written to a file, not to standard output");
  return std::make_unique<OutputFile>(path);
}
}  // namespace

ReportOutputs::ReportOutputs(const ParsedArgs& p, const std::string& command) : command_(command) {
  if (p.has("junit") && p.has("html"))
    TS_CHECK(p.get("junit") != p.get("html"), command << ": --junit and --html name the same file '" << p.get("junit") << "'");
  junit_ = open_report(p, "junit", command);
  html_ = open_report(p, "html", command);
}

void ReportOutputs::write_junit(const std::string& xml) {
  if (!junit_) return;
  junit_->write(xml);
  junit_->commit();
}

void ReportOutputs::write_html(const std::string& page) {
  if (!html_) return;
  html_->write(page);
  html_->commit();
}

void ReportOutputs::write_error(const std::string& case_name, const std::string& classname, const std::string& message, double seconds) {
  JunitCase c;
  c.name = case_name;
  c.classname = classname;
  c.seconds = seconds;
  c.error = JunitFailure{"bad_input", message, message};
  write_junit(junit_xml("triescope " + command_, {c}));
  write_html(html_page("triescope " + command_ + ": " + case_name, {false, "error: the input could not be read"}, 
                       "<table class=\"summary\"><tr><td>input</td><td>" + markup_escape(case_name) + "</td></tr></table>\n",
                       "<h2>Error</h2><pre id=\"error\">" + markup_escape(message) + "</pre>\n"));
}

}  // namespace triescope::cli
