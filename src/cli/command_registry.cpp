#include "cli/command_registry.hpp"

#include <vector>

namespace weft::cli {

namespace {
std::vector<RegisterFn>& registry() {
  static std::vector<RegisterFn> fns;
  return fns;
}
int g_exit_code = 0;
}  // namespace

Registrar::Registrar(RegisterFn fn) { registry().push_back(std::move(fn)); }

void register_all(Root& root) {
  for (auto& fn : registry()) fn(root);
}

void set_exit_code(int code) { g_exit_code = code; }
int exit_code() { return g_exit_code; }

}  // namespace weft::cli
