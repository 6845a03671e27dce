#!/usr/bin/env python3
"""`triescope check` and `diff` with --junit and --html (app/report_*.cpp) on
planted faults in real traces: exit codes unchanged, JUnit XML whose
structure and counts CI systems read, failures naming step, pass and node,
self-contained HTML with every trace string escaped, bad report paths named.

usage: test_reports.py TRIESCOPE SOURCE_DIR WORK_DIR
WORK_DIR keeps the reports for test_reports_schema.py and test_reports_browser.py
(ctest fixture app_report_files): check.{xml,html} (planted violation),
diff.{xml,html} (planted divergence), clean.*, same.*, markup.*, bad.*.
"""
import pathlib
import re
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from report_fixtures import Fixtures, run  # noqa: E402

TS, SRC, WORK = sys.argv[1:4]
fx = Fixtures(TS, SRC, WORK)
W = pathlib.Path(WORK)


def junit_case(path):
    """The one <testcase> of a report, after checking the document's shape and counts."""
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites", root.tag
    suites = root.findall("testsuite")
    assert len(suites) == 1
    cases = suites[0].findall("testcase")
    assert len(cases) == 1
    case = cases[0]
    failed = 1 if case.findall("failure") and not case.findall("error") else 0
    errors = len(case.findall("error"))
    for el in (root, suites[0]):
        assert el.get("tests") == "1" and el.get("failures") == str(failed) and el.get("errors") == str(errors), el.attrib
        float(el.get("time"))
    assert case.get("name") and case.get("classname"), case.attrib
    for f in case.findall("failure") + case.findall("error"):
        assert f.get("message") and f.get("type"), f.attrib
    return case


def assert_self_contained(html):
    # No script, no stylesheet or image fetched, no link out (the SVG namespace is a name, not a request).
    assert "<script" not in html.lower()
    assert not re.search(r'\b(src|href)\s*=\s*"(?!#)', html), re.search(r'\b(src|href)\s*=\s*"(?!#)[^"]*', html)
    assert "url(" not in html and "@import" not in html


def test_check_violation():
    trace, want = fx.planted_violation()
    xml, html = W / "check.xml", W / "check.html"
    r = run([TS, "check", trace, "--junit", xml, "--html", html])
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    case = junit_case(xml)
    (failure,) = case.findall("failure")
    msg = failure.get("message")
    for part in (f"step {want['step']}", f"pass {want['pass']}", f"node {want['node']}", f"slot {want['slot']}"):
        assert part in msg, (part, msg)
    assert failure.get("type") == "sees_sibling", failure.attrib
    page = html.read_text()
    assert_self_contained(page)
    assert f'id="step-{want["step"]}"' in page and f"node {want['node']}" in page
    assert 'class="on wrong"' in page, "the wrongly set cell is marked"
    assert "<svg" in page and "&quot;added&quot;" in page, "tree and raw records shown"


def test_check_clean():
    xml, html = W / "clean.xml", W / "clean.html"
    r = run([TS, "check", fx.base_trace(), "--junit", xml, "--html", html])
    assert r.returncode == 0, r.stderr
    case = junit_case(xml)
    assert not case.findall("failure")
    page = html.read_text()
    assert 'id="clean"' in page and "clean: every mask row" in page and "trie_beam_search" in page


def test_diff_divergence():
    golden, planted, want = fx.planted_divergence()
    xml, html = W / "diff.xml", W / "diff.html"
    r = run([TS, "diff", golden, planted, "--junit", xml, "--html", html])
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    (failure,) = junit_case(xml).findall("failure")
    msg = failure.get("message")
    for part in (f"step {want['step']}", f"pass {want['pass']}", f"node {want['node']}", f"row {want['row']}"):
        assert part in msg, (part, msg)
    page = html.read_text()
    assert_self_contained(page)
    assert f"First divergence: step {want['step']}, node {want['node']}" in page
    assert page.count('differ"') + page.count("differ ") >= 1 and 'class="on differ"' in page
    # Equivalent traces: a clean diff report.
    r = run([TS, "diff", golden, golden, "--junit", W / "same.xml", "--html", W / "same.html"])
    assert r.returncode == 0 and not junit_case(W / "same.xml").findall("failure")
    assert 'id="clean"' in (W / "same.html").read_text()


def test_markup_in_trace_is_escaped():
    evil = "\x01<script>alert('x')</script>&<b>"  # \x01: no XML 1.0 document may hold it, even as &#1;
    trace, want = fx.planted_violation(token_text=evil)
    xml, html = W / "markup.xml", W / "markup.html"
    assert run([TS, "check", trace, "--junit", xml, "--html", html]).returncode == 1
    page = html.read_text()
    assert_self_contained(page)
    assert "<b>" not in page and evil not in page
    assert "\x01" not in page and "\\x01&lt;script&gt;al" in page  # the token's label, shown as text
    assert "\\u0001&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&lt;b&gt;" in page  # ... and in the raw records
    junit_case(xml)  # still well-formed XML
    # A diff against the clean trace (the vocabulary is provenance, the planted bit is not): B's strings escaped too.
    r = run([TS, "diff", fx.base_trace(), trace, "--html", W / "markup_diff.html"])
    assert r.returncode == 1, r.stdout
    page = (W / "markup_diff.html").read_text()
    assert_self_contained(page)
    assert "<b>" not in page and "&lt;script&gt;" in page


def test_bad_report_paths():
    trace, _ = fx.planted_violation()
    missing = W / "no_such_dir" / "r.xml"
    r = run([TS, "check", trace, "--junit", missing])
    assert r.returncode == 2 and str(missing) in r.stderr, (r.returncode, r.stderr)
    assert r.stdout == "", "refused before the trace is read"
    r = run([TS, "diff", trace, trace, "--html", W])  # a directory
    assert r.returncode == 2 and str(W) in r.stderr, r.stderr
    r = run([TS, "check", trace, "--junit", "-"])
    assert r.returncode == 2 and "--junit -" in r.stderr, r.stderr
    r = run([TS, "check", trace, "--junit", W / "same", "--html", W / "same"])
    assert r.returncode == 2 and "same file" in r.stderr, r.stderr
    assert not list(W.glob("*.triescope-tmp.*")), "no temporary left"


def test_unreadable_trace_reports_an_error():
    bad = W / "bad.jsonl"
    bad.write_text('{"kind":"header","schema":"triescope.trace","version":99}\n')
    xml, html = W / "bad.xml", W / "bad.html"
    r = run([TS, "check", bad, "--junit", xml, "--html", html])
    assert r.returncode == 2, (r.returncode, r.stderr)
    (error,) = junit_case(xml).findall("error")
    assert "version" in error.get("message"), error.attrib
    assert 'id="error"' in html.read_text()


if __name__ == "__main__":
    tests = [v for k, v in sorted(globals().items()) if k.startswith("test_")]
    failed = 0
    for t in tests:
        try:
            t()
            print(f"PASS {t.__name__}")
        except AssertionError as e:
            failed += 1
            print(f"FAIL {t.__name__}: {e!r}")
    sys.exit(1 if failed else 0)
