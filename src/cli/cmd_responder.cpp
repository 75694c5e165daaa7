// `weft responder`: answers UDP and TCP probes until SIGINT/SIGTERM.
#include <fmt/format.h>

#include <chrono>
#include <memory>

#include "base/log.hpp"
#include "base/signals.hpp"
#include "cli/command_registry.hpp"
#include "cli/hw_timestamps.hpp"
#include "probe/ip/responder.hpp"

namespace {

weft::probe::Responder* g_responder = nullptr;

int run_responder(const weft::probe::ResponderConfig& cfg, const std::string& hw_interface) {
  if (!hw_interface.empty() && !weft::cli::enable_hw_timestamps(std::span(&hw_interface, 1), "responder"))
    return 1;
  auto r = weft::probe::Responder::create(cfg);
  if (!r) {
    weft::log().error("{}", r.error().message);
    return 1;
  }
  g_responder = r->get();
  weft::on_stop_signal([] {
    if (g_responder) g_responder->stop();
  });
  weft::log().info("responder: udp {}:{} tcp {}:{}", cfg.listen_address, (*r)->udp_port(), cfg.listen_address,
                   (*r)->tcp_port());
  auto st = (*r)->run();
  const auto c = (*r)->counters();
  g_responder = nullptr;
  weft::log().info(
      "responder: answered {}, follow-ups {}, without follow-up (behind) {}, without follow-up (no send "
      "stamp in "
      "time) {}, malformed {}, tcp accepted {}, wake-ups {} ({} streaming)",
      c.answered, c.followups, c.shed, c.unstamped, c.malformed, c.tcp_accepted, c.wakeups,
      c.streaming_wakeups);
  if (!st) {
    weft::log().error("{}", st.error().message);
    return 1;
  }
  return 0;
}

weft::cli::Registrar reg{[](weft::cli::Root& root) {
  auto cfg = std::make_shared<weft::probe::ResponderConfig>();
  auto* sub = root.app.add_subcommand("responder", "Answer UDP and TCP probes (runs until Ctrl-C)");
  sub->add_option("--listen", cfg->listen_address, "Address to listen on (IPv4 or IPv6; :: serves both)")
      ->capture_default_str();
  sub->add_option("--udp-port", cfg->udp_port, "UDP port")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  sub->add_option("--tcp-port", cfg->tcp_port, "TCP port")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  sub->add_flag("--no-udp{false}", cfg->serve_udp, "Do not serve UDP");
  sub->add_flag("--no-tcp{false}", cfg->serve_tcp, "Do not serve TCP");
  sub->add_flag("--no-followups{false}", cfg->followups,
                "Do not send follow-ups with the kernel send time (cheaper; less exact responder delay)");
  auto coalesce_us = std::make_shared<int64_t>(cfg->coalesce.count() / 1000);
  sub->add_option("--coalesce-us", *coalesce_us,
                  "Shortest wait after a wake-up before the next, under heavy load (0 = off)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{100'000}));
  auto max_coalesce_us = std::make_shared<int64_t>(cfg->max_coalesce.count() / 1000);
  sub->add_option("--max-hold-us,--max-coalesce-us", *max_coalesce_us,
                  "Wait between wake-ups unless heavily loaded: the longest a probe is held before its "
                  "answer, in every responder delay and rtt_incl_responder_delay (kernel timestamps "
                  "keep it out of the network RTT)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{100'000}));
  auto hw_interface = std::make_shared<std::string>();
  sub->add_option(
      "--hw-timestamps", *hw_interface,
      "Switch this interface's NIC hardware timestamps on first (root; left alone if already on)");
  sub->callback([cfg, coalesce_us, max_coalesce_us, hw_interface] {
    cfg->coalesce = std::chrono::microseconds(*coalesce_us);
    cfg->max_coalesce = std::chrono::microseconds(*max_coalesce_us);
    weft::cli::set_exit_code(run_responder(*cfg, *hw_interface));
  });
}};

}  // namespace
