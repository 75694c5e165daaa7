#include "controller/element_watch.hpp"

#include <chrono>
#include <nlohmann/json.hpp>

namespace weft::controller {

using nlohmann::json;

std::vector<FlowObservation> localisation_input(const MeshView& mesh, const FlowTable& flows,
                                                proto::Protocol protocol, int64_t now_unix_ns) {
  std::map<std::string, int64_t, std::less<>> up_again;
  for (const auto& a : mesh.agents())
    if (a.up_again_unix_ns) up_again[a.name] = a.up_again_unix_ns;
  std::vector<FlowObservation> obs = flows.observations(protocol, now_unix_ns);
  // A window that began before one of its ends came back measured the outage, not the network.
  std::erase_if(obs, [&](const FlowObservation& o) {
    for (const std::string* end : {&o.src, &o.dst})
      if (auto it = up_again.find(*end); it != up_again.end() && o.start_unix_ns < it->second) return true;
    return false;
  });
  return obs;
}

ElementWatch::Answer ElementWatch::update(const std::shared_ptr<const Topology>& topology,
                                          proto::Protocol protocol, const MeshView& mesh,
                                          const FlowTable& flows, int64_t now) {
  std::lock_guard lk(mu_);
  PerProtocol& p = protocols_[protocol];
  // A large fleet's localisation takes a while: reuse it for 10 times that, as the render cache does.
  const int64_t reuse = std::max(kReuseNs, 10 * p.cost_ns);
  if (p.last.topology == topology && p.last.at_unix_ns && now - p.last.at_unix_ns < reuse &&
      now >= p.last.at_unix_ns)
    return p.last;
  if (p.last.topology != topology) p.state = {};  // another topology: the verdicts start over
  Answer a;
  a.topology = topology;
  a.at_unix_ns = now;
  if (topology) {
    LocaliseOptions opt;
    opt.max_age_ns = 2 * mesh.window_ns();
    const auto t0 = std::chrono::steady_clock::now();
    a.result = localise(*topology, localisation_input(mesh, flows, protocol, now), now, p.state, opt);
    p.cost_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
  }
  p.last = a;
  return a;
}

std::map<proto::Protocol, ElementWatch::Answer> ElementWatch::latest() const {
  std::lock_guard lk(mu_);
  std::map<proto::Protocol, Answer> out;
  for (const auto& [proto, p] : protocols_) out[proto] = p.last;
  return out;
}

json elements_json(const Localisation& l) {
  json out = json::array();
  for (const auto& s : l.elements) {
    json e{{"type", to_string(s.type)},
           {"name", s.name},
           {"reason", s.reason},
           {"confidence", s.confidence},
           {"loss_ratio", s.loss_ratio},
           {"extra_latency_ns", s.extra_latency_ns},
           {"since_unix_ns", s.since_unix_ns},
           {"evidence",
            {{"flows", s.evidence.flows},
             {"bad_flows", s.evidence.bad_flows},
             {"pairs", s.evidence.pairs},
             {"examples", s.evidence.examples}}}};
    if (!s.detail.empty()) e["detail"] = s.detail;
    out.push_back(std::move(e));
  }
  return out;
}

json coverage_json(const Localisation& l) {
  json out{{"flows", l.flows},
           {"flows_known_path", l.flows_known_path},
           {"flows_flapping", l.flows_flapping},
           {"flows_unplaced", l.flows_unplaced},
           {"unplaced_hosts", l.unplaced_hosts},
           {"flows_stale", l.flows_stale},
           {"stale_hosts", l.stale_hosts},
           {"disagreements", l.disagreements}};
  if (l.stale_oldest_end_unix_ns) out["stale_oldest_end_unix_ns"] = l.stale_oldest_end_unix_ns;
  return out;
}

json topology_json(const Topology* t, const std::map<proto::Protocol, ElementWatch::Answer>& latest) {
  if (!t) return json{{"configured", false}, {"elements", json::array()}};
  json elements = json::array();
  for (const Element& e : t->elements()) {
    json j{{"type", to_string(e.type)}, {"name", e.name}};
    if (!e.rack.empty()) j["rack"] = e.rack;
    if (e.type == ElementType::link) j["ends"] = {t->element(e.ends[0]).name, t->element(e.ends[1]).name};
    elements.push_back(std::move(j));
  }
  // Named in any protocol: "suspect" (loss or latency) wins over "flapping".
  json state = json::object();
  for (const auto& [proto, a] : latest) {
    if (a.topology.get() != t) continue;
    for (const auto& s : a.result.elements) {
      const std::string v = s.reason == "flapping" ? "flapping" : "suspect";
      if (!state.contains(s.name) || v == "suspect") state[s.name] = v;
    }
  }
  return json{{"configured", true},
              {"source", t->source},
              {"elements", std::move(elements)},
              {"state", std::move(state)}};
}

void render_element_metrics(PromText& out, const std::map<proto::Protocol, ElementWatch::Answer>& latest) {
  auto each = [&](auto&& fn) {
    for (const auto& [proto, a] : latest) {
      if (!a.topology) continue;
      std::map<std::string_view, const ElementSuspect*> named;
      for (const auto& s : a.result.elements) named[s.name] = &s;
      for (const Element& e : a.topology->elements()) {
        auto it = named.find(e.name);
        fn(proto::to_string(proto), e, it == named.end() ? nullptr : it->second);
      }
    }
  };
  if (latest.empty()) return;
  out.family(
      "weft_element_suspect", PromType::gauge,
      "1 when fault localisation names the network element (loss, latency or a flapping path), else 0");
  each([&](std::string_view proto, const Element& e, const ElementSuspect* s) {
    out.sample({{"type", to_string(e.type)}, {"name", e.name}, {"protocol", proto}}, s ? 1.0 : 0.0);
  });
  out.family("weft_element_loss_ratio", PromType::gauge,
             "Probes lost per crossing of the element as fault localisation estimates it (0 when not named)");
  each([&](std::string_view proto, const Element& e, const ElementSuspect* s) {
    out.sample({{"type", to_string(e.type)}, {"name", e.name}, {"protocol", proto}}, s ? s->loss_ratio : 0.0);
  });
}

}  // namespace weft::controller
