// TrieScope's version, in one place: `triescope --version` prints it,
// triescope.__version__ (python/bindings/module.cpp) is it, CMakeLists.txt's
// project() reads it, and so does the pip package's metadata (pyproject.toml,
// a regex on the #define line below: keep it one line, MAJOR.MINOR.PATCH).
#pragma once

#define TRIESCOPE_VERSION "0.1.0"
