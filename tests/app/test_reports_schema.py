#!/usr/bin/env python3
"""The JUnit XML that test_reports.py made with `check --junit` and
`diff --junit` (planted violation, a token holding markup and a control
byte, clean, unreadable input, planted divergence, equivalent traces)
validated against tests/app/junit.xsd with lxml (Debian's python3-lxml); a
document the schema must refuse is refused, so the validation itself is
tested. Exit 77 (skipped) without lxml; scripts/install-deps.sh installs it,
so CI runs it.

usage: test_reports_schema.py REPORTS_DIR  (test_reports.py's WORK_DIR)
"""
import pathlib
import sys

try:
    from lxml import etree
except ImportError:
    print("SKIP: python3-lxml is not installed (scripts/install-deps.sh installs it)")
    sys.exit(77)

REPORTS = pathlib.Path(sys.argv[1])
schema = etree.XMLSchema(etree.parse(str(pathlib.Path(__file__).parent / "junit.xsd")))
failed = 0
for name in ("check", "clean", "markup", "bad", "diff", "same"):
    xml = REPORTS / f"{name}.xml"
    ok = xml.exists() and schema.validate(etree.parse(str(xml)))
    print(("PASS" if ok else "FAIL"), xml, "" if ok or not xml.exists() else schema.error_log)
    failed += not ok

# The schema has teeth: a failure without its message, a count that is no number.
doc = etree.parse(str(REPORTS / "check.xml"))
doc.find(".//failure").attrib.pop("message")
refused_message = not schema.validate(doc)
doc = etree.parse(str(REPORTS / "check.xml"))
doc.getroot().set("failures", "one")
refused_count = not schema.validate(doc)
print(("PASS" if refused_message and refused_count else "FAIL"), "schema refuses a planted bad document")
failed += not (refused_message and refused_count)
sys.exit(1 if failed else 0)
