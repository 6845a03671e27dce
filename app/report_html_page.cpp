#include "app/report_html_page.h"

#include <sstream>

#include "app/report_escape.h"

namespace triescope::cli {

namespace {
// The inspector's colours (gui/step_colors.h): mask allowed blue, masked
// out pale grey, a rule violation red, a divergence magenta; node status
// colours are in report_tree_svg.cpp.
constexpr const char* kCss = R"css(
body{font:14px/1.4 system-ui,sans-serif;margin:20px;color:#1a1a1a;background:#fafafa}
h1{font-size:20px;margin:0 0 8px} h2{font-size:17px;margin:24px 0 6px;border-bottom:1px solid #ccc}
h3{font-size:15px;margin:14px 0 4px}
.verdict{display:inline-block;padding:4px 10px;border-radius:4px;font-weight:600;margin:4px 0 10px}
.ok{background:#d7f5dc;color:#11621f} .bad{background:#ffd9d6;color:#a40e0e}
table.summary td,table.summary th{padding:1px 14px 1px 0;vertical-align:top;text-align:left} table.summary td:first-child{color:#555;white-space:nowrap}
table.summary td{max-width:600px;overflow-wrap:anywhere}
table.list{border-collapse:collapse;margin:4px 0} table.list td,table.list th{border:1px solid #ccc;padding:2px 6px;text-align:left}
.side{display:flex;gap:28px;flex-wrap:wrap;align-items:flex-start}
table.mask{border-collapse:collapse;font:10px monospace}
table.mask td{width:14px;height:14px;padding:0;border:1px solid #e4e4e4;text-align:center}
table.mask td.lbl{width:auto;padding:0 6px 0 0;border:none;text-align:right;white-space:nowrap}
table.mask th{font-weight:normal;color:#777;height:12px;padding:0}
table.mask tr.focus td.lbl{font-weight:700;color:#a40e0e}
td.on{background:#2154aa} td.off{background:#f0f0f3} td.none{background:repeating-linear-gradient(45deg,#eee,#eee 2px,#fff 2px,#fff 4px)}
td.wrong{outline:2px solid #d71414;outline-offset:-2px} td.on.wrong{background:#d71414} td.off.wrong{background:#ffb3b3}
td.differ{outline:2px solid #dc008c;outline-offset:-2px} td.on.differ{background:#dc008c} td.off.differ{background:#ffc2e6}
.caption{color:#666;font-size:12px;margin:2px 0 6px}
table.strip{border-collapse:collapse;font:12px monospace;margin:2px 0 8px}
table.strip td,table.strip th{border:1px solid #ccc;padding:1px 5px;text-align:center}
table.strip th{background:#f0f0f0;font-weight:normal}
td.mark{background:#ffb3b3;font-weight:700} td.free{color:#aaa}
pre{background:#fff;border:1px solid #ddd;padding:6px;overflow:auto;max-height:420px;font-size:12px}
.legend span{display:inline-block;width:12px;height:12px;vertical-align:middle;margin:0 3px 0 10px;border:1px solid #ccc}
svg text{font:12px system-ui,sans-serif}
)css";
}  // namespace

std::string html_page(const std::string& title, const HtmlVerdict& verdict, const std::string& summary, const std::string& body) {
  std::ostringstream os;
  os << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
     // No request leaves the page, whatever a trace holds.
     << "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n"
     << "<title>" << markup_escape(title) << "</title>\n<style>" << kCss << "</style></head>\n<body>\n";
  os << "<h1>" << markup_escape(title) << "</h1>\n";
  os << "<div class=\"verdict " << (verdict.ok ? "ok" : "bad") << "\" id=\"verdict\">" << markup_escape(verdict.text) << "</div>\n";
  os << summary << body << "\n</body></html>\n";
  return os.str();
}

}  // namespace triescope::cli
