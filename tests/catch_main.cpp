// The plain Catch2 main (the implementation is catch_session.cpp).
#include "catch_session.h"

int main(int argc, char** argv) { return catch_session_run(argc, argv); }
