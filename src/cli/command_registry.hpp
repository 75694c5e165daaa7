#pragma once
// Subcommands register themselves from their own translation unit:
//
//   static weft::cli::Registrar reg{[](weft::cli::Root& root) {
//     auto* sub = root.app.add_subcommand("ping", "...");
//     sub->callback([] { weft::cli::set_exit_code(run_ping()); });
//   }};
//
// `root.bench` and `root.rdma` are the parent commands for `weft bench X` and `weft rdma X`.
#include <CLI/CLI.hpp>
#include <functional>

namespace weft::cli {

struct Root {
  CLI::App& app;
  CLI::App* bench;
  CLI::App* rdma;
};

using RegisterFn = std::function<void(Root&)>;

struct Registrar {
  explicit Registrar(RegisterFn fn);
};

void register_all(Root& root);

// The exit status of the command that ran (0 unless a command sets it).
void set_exit_code(int code);
int exit_code();

}  // namespace weft::cli
