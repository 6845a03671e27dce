// JUnit XML, the test report every CI system reads (Jenkins, GitLab, GitHub
// Actions reporters): <testsuites> / <testsuite> / <testcase> with one
// <failure message type> per fault found, an <error> when the input could
// not be read. tests/app/junit.xsd is the schema the tests validate it with
// (the structure of Jenkins' junit-10.xsd, counts and times typed).
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace triescope::cli {

struct JunitFailure {
  std::string type;     // short kind, e.g. "missing_ancestor" or "divergence"
  std::string message;  // one line naming step, pass and node
  std::string text;     // the element's body: details, may be multi-line
};

struct JunitCase {
  std::string name;       // the trace (check) or the pair of traces (diff)
  std::string classname;  // "triescope.check.<algorithm>", "triescope.diff"
  double seconds = 0;
  std::vector<JunitFailure> failures;
  std::optional<JunitFailure> error;  // the trace could not be read (exit 2)
  std::string system_out;             // the command's text result
};

// The whole document: one <testsuite> named `suite` holding `cases`, inside
// <testsuites>; tests/failures/errors count test cases, as CI systems do.
std::string junit_xml(const std::string& suite, const std::vector<JunitCase>& cases);

}  // namespace triescope::cli
