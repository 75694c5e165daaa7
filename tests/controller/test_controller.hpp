#pragma once
// A controller for the controller tests, started on a free loopback port (kept apart from
// tests/lib/test_util.hpp, which tests of other modules include too).
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "controller/controller.hpp"

namespace weft::controller::testing {

// A controller with `store`, one token and one group `all` of every agent on `protocols`, listening on
// a free port of 127.0.0.1 (bound_ports().at(0)); `extra_yaml` adds top-level keys. nullptr (and a
// test failure) if the config or the start fails. `token` is a shared agent token (shared_tokens:
// true: these tests are about other things than identity, controller/auth.hpp); the admin token is
// `token + "-admin"`.
inline std::unique_ptr<Controller> start_test_controller(const std::string& store, const std::string& token,
                                                         const std::string& protocols = "udp",
                                                         const std::string& extra_yaml = "") {
  auto cfg = parse_config("store: " + store + "\ntokens: [" + token +
                              "]\nshared_tokens: true\nadmin_tokens: [" + token + "-admin]\n" + extra_yaml +
                              "groups:\n  - {name: all, protocols: [" + protocols + "], members: ['*']}\n",
                          "<test>");
  EXPECT_TRUE(cfg) << cfg.error().message;
  if (!cfg) return nullptr;
  cfg->listen = {"127.0.0.1:0"};  // the config wants a port; the controller takes any free one
  auto c = std::make_unique<Controller>();
  auto st = c->start(*cfg);
  EXPECT_TRUE(st) << st.error().message;
  return st ? std::move(c) : nullptr;
}

}  // namespace weft::controller::testing
