"""What every tools/gen_*.py does with the text it renders: write it to its
file, or with --check exit 1 when the committed file differs."""
import pathlib
import sys
import unicodedata


def write_or_check(out: pathlib.Path, text: str, generator: str) -> int:
    if "--check" in sys.argv[1:]:
        if not out.exists() or out.read_text() != text:
            print(f"{out} differs from what {generator} generates "
                  f"(Unicode {unicodedata.unidata_version}): regenerate it", file=sys.stderr)
            return 1
        return 0
    out.write_text(text)
    print(f"wrote {out} (Unicode {unicodedata.unidata_version})")
    return 0
