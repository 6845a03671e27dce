// Catch2's implementation, compiled once for every test executable. Its
// single header declares Catch::Session only where it compiles the
// implementation, so the mains with work of their own (gui/gui_main.cpp,
// cuda/cuda_test_main.cpp, the CUDA torch test) call catch_session_run
// instead. One copy instead of nine cut about 200 CPU-seconds from a clean
// build (the ASan copy alone took 88 s).
#define CATCH_CONFIG_RUNNER
// The console reporter's width. At Catch2 v2.13.10's default of 80, a failing
// test whose name has ": " past about column 80 aborts the reporter
// (std::out_of_range from its name wrapping), so the failure's message is
// lost; the suite's names run to 117 characters.
#define CATCH_CONFIG_CONSOLE_WIDTH 160
#include <catch2/catch.hpp>

#include "catch_session.h"

int catch_session_run(int argc, char** argv) { return Catch::Session().run(argc, argv); }
