#include "controller/topology.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "net/address.hpp"
#include "proto/names.hpp"

namespace weft::controller {

const char* to_string(ElementType t) {
  switch (t) {
    case ElementType::host:
      return "host";
    case ElementType::link:
      return "link";
    case ElementType::tor:
      return "tor";
    case ElementType::spine:
      return "spine";
  }
  return "?";
}

std::optional<uint32_t> Topology::find(std::string_view name) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

std::optional<uint32_t> Topology::host(std::string_view name) const {
  auto id = find(name);
  if (!id || elements_[*id].type != ElementType::host) return std::nullopt;
  return id;
}

uint32_t Topology::uplink(uint32_t tor, uint32_t spine) const {
  auto it = uplinks_.find({tor, spine});
  return it == uplinks_.end() ? kNoElement : it->second;
}

std::vector<uint32_t> Topology::spines_between(uint32_t tor_a, uint32_t tor_b) const {
  std::vector<uint32_t> out;
  for (uint32_t s : spines_)
    if (uplink(tor_a, s) != kNoElement && uplink(tor_b, s) != kNoElement) out.push_back(s);
  return out;
}

Path Topology::path_via(uint32_t src, uint32_t dst, uint32_t spine) const {
  const uint32_t ta = tor_of(src), tb = tor_of(dst);
  if (spine == kNoElement) return {src, access_link(src), ta, access_link(dst), dst};
  return {src, access_link(src), ta, uplink(ta, spine), spine, uplink(tb, spine), tb, access_link(dst), dst};
}

std::vector<Path> Topology::paths(uint32_t src, uint32_t dst) const {
  std::vector<Path> out;
  if (src >= elements_.size() || dst >= elements_.size() || elements_[src].type != ElementType::host ||
      elements_[dst].type != ElementType::host || src == dst)
    return out;
  const uint32_t ta = tor_of(src), tb = tor_of(dst);
  if (ta == tb) {
    out.push_back(path_via(src, dst, kNoElement));
    return out;
  }
  for (uint32_t s : spines_between(ta, tb)) out.push_back(path_via(src, dst, s));
  return out;
}

std::optional<uint32_t> Topology::router(std::string_view address) const {
  auto it = routers_.find(address);
  if (it == routers_.end()) return std::nullopt;
  return it->second;
}

HopMatch Topology::match_hops(uint32_t src, uint32_t dst, const std::vector<std::string>& hops) const {
  HopMatch m;
  if (hops.empty()) return m;
  // Far more hops than a two-tier path has: a routing loop or made-up answers. Look at none of them.
  constexpr size_t kMaxHops = 32;
  if (hops.size() > kMaxHops) {
    m.kind = HopMatch::Kind::disagrees;
    m.disagreement = fmt::format("{} hops traced, a path here has at most 3 routers", hops.size());
    return m;
  }
  // The routers that answered, in order; an address of no router is the destination answering
  // (the last hop) or a disagreement.
  std::vector<uint32_t> routers;
  bool answered = false;
  for (size_t i = 0; i < hops.size(); ++i) {
    if (hops[i].empty()) {
      routers.push_back(kNoElement);
      continue;
    }
    answered = true;
    auto r = router(hops[i]);
    if (!r) {
      if (i + 1 == hops.size()) break;  // the destination host itself
      m.kind = HopMatch::Kind::disagrees;
      m.disagreement = fmt::format("hop {} ({}) is no router of the topology", i + 1, hops[i]);
      return m;
    }
    if (std::find(routers.begin(), routers.end(), *r) != routers.end()) {
      m.kind = HopMatch::Kind::disagrees;
      m.disagreement = fmt::format("hop {} ({}) is {} again: a loop", i + 1, hops[i], elements_[*r].name);
      return m;
    }
    routers.push_back(*r);
  }
  if (!answered) return m;
  const uint32_t ta = tor_of(src), tb = tor_of(dst);
  // The routers a path crosses: ToR within a rack; ToR, spine, ToR across racks.
  const bool same_rack = ta == tb;
  const size_t want = same_rack ? 1 : 3;
  if (routers.size() > want) {
    m.kind = HopMatch::Kind::disagrees;
    m.disagreement = fmt::format("{} router hops, the topology's path has {}", routers.size(), want);
    return m;
  }
  auto expect = [&](size_t i, uint32_t id) {
    if (i >= routers.size() || routers[i] == kNoElement || routers[i] == id) return true;
    m.kind = HopMatch::Kind::disagrees;
    m.disagreement = fmt::format("hop {} is {}, the topology says {}", i + 1, elements_[routers[i]].name,
                                 elements_[id].name);
    return false;
  };
  if (!expect(0, ta)) return m;
  if (same_rack) {
    m.kind = HopMatch::Kind::known;
    return m;
  }
  if (!expect(2, tb)) return m;
  if (routers.size() < 2 || routers[1] == kNoElement) return m;  // the spine did not answer
  const uint32_t s = routers[1];
  if (elements_[s].type != ElementType::spine || uplink(ta, s) == kNoElement || uplink(tb, s) == kNoElement) {
    m.kind = HopMatch::Kind::disagrees;
    m.disagreement = fmt::format("hop 2 is {}, which is no spine between {} and {}", elements_[s].name,
                                 elements_[ta].name, elements_[tb].name);
    return m;
  }
  m.kind = HopMatch::Kind::known;
  m.spine = s;
  return m;
}

// Builds a Topology from its YAML, stopping at the first error (with its line).
class TopologyBuilder {
 public:
  explicit TopologyBuilder(std::string source) : src_(std::move(source)) { t_.source = src_; }

  Result<Topology> build(const YAML::Node& root) {
    try {
      parse(root);
    } catch (const YAML::Exception& e) {
      return fail("{}:{}:{}: topology: {}", src_, e.mark.line + 1, e.mark.column + 1, e.msg);
    }
    if (!error_.empty()) return fail("{}", error_);
    return std::move(t_);
  }

 private:
  bool bad(const YAML::Node& n, const std::string& field, const std::string& why) {
    if (!error_.empty()) return false;
    if (n.IsDefined() && n.Mark().line >= 0)
      error_ = fmt::format("{}:{}:{}: {}: {}", src_, n.Mark().line + 1, n.Mark().column + 1, field, why);
    else
      error_ = fmt::format("{}: {}: {}", src_, field, why);
    return false;
  }
  bool ok() const { return error_.empty(); }

  std::string name_at(const YAML::Node& n, const std::string& field) {
    if (!n.IsScalar()) {
      bad(n, field, "expected a name");
      return {};
    }
    if (!proto::valid_plain_name(n.Scalar()))
      bad(n, field, fmt::format("'{}' is not a valid name (letters, digits, - _ .)", n.Scalar()));
    return n.Scalar();
  }

  // Adds an element; a name given twice is refused, naming the line of the first.
  uint32_t add(Element e, const YAML::Node& at, const std::string& field) {
    if (auto it = t_.by_name_.find(e.name); it != t_.by_name_.end()) {
      const Element& first = t_.elements_[it->second];
      std::string why = fmt::format("'{}' is already the name of a {} (line {})", e.name,
                                    to_string(first.type), lines_[it->second]);
      if (first.type == ElementType::host && e.type == ElementType::host)
        why = fmt::format("host '{}' is already in rack {} (line {}): a host hangs under one ToR", e.name,
                          first.rack, lines_[it->second]);
      else if (first.type != e.type && first.type != ElementType::link && e.type != ElementType::link)
        why += fmt::format(": a {} cannot also be a {} (a loop where a tree is declared)",
                           to_string(first.type), to_string(e.type));
      bad(at, field, why);
      return kNoElement;
    }
    const uint32_t id = static_cast<uint32_t>(t_.elements_.size());
    t_.by_name_.emplace(e.name, id);
    t_.elements_.push_back(std::move(e));
    lines_.push_back(at.IsDefined() && at.Mark().line >= 0 ? at.Mark().line + 1 : 0);
    return id;
  }

  void check_keys(const YAML::Node& map, const std::string& path,
                  std::initializer_list<const char*> allowed) {
    for (auto it = map.begin(); it != map.end() && ok(); ++it) {
      const std::string k = it->first.Scalar();
      if (std::none_of(allowed.begin(), allowed.end(), [&](const char* a) { return k == a; })) {
        std::string list;
        for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
        bad(it->first, path.empty() ? k : path + "." + k, fmt::format("unknown key (allowed: {})", list));
      }
    }
  }

  void parse(const YAML::Node& root) {
    if (!root.IsMap()) {
      bad(root, "topology", "expected a mapping (spines, racks, routers, links)");
      return;
    }
    check_keys(root, "topology", {"spines", "racks", "routers", "links"});
    const YAML::Node spines = root["spines"];
    if (spines) {
      if (!spines.IsSequence()) bad(spines, "topology.spines", "expected a list of spine names");
      for (size_t i = 0; ok() && spines.IsSequence() && i < spines.size(); ++i) {
        const std::string f = fmt::format("topology.spines[{}]", i);
        Element e{ElementType::spine, name_at(spines[i], f), {}, {}};
        if (!ok()) return;
        const uint32_t id = add(std::move(e), spines[i], f);
        if (ok()) t_.spines_.push_back(id);
      }
    }
    const YAML::Node racks = root["racks"];
    if (!racks || !racks.IsSequence() || racks.size() == 0) {
      bad(racks ? racks : root, "topology.racks", "expected a non-empty list of racks (name, tor, hosts)");
      return;
    }
    std::set<std::string> rack_names;
    std::vector<uint32_t> tors;
    for (size_t i = 0; ok() && i < racks.size(); ++i) {
      const YAML::Node r = racks[i];
      const std::string f = fmt::format("topology.racks[{}]", i);
      if (!r.IsMap()) {
        bad(r, f, "expected a mapping (name, tor, hosts)");
        return;
      }
      check_keys(r, f, {"name", "tor", "hosts"});
      for (const char* k : {"name", "tor", "hosts"})
        if (ok() && !r[k]) bad(r, f + "." + k, "missing");
      if (!ok()) return;
      const std::string rack = name_at(r["name"], f + ".name");
      if (ok() && !rack_names.insert(rack).second)
        bad(r["name"], f + ".name", fmt::format("rack '{}' is declared twice", rack));
      Element tor{ElementType::tor, name_at(r["tor"], f + ".tor"), rack, {}};
      if (!ok()) return;
      const uint32_t tor_id = add(std::move(tor), r["tor"], f + ".tor");
      if (!ok()) return;
      tors.push_back(tor_id);
      const YAML::Node hosts = r["hosts"];
      if (!hosts.IsSequence()) {
        bad(hosts, f + ".hosts", "expected a list of host (agent) names");
        return;
      }
      for (size_t j = 0; ok() && j < hosts.size(); ++j) {
        const std::string hf = fmt::format("{}.hosts[{}]", f, j);
        if (ok() && hosts[j].IsScalar() && !proto::valid_host_name(hosts[j].Scalar())) {
          bad(hosts[j], hf, fmt::format("'{}' is not a host name", hosts[j].Scalar()));
          return;
        }
        Element h{ElementType::host, hosts[j].IsScalar() ? hosts[j].Scalar() : std::string(), rack, {}};
        if (!hosts[j].IsScalar()) bad(hosts[j], hf, "expected a host name");
        if (!ok()) return;
        const uint32_t hid = add(std::move(h), hosts[j], hf);
        if (!ok()) return;
        t_.host_rack_[hid] = rack;
        t_.host_tor_[hid] = tor_id;
        link_at_[hid] = hosts[j];
      }
    }
    if (!ok()) return;

    // Explicit links: each names (or declares) one cable.
    struct Declared {
      uint32_t a, b;
      std::string name;
      YAML::Node at;
    };
    std::vector<Declared> declared;
    std::set<std::pair<uint32_t, uint32_t>> seen;
    bool explicit_uplinks = false;
    const YAML::Node links = root["links"];
    if (links) {
      if (!links.IsSequence()) {
        bad(links, "topology.links", "expected a list of links ({a, b, name})");
        return;
      }
      for (size_t i = 0; ok() && i < links.size(); ++i) {
        const YAML::Node l = links[i];
        const std::string f = fmt::format("topology.links[{}]", i);
        if (!l.IsMap()) {
          bad(l, f, "expected a mapping (a, b, name)");
          return;
        }
        check_keys(l, f, {"a", "b", "name"});
        for (const char* k : {"a", "b"})
          if (ok() && !l[k]) bad(l, f + "." + k, "missing");
        if (!ok()) return;
        uint32_t end[2];
        for (int k = 0; k < 2 && ok(); ++k) {
          const YAML::Node n = l[k == 0 ? "a" : "b"];
          const std::string ef = f + (k == 0 ? ".a" : ".b");
          const std::string nm = name_at(n, ef);
          if (!ok()) return;
          auto id = t_.find(nm);
          if (!id) {
            bad(n, ef, fmt::format("'{}' is not declared (a link to nowhere)", nm));
            return;
          }
          end[k] = *id;
        }
        const Element &ea = t_.elements_[end[0]], &eb = t_.elements_[end[1]];
        if (end[0] == end[1]) {
          bad(l, f, fmt::format("a link from '{}' to itself", ea.name));
          return;
        }
        // Normalise: host or ToR first.
        uint32_t a = end[0], b = end[1];
        auto rank = [&](uint32_t id) {
          switch (t_.elements_[id].type) {
            case ElementType::host:
              return 0;
            case ElementType::tor:
              return 1;
            default:
              return 2;
          }
        };
        if (rank(a) > rank(b)) std::swap(a, b);
        const Element &na = t_.elements_[a], &nb = t_.elements_[b];
        if (na.type == ElementType::host && nb.type == ElementType::tor) {
          if (t_.host_tor_.at(a) != b) {
            bad(l, f,
                fmt::format(
                    "host '{}' hangs under {} (rack {}); a link to {} would be a loop where a tree is "
                    "declared",
                    na.name, t_.elements_[t_.host_tor_.at(a)].name, na.rack, nb.name));
            return;
          }
        } else if (na.type == ElementType::tor && nb.type == ElementType::spine) {
          explicit_uplinks = true;
        } else {
          bad(l, f,
              fmt::format(
                  "a link between {} '{}' and {} '{}': links join a host to its ToR or a ToR to a spine",
                  to_string(ea.type), ea.name, to_string(eb.type), eb.name));
          return;
        }
        if (!seen.insert({a, b}).second) {
          bad(l, f, fmt::format("the link {} - {} is declared twice", na.name, nb.name));
          return;
        }
        std::string name = fmt::format("{}-{}", na.name, nb.name);
        if (l["name"]) name = name_at(l["name"], f + ".name");
        if (!ok()) return;
        declared.push_back({a, b, std::move(name), l});
      }
    }
    auto declared_name = [&](uint32_t a, uint32_t b) -> const Declared* {
      for (const auto& d : declared)
        if (d.a == a && d.b == b) return &d;
      return nullptr;
    };
    auto add_link = [&](uint32_t a, uint32_t b, const YAML::Node& fallback_at, const std::string& field) {
      const Declared* d = declared_name(a, b);
      Element e{ElementType::link,
                d ? d->name : fmt::format("{}-{}", t_.elements_[a].name, t_.elements_[b].name),
                {},
                {a, b}};
      return add(std::move(e), d ? d->at : fallback_at, d ? field : field + " (implied link)");
    };
    for (auto& [host, at] : link_at_) {
      const uint32_t id = add_link(host, t_.host_tor_.at(host), at, "topology.racks");
      if (!ok()) return;
      t_.host_link_[host] = id;
    }
    for (uint32_t tor : tors)
      for (uint32_t s : t_.spines_) {
        if (explicit_uplinks && !declared_name(tor, s)) continue;
        const uint32_t id = add_link(tor, s, spines, "topology.links");
        if (!ok()) return;
        t_.uplinks_[{tor, s}] = id;
      }
    if (tors.size() > 1)
      for (size_t i = 0; i < tors.size(); ++i) {
        bool any = false;
        for (uint32_t s : t_.spines_) any = any || t_.uplink(tors[i], s) != kNoElement;
        if (!any) {
          bad(racks[i]["tor"], fmt::format("topology.racks[{}].tor", i),
              fmt::format("{} has no link to any spine: its hosts reach no other rack",
                          t_.elements_[tors[i]].name));
          return;
        }
      }

    const YAML::Node routers = root["routers"];
    if (routers) {
      if (!routers.IsMap()) {
        bad(routers, "topology.routers", "expected a mapping of ToR or spine name -> interface addresses");
        return;
      }
      std::map<std::string, std::string> owner;
      for (auto it = routers.begin(); ok() && it != routers.end(); ++it) {
        const std::string nm = it->first.Scalar();
        const std::string f = "topology.routers." + nm;
        auto id = t_.find(nm);
        if (!id) {
          bad(it->first, f, fmt::format("'{}' is not declared (a router of nowhere)", nm));
          return;
        }
        if (t_.elements_[*id].type != ElementType::tor && t_.elements_[*id].type != ElementType::spine) {
          bad(it->first, f,
              fmt::format("'{}' is a {}, not a ToR or spine", nm, to_string(t_.elements_[*id].type)));
          return;
        }
        const YAML::Node addrs = it->second;
        if (!addrs.IsSequence()) {
          bad(addrs, f, "expected a list of interface addresses");
          return;
        }
        for (size_t j = 0; ok() && j < addrs.size(); ++j) {
          const std::string af = fmt::format("{}[{}]", f, j);
          if (!addrs[j].IsScalar() || !net::SocketAddress::parse_ip(addrs[j].Scalar(), 0)) {
            bad(addrs[j], af, "expected an IPv4 or IPv6 address");
            return;
          }
          const std::string a = addrs[j].Scalar();
          if (auto [o, fresh] = owner.emplace(a, nm); !fresh) {
            bad(addrs[j], af, fmt::format("{} is already an address of {}", a, o->second));
            return;
          }
          t_.routers_[a] = *id;
        }
      }
    }
  }

  std::string src_;
  std::string error_;
  Topology t_;
  std::vector<int> lines_;                  // per element: the line it was declared on
  std::map<uint32_t, YAML::Node> link_at_;  // per host: where it was declared (its implied link's line)
};

Result<Topology> parse_topology(const YAML::Node& node, const std::string& source) {
  return TopologyBuilder(source).build(node);
}

Result<Topology> parse_topology_text(std::string_view text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::ParserException& e) {
    return fail("{}:{}:{}: YAML syntax error: {}", source, e.mark.line + 1, e.mark.column + 1, e.msg);
  } catch (const YAML::Exception& e) {
    return fail("{}: {}", source, e.what());
  }
  if (root.IsMap() && root["topology"] && root.size() == 1) return parse_topology(root["topology"], source);
  return parse_topology(root, source);
}

Result<Topology> load_topology(const std::string& path) {
  std::ifstream in(path);
  if (!in) return fail_errno(fmt::format("cannot read topology {}", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_topology_text(ss.str(), path);
}

}  // namespace weft::controller
