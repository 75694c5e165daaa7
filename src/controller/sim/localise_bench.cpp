#include "controller/sim/localise_bench.hpp"

#include <fmt/format.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <set>

#include "controller/blame.hpp"
#include "controller/localise.hpp"

namespace weft::controller::sim {
namespace {

int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

struct Tally {
  size_t named = 0, correct = 0, faults = 0, found = 0;
  size_t topk_named = 0, topk_correct = 0;
  double precision() const { return named ? static_cast<double>(correct) / static_cast<double>(named) : 1.0; }
  double recall() const { return faults ? static_cast<double>(found) / static_cast<double>(faults) : 1.0; }
  double topk_precision() const {
    return topk_named ? static_cast<double>(topk_correct) / static_cast<double>(topk_named) : 1.0;
  }
};

// Does element `e` lie on some path between a and b (either way)?
bool on_pair(const Topology& t, uint32_t e, uint32_t a, uint32_t b) {
  for (auto [x, y] : {std::pair{a, b}, std::pair{b, a}})
    for (const Path& p : t.paths(x, y))
      if (std::find(p.begin(), p.end(), e) != p.end()) return true;
  return false;
}

}  // namespace

int run_localise_bench(const LocaliseBenchOptions& opts) {
  LocaliseBenchOptions o = opts;
  o.spec.traced = !o.untraced;
  auto topo = parse_topology_text(clos_yaml(o.spec), "<simulated clos>");
  if (!topo) {
    fmt::print(stderr, "{}\n", topo.error().message);
    return 1;
  }
  const int64_t now = 1'800'000'000'000'000'000;
  std::mt19937_64 rng(o.seed);
  fmt::print(
      "# simulated Clos: {} racks x {} hosts = {} hosts, {} spines; {} flows per pair, {} probes per pair "
      "per window, {}\n",
      o.spec.racks, o.spec.hosts_per_rack, topo->host_count(), o.spec.spines, o.spec.flows_per_pair,
      o.spec.probes_per_pair, o.spec.traced ? "paths traced" : "pairs only (no traces)");
  const char* types[] = {"host", "host link", "ToR-spine link", "ToR", "spine"};
  auto type_of = [&](uint32_t e) {
    const Element& el = topo->element(e);
    switch (el.type) {
      case ElementType::host:
        return 0;
      case ElementType::link:
        return topo->element(el.ends[0]).type == ElementType::host ? 1 : 2;
      case ElementType::tor:
        return 3;
      default:
        return 4;
    }
  };
  for (size_t nf : o.fault_counts) {
    Tally loc, base_strict, base_consistent;
    size_t per_type[5] = {}, per_type_found[5] = {};
    std::vector<int64_t> cpu;
    size_t flows = 0, baseline_runs = 0;
    std::vector<std::string> misses;
    for (size_t sc = 0; sc < o.scenarios; ++sc) {
      const auto faults = random_faults(*topo, nf, rng);
      const auto probes = simulate(*topo, o.spec, faults, now, rng);
      flows = probes.flows.size();
      std::set<uint32_t> bad;
      for (const auto& f : faults) bad.insert(f.element);
      LocaliserState state;
      const int64_t t0 = thread_cpu_ns();
      const Localisation l = localise(*topo, probes.flows, now, state);
      cpu.push_back(thread_cpu_ns() - t0);
      size_t rank = 0;
      std::set<uint32_t> found;
      std::string named_list;
      for (const auto& s : l.elements) named_list += fmt::format(" {}({} {:.1f})", s.name, s.reason, s.score);
      for (const auto& s : l.elements) {
        if (s.reason == "flapping") continue;
        const uint32_t e = *topo->find(s.name);
        ++loc.named;
        const bool ok = bad.count(e) > 0;
        loc.correct += ok;
        if (ok) found.insert(e);
        if (rank++ < nf) {
          ++loc.topk_named;
          loc.topk_correct += ok;
        }
      }
      loc.faults += nf;
      loc.found += found.size();
      for (const auto& f : faults) {
        ++per_type[type_of(f.element)];
        if (found.count(f.element)) ++per_type_found[type_of(f.element)];
      }
      if ((found.size() < bad.size() || found.size() < l.elements.size()) && misses.size() < 8) {
        std::string fl;
        for (const auto& f : faults)
          fl += fmt::format(" {}[{}]({} loss {:.3f} +{} us)", topo->element(f.element).name, f.direction,
                            types[type_of(f.element)], f.loss, f.latency_ns / 1000);
        misses.push_back(fmt::format("faults:{}; named:{}", fl, named_list.empty() ? " none" : named_list));
      }
      // Today's blame over the same probes, added up per pair (its greedy rounds are slow in a large
      // mesh with many suspects: on the first baseline_scenarios only).
      // A running tally, flushed: a slow machine's partial run still says something.
      if ((sc + 1) % 10 == 0) {
        fmt::print(
            "  [{} faults, after {} scenarios] localiser precision {:.3f} recall {:.3f} top-{} precision "
            "{:.3f}\n",
            nf, sc + 1, loc.precision(), loc.recall(), nf, loc.topk_precision());
        std::fflush(stdout);
      }
      if (sc >= o.baseline_scenarios) continue;
      ++baseline_runs;
      const Blame b = find_blame(probes.pairs, {}, now, o.spec.window_ns);
      std::set<uint32_t> strict_found, consistent_found;
      for (const auto& h : b.hosts) {
        const uint32_t e = *topo->host(h.host);
        ++base_strict.named;
        ++base_consistent.named;
        if (bad.count(e)) {
          ++base_strict.correct;
          strict_found.insert(e);
        }
        bool cons = false;
        for (uint32_t f : bad)
          if (f == e || f == topo->access_link(e)) {
            cons = true;
            consistent_found.insert(f);
          }
        base_consistent.correct += cons;
      }
      for (const auto& lk : b.links) {
        ++base_strict.named;  // a pair names no element
        ++base_consistent.named;
        const uint32_t a = *topo->host(lk.src), z = *topo->host(lk.dst);
        bool cons = false;
        for (uint32_t f : bad)
          if (on_pair(*topo, f, a, z)) {
            cons = true;
            consistent_found.insert(f);
          }
        base_consistent.correct += cons;
      }
      base_strict.faults += nf;
      base_strict.found += strict_found.size();
      base_consistent.faults += nf;
      base_consistent.found += consistent_found.size();
    }
    std::sort(cpu.begin(), cpu.end());
    fmt::print("\n{} faulty element(s), {} scenarios, {} flows each:\n", nf, o.scenarios, flows);
    fmt::print(
        "  localiser           precision {:.3f}  recall {:.3f}  top-{} precision {:.3f}  ({} named, {} "
        "faults)\n",
        loc.precision(), loc.recall(), nf, loc.topk_precision(), loc.named, loc.faults);
    fmt::print(
        "  blame (hosts+pairs) precision {:.3f}  recall {:.3f}  (names the element; {} suspects; first {} "
        "scenarios)\n",
        base_strict.precision(), base_strict.recall(), base_strict.named, baseline_runs);
    fmt::print(
        "  blame, lenient      precision {:.3f}  recall {:.3f}  (a suspect counts when the fault lies on "
        "its pair's paths or is its host's link)\n",
        base_consistent.precision(), base_consistent.recall());
    fmt::print("  recall by type:");
    for (int i = 0; i < 5; ++i)
      if (per_type[i]) fmt::print("  {} {}/{}", types[i], per_type_found[i], per_type[i]);
    fmt::print("\n  localisation CPU: median {:.1f} ms, max {:.1f} ms\n",
               static_cast<double>(cpu[cpu.size() / 2]) / 1e6, static_cast<double>(cpu.back()) / 1e6);
    for (const auto& m : misses) fmt::print("  e.g. {}\n", m);
  }
  return 0;
}

void add_localise_bench_options(CLI::App& app, LocaliseBenchOptions& o) {
  app.add_option("--racks", o.spec.racks, "Racks (one ToR each)")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  app.add_option("--hosts-per-rack", o.spec.hosts_per_rack, "Hosts under each ToR")
      ->capture_default_str()
      ->check(CLI::Range(2, 1024));
  app.add_option("--spines", o.spec.spines, "Spines")->capture_default_str()->check(CLI::Range(1, 256));
  app.add_option("--intra-peers", o.spec.intra_peers, "Peers probed in a host's own rack (0: all)")
      ->capture_default_str();
  app.add_option("--inter-peers", o.spec.inter_peers,
                 "Other racks a host probes (its position's host there; 0: every other rack)")
      ->capture_default_str();
  app.add_option("--flows", o.spec.flows_per_pair, "Flows (source ports) per pair")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--probes", o.spec.probes_per_pair, "Probes per pair per window")->capture_default_str();
  app.add_flag("--untraced", o.untraced, "Pairs only: no per-flow detail, no traces");
  app.add_option("--burst-sigma", o.spec.burst_sigma,
                 "Loss in bursts: each prober meets a faulty element's loss times its own log-normal factor "
                 "(this sigma; 0: independent probes)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 2.0));
  app.add_option("--scenarios", o.scenarios, "Scenarios per fault count")->capture_default_str();
  app.add_option("--faults", o.fault_counts, "Faulty elements per scenario (a list)")->capture_default_str();
  app.add_option("--seed", o.seed, "Random seed")->capture_default_str();
  app.add_option("--baseline-scenarios", o.baseline_scenarios,
                 "Scenarios also judged by today's blame (the first N)")
      ->capture_default_str();
}

}  // namespace weft::controller::sim
