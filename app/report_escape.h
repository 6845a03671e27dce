// Text from a trace (token strings, file names, field values) made safe for
// XML and HTML: a token can be "<script>" or hold a control byte that XML 1.0
// cannot carry even as a character reference. Both report writers
// (report_junit, report_html_page) escape through this one function.
#pragma once
#include <string>
#include <string_view>

namespace triescope::cli {

// & < > " ' as entities; a control character XML 1.0 forbids (below 0x20 but
// tab, newline, carriage return; and 0x7f) as the visible text "\xNN".
std::string markup_escape(std::string_view s);

// At most `max_chars` bytes of `s`, cut at a UTF-8 character boundary, with
// "..." appended when cut (labels in a figure).
std::string text_shorten(const std::string& s, size_t max_chars);

}  // namespace triescope::cli
