// `weft rdma responder`: answers RDMA probes (`weft ping rdma`, agents' engines) on one device and
// tells probers its QPN/qkey/GID over UDP discovery. See docs/rdma-probes.md.
#include <fmt/format.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "base/signals.hpp"
#include "cli/command_registry.hpp"
#include "cli/rdma_args.hpp"
#include "cli/rdma_probe_options.hpp"
#include "net/address.hpp"
#include "probe/rdma/discovery.hpp"
#include "probe/rdma/engine.hpp"

namespace {

using namespace weft;
using cli::add_rdma_options;
using cli::engine_config;
using cli::RdmaOpts;

probe::RdmaEngine* g_engine = nullptr;

struct ResponderArgs {
  RdmaOpts rdma;
  std::string device;
  std::string address;
  std::string discovery = "0.0.0.0:7779";
  double duration_s = 0;
  bool json = false;
};

int run_responder(const ResponderArgs& a) {
  auto cfg = engine_config(a.rdma, a.device, a.address);
  if (!cfg) {
    fmt::print(stderr, "weft rdma responder: {}\n", cfg.error().message);
    return 2;
  }
  cfg->qkey = a.rdma.qkey.value_or(probe::kDefaultRdmaQkey);
  auto engine = probe::RdmaEngine::create(*cfg);
  if (!engine) {
    fmt::print(stderr, "weft rdma responder: {}\n", engine.error().message);
    return 1;
  }
  std::unique_ptr<probe::rdma_discovery::Server> disc;
  if (a.discovery != "none") {
    auto hp = net::split_host_port(a.discovery, probe::rdma_discovery::kDefaultPort);
    if (!hp) {
      fmt::print(stderr, "weft rdma responder: --discovery: {}\n", hp.error().message);
      return 2;
    }
    auto s = probe::rdma_discovery::Server::start(hp->first, hp->second, (*engine)->address());
    if (!s) {
      fmt::print(stderr, "weft rdma responder: discovery: {}\n", s.error().message);
      return 1;
    }
    disc = std::move(*s);
  }
  fmt::print("RDMA responder on {}; timestamps {}{}; discovery {}\n", (*engine)->address().to_string(),
             probe::to_string((*engine)->timestamp_source()),
             (*engine)->timestamp_note().empty() ? "" : " (" + (*engine)->timestamp_note() + ")",
             disc ? fmt::format("udp port {}", disc->port()) : "off");
  std::fflush(stdout);
  g_engine = engine->get();
  on_stop_signal([] {
    if (g_engine) g_engine->stop();
  });
  // --duration: a thread that sleeps once until the end (or until the engine stops first), not
  // one that wakes every few ms: on a busy-polling responder each wake-up takes the CPU from
  // the polling thread (docs/rdma-probes.md).
  std::thread timer;
  std::mutex done_mu;
  std::condition_variable done_cv;
  bool done = false;
  if (a.duration_s > 0)
    timer = std::thread([&] {
      const auto end =
          std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                 std::chrono::duration<double>(a.duration_s));
      std::unique_lock lk(done_mu);
      done_cv.wait_until(lk, end, [&] { return done; });
      (*engine)->stop();
    });
  auto st = (*engine)->run([](probe::WindowStats&&) {});
  {
    std::lock_guard lk(done_mu);
    done = true;
  }
  done_cv.notify_all();
  if (timer.joinable()) timer.join();
  g_engine = nullptr;
  const auto c = (*engine)->counters();
  if (a.json) {
    nlohmann::json j = {{"pings_received", c.pings_received},
                        {"pongs_sent", c.pongs_sent},
                        {"followups_sent", c.followups_sent},
                        {"responder_drops", c.responder_drops},
                        {"garbage", c.garbage},
                        {"recv_errors", c.recv_errors},
                        {"send_errors", c.send_errors}};
    fmt::print("{}\n", j.dump());
  } else {
    fmt::print("{} pings answered ({} follow-ups), {} dropped, {} garbage datagrams\n", c.pongs_sent,
               c.followups_sent, c.responder_drops, c.garbage);
  }
  if (!st) {
    fmt::print(stderr, "weft rdma responder: {}\n", st.error().message);
    return 1;
  }
  return 0;
}

weft::cli::Registrar reg{[](weft::cli::Root& root) {
  auto a = std::make_shared<ResponderArgs>();
  auto* sub =
      root.rdma->add_subcommand("responder", "Answer RDMA probes (UD) on one device; prints its address");
  weft::cli::add_device_option(sub, a->device);
  sub->add_option("--address", a->address, "IPv4 address whose RoCE v2 GID to use");
  sub->add_option("--discovery", a->discovery, "UDP IP:PORT that tells probers the QPN/qkey/GID, or 'none'")
      ->capture_default_str();
  sub->add_option("--duration", a->duration_s, "Stop after this many seconds (default: until Ctrl-C)");
  sub->add_flag("--json", a->json, "Print the final counters as JSON");
  add_rdma_options(sub, a->rdma, false);
  sub->callback([a] { weft::cli::set_exit_code(run_responder(*a)); });
}};

}  // namespace
