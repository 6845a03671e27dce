#!/usr/bin/env python3
"""scripts/check_function_length.py on a planted tree: it must find each long
function (free, member, CUDA kernel, one with a long lambda inside) at its
first line with its exact length, and nothing else (braces in comments,
strings, raw strings, char literals and preprocessor lines do not count;
classes, namespaces, initializers and control blocks are no functions)."""
import os
import subprocess
import sys
import tempfile

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "check_function_length.py")


def body(n):
    """n lines of statements."""
    return "".join(f"  x += {i};\n" for i in range(n))


def main():
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "core"))
        src = (
            "#include <x>\n"                                              # 1
            "#define OPEN {\n"                                            # 2
            "namespace a {\n"                                             # 3
            "int fits(int x) {\n" + body(118) + "}\n"                     # 4..123: 120 lines
            "int too_long(int x) {\n" + body(119) + "}\n"                 # 124..244: 121 lines
            "struct S {\n"                                                # 245
            "  int method(int x) const {\n" + body(125) + "  }\n"         # 246..372: 127 lines
            "};\n"                                                        # 373
            "const char* s = \"{{{{\"; char c = '{'; const char* r = R\"x({)x\";\n"  # 374
            "// {{{{ a comment\n"                                         # 375
            "/* { */\n"                                                   # 376
            "int table[] = {\n" + "".join(f"  {i},\n" for i in range(200)) + "};\n"  # 377..578: an initializer
            "__global__ void kernel(float* p) {\n" + body(130) + "}\n"    # 579..710: 132 lines
            "void outer() {\n"                                            # 711
            "  auto f = [&](int y) {\n" + body(125) + "  };\n"            # a lambda inside counts
            "  if (true) {\n  }\n"
            "}\n"                                                         # 711..841: 131 lines
            "}  // namespace a\n"
        )
        with open(os.path.join(root, "core", "planted.cpp"), "w") as f:
            f.write(src)
        got = subprocess.run([sys.executable, SCRIPT, "--root", root, "--dirs", "core"], capture_output=True, text=True)
        want = [
            "core/planted.cpp:124: too_long is 121 lines (limit 120)",
            "core/planted.cpp:246: method is 127 lines (limit 120)",
            "core/planted.cpp:579: kernel is 132 lines (limit 120)",
            "core/planted.cpp:711: outer is 131 lines (limit 120)",
        ]
        lines = got.stdout.splitlines()
        ok = got.returncode == 1 and lines == want
        # Unbalanced braces are an error of their own (exit 2), never a pass.
        with open(os.path.join(root, "core", "broken.cpp"), "w") as f:
            f.write("void f() {\n")
        broken = subprocess.run([sys.executable, SCRIPT, "--root", root, "--dirs", "core"], capture_output=True, text=True)
        ok = ok and broken.returncode == 2 and "core/broken.cpp" in broken.stderr
        if not ok:
            print("want:\n  " + "\n  ".join(want))
            print(f"got (exit {got.returncode}):\n  " + "\n  ".join(lines) + "\n" + got.stderr)
            print(f"broken file: exit {broken.returncode}: {broken.stderr}")
            return 1
    print("function_length_selftest: the checker finds the 4 planted functions and nothing else")
    return 0


if __name__ == "__main__":
    sys.exit(main())
