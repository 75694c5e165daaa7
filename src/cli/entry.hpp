#pragma once
// The shared body of `weft` (main.cpp) and the lean `weft-probe` (probe_main.cpp): the global
// options (--log-level, --version), the subcommands linked into the executable, and the exit code.
namespace weft::cli {

// `groups`: add the `bench` and `rdma` parent commands (only `weft` has commands under them).
int run_program(const char* program, const char* description, bool groups, int argc, char** argv);

}  // namespace weft::cli
