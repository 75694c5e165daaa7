// The Paris traceroute lab's two ends (paris_trace_lab.sh), one executable that links the probe
// engine alone:
//   paris_trace_tool respond PORT SECONDS         a responder on PORT for SECONDS
//   paris_trace_tool trace HOST PORT FLOWS SECONDS a prober with FLOWS flows tracing HOST:PORT; prints
//                                                 one JSON line per finished trace, then exits once
//                                                 every flow was traced (or SECONDS passed: exit 1)
//   paris_trace_tool follow HOST PORT SECONDS     one flow traced every second for SECONDS, a
//                                                 changed path followed every 300 ms for 2 s; one
//                                                 JSON line per trace with its time (ms since start)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>

#include "probe/ip/prober.hpp"
#include "probe/ip/responder.hpp"

using namespace weft;

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "respond" && argc == 4) {
    probe::ResponderConfig rc;
    rc.udp_port = static_cast<uint16_t>(std::atoi(argv[2]));
    rc.tcp_port = 0;
    auto r = probe::Responder::create(rc);
    if (!r) {
      std::fprintf(stderr, "responder: %s\n", r.error().message.c_str());
      return 1;
    }
    std::thread stopper([&, secs = std::atoi(argv[3])] {
      std::this_thread::sleep_for(std::chrono::seconds(secs));
      (*r)->stop();
    });
    (void)(*r)->run();
    stopper.join();
    return 0;
  }
  const bool follow = mode == "follow" && argc == 5;
  if ((mode == "trace" && argc == 6) || follow) {
    probe::ProberConfig pc;
    pc.protocol = probe::Protocol::udp;
    pc.flows = follow ? 1 : static_cast<size_t>(std::atoi(argv[4]));
    pc.trace_interval = follow ? std::chrono::seconds(1) : std::chrono::hours(1);  // else each flow once
    pc.trace_gap = std::chrono::milliseconds(50);
    pc.trace_follow_gap = std::chrono::milliseconds(300);
    pc.trace_follow_for = std::chrono::seconds(2);
    const auto t0 = std::chrono::steady_clock::now();
    auto p = probe::Prober::create(pc);
    if (!p) {
      std::fprintf(stderr, "prober: %s\n", p.error().message.c_str());
      return 1;
    }
    std::set<uint16_t> traced;
    bool all = false;
    (*p)->set_on_path([&](proto::PathTrace&& t) {
      nlohmann::json j{
          {"src_port", t.src_port}, {"dst_port", t.dst_port}, {"reached", t.reached}, {"hops", t.hops}};
      if (follow)
        j["ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
                      .count();
      std::printf("%s\n", j.dump().c_str());
      std::fflush(stdout);
      traced.insert(t.src_port);
      if (!follow && traced.size() == pc.flows) {
        all = true;
        (*p)->stop();
      }
    });
    (*p)->set_targets({{"target", argv[2], static_cast<uint16_t>(std::atoi(argv[3]))}});
    probe::Prober* raw = p->get();
    std::thread stopper([raw, secs = std::atoi(argv[follow ? 4 : 5])] {
      std::this_thread::sleep_for(std::chrono::seconds(secs));
      raw->stop();
    });
    stopper.detach();
    (void)(*p)->run([](probe::WindowStats&&) {});
    const auto c = (*p)->counters();
    if (follow) return c.unknown_session == 0 && c.malformed == 0 ? 0 : 1;
    std::fprintf(stderr, "sent %llu received %llu unknown_session %llu malformed %llu trace_probes %llu\n",
                 static_cast<unsigned long long>(c.sent), static_cast<unsigned long long>(c.received),
                 static_cast<unsigned long long>(c.unknown_session),
                 static_cast<unsigned long long>(c.malformed),
                 static_cast<unsigned long long>(c.trace_probes));
    return all && c.unknown_session == 0 && c.malformed == 0 ? 0 : 1;
  }
  std::fprintf(stderr,
               "usage: paris_trace_tool respond PORT SECONDS | trace HOST PORT FLOWS SECONDS | follow HOST "
               "PORT SECONDS\n");
  return 2;
}
