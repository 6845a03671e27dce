// Runs the Catch2 session over the command line (catch_session.cpp).
#pragma once

int catch_session_run(int argc, char** argv);
