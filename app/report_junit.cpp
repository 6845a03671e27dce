#include "app/report_junit.h"

#include <cstdio>
#include <sstream>

#include "app/report_escape.h"

namespace triescope::cli {

namespace {
std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", s < 0 ? 0.0 : s);
  return buf;
}

void write_fault(std::ostringstream& os, const char* element, const JunitFailure& f) {
  os << "      <" << element << " type=\"" << markup_escape(f.type) << "\" message=\"" << markup_escape(f.message) << "\">"
     << markup_escape(f.text) << "</" << element << ">\n";
}
}  // namespace

std::string junit_xml(const std::string& suite, const std::vector<JunitCase>& cases) {
  size_t failed = 0, errors = 0;
  double total = 0;
  for (const JunitCase& c : cases) {
    if (c.error) ++errors;
    else if (!c.failures.empty()) ++failed;
    total += c.seconds;
  }
  const std::string counts = "tests=\"" + std::to_string(cases.size()) + "\" failures=\"" + std::to_string(failed) + "\" errors=\"" +
                             std::to_string(errors) + "\" time=\"" + seconds_text(total) + "\"";
  std::ostringstream os;
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  os << "<testsuites name=\"" << markup_escape(suite) << "\" " << counts << ">\n";
  os << "  <testsuite name=\"" << markup_escape(suite) << "\" " << counts << " skipped=\"0\">\n";
  for (const JunitCase& c : cases) {
    os << "    <testcase name=\"" << markup_escape(c.name) << "\" classname=\"" << markup_escape(c.classname) << "\" time=\""
       << seconds_text(c.seconds) << "\">\n";
    if (c.error) write_fault(os, "error", *c.error);
    for (const JunitFailure& f : c.failures) write_fault(os, "failure", f);
    if (!c.system_out.empty()) os << "      <system-out>" << markup_escape(c.system_out) << "</system-out>\n";
    os << "    </testcase>\n";
  }
  os << "  </testsuite>\n</testsuites>\n";
  return os.str();
}

}  // namespace triescope::cli
