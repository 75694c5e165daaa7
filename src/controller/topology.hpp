#pragma once
// The network as an operator names it (docs/controller.md "Topology"): a two-tier leaf-spine Clos
// of racks, one ToR per rack, hosts under each ToR, spines joined to the ToRs, and the links
// between them; optionally the interface addresses of the routers, so that the hops an agent traced
// for a probe flow map onto elements. Fault localisation (localise.hpp) reads it to know which
// elements a probe flow crosses.
//
// Refused (with the file, line and reason): duplicate names (any two elements, links included), a
// host in two racks or a ToR that is also a spine or a host (a loop where a tree is declared), a
// link whose end is not declared (a link to nowhere), a link that is not host-ToR or ToR-spine (a
// ToR-ToR or spine-spine cable makes loops the two tiers do not have), a link to a host from
// another rack's ToR, the same cable twice, a ToR that reaches no spine while other racks exist, a
// router entry for an element that is no ToR or spine, an address that is not an IP or belongs to
// two routers. Hosts are agent names; agents register later, so a host that never registers is not
// an error (its flows are simply never seen), and an agent missing from the topology is left out of
// localisation (the answer counts it as unplaced).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.hpp"

namespace YAML {
class Node;
}

namespace weft::controller {

enum class ElementType : uint8_t { host, link, tor, spine };
const char* to_string(ElementType t);

inline constexpr uint32_t kNoElement = UINT32_MAX;

struct Element {
  ElementType type = ElementType::host;
  std::string name;
  std::string rack;                             // hosts and ToRs
  uint32_t ends[2] = {kNoElement, kNoElement};  // links: the two elements it joins (a host or ToR first)
};

// The elements a flow's request crosses from src to dst, in order: src host, its link, its ToR,
// [uplink, spine, downlink, the other ToR,] the link to dst, dst host.
using Path = std::vector<uint32_t>;

// How the hops a flow traced fit the topology.
struct HopMatch {
  enum class Kind : uint8_t { unknown, known, disagrees } kind = Kind::unknown;
  uint32_t spine = kNoElement;  // known: the spine the request crossed (kNoElement within a rack)
  std::string disagreement;     // disagrees: why, e.g. "hop 2 (10.60.9.9) is no router of the topology"
};

class Topology {
 public:
  std::string source;  // the file it came from, or "config"

  const std::vector<Element>& elements() const { return elements_; }
  const Element& element(uint32_t id) const { return elements_[id]; }
  std::optional<uint32_t> find(std::string_view name) const;
  // The host element of an agent name; nullopt when the topology does not place it.
  std::optional<uint32_t> host(std::string_view name) const;
  const std::vector<uint32_t>& spines() const { return spines_; }
  size_t host_count() const { return host_rack_.size(); }

  uint32_t tor_of(uint32_t host) const { return host_tor_.at(host); }
  uint32_t access_link(uint32_t host) const { return host_link_.at(host); }
  // The ToR-spine link, kNoElement when that ToR has no link to that spine.
  uint32_t uplink(uint32_t tor, uint32_t spine) const;
  // The spines a flow from the ToR `a` to the ToR `b` may cross (both have a link to them).
  std::vector<uint32_t> spines_between(uint32_t tor_a, uint32_t tor_b) const;

  // Every path a request from host `src` to host `dst` may take: one within a rack, one per
  // spine the two ToRs share otherwise (ECMP). Empty when either is not a host.
  std::vector<Path> paths(uint32_t src, uint32_t dst) const;
  // The path over `spine` (kNoElement: within a rack), as paths() builds it.
  Path path_via(uint32_t src, uint32_t dst, uint32_t spine) const;

  // The router (ToR or spine) an interface address belongs to.
  std::optional<uint32_t> router(std::string_view address) const;
  bool has_router_addresses() const { return !routers_.empty(); }
  // Maps a traced hop list (router addresses from src, "" for no answer) onto the paths from src to
  // dst. Never fails: too many hops, loops, addresses of no router, routers off every path and
  // spoofed answers give `disagrees` with the reason; no answer at all gives `unknown`.
  HopMatch match_hops(uint32_t src, uint32_t dst, const std::vector<std::string>& hops) const;

 private:
  friend class TopologyBuilder;
  std::vector<Element> elements_;
  std::map<std::string, uint32_t, std::less<>> by_name_;
  std::map<uint32_t, std::string> host_rack_;
  std::map<uint32_t, uint32_t> host_tor_, host_link_;
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> uplinks_;  // (tor, spine) -> link
  std::vector<uint32_t> spines_;
  std::map<std::string, uint32_t, std::less<>> routers_;  // address -> ToR or spine
};

// `node` is the `topology:` mapping; `source` names the file in errors ("weft.yaml:12:9: ...").
Result<Topology> parse_topology(const YAML::Node& node, const std::string& source);
Result<Topology> parse_topology_text(std::string_view yaml_text, const std::string& source);
// A topology file: the same mapping at its top level, or under a `topology:` key.
Result<Topology> load_topology(const std::string& path);

}  // namespace weft::controller
