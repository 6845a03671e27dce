#include "app/commands.h"

int main(int argc, char** argv) { return triescope::cli::cli_main(argc, argv); }
