#include "proto/path_trace.hpp"

#include <algorithm>

namespace weft::proto {

bool same_route(std::span<const std::string> a_hops, bool a_reached, std::span<const std::string> b_hops,
                bool b_reached) {
  // A trace that reached its target has between `fewest` and `most` routers before it: the silent
  // hops right before the target's answer are either routers that did not answer or the target's
  // own answer lost (the tracer then goes one TTL further and the target answers there). Both
  // readings are kept: [r1, r2, "", target] is the path [r1, r2, target] with one answer lost, not
  // a longer path (a lossy NIC under the target made every flow to it look like a flapping path).
  struct Span {
    size_t fewest, most;
  };
  auto span = [](std::span<const std::string> hops, bool reached) {
    size_t n = hops.size();
    if (!reached) return Span{n, n};
    if (n > 0) --n;
    const size_t most = n;
    while (n > 0 && hops[n - 1].empty()) --n;
    return Span{n, most};
  };
  const Span sa = span(a_hops, a_reached), sb = span(b_hops, b_reached);
  const size_t n = std::min(sa.most, sb.most);
  for (size_t i = 0; i < n; ++i)
    if (!a_hops[i].empty() && !b_hops[i].empty() && a_hops[i] != b_hops[i]) return false;
  if (a_reached && b_reached) {
    if (std::max(sa.fewest, sb.fewest) > std::min(sa.most, sb.most)) return false;
    if (!a_hops.empty() && !b_hops.empty() && !a_hops.back().empty() && !b_hops.back().empty() &&
        a_hops.back() != b_hops.back())
      return false;
  }
  return true;
}

}  // namespace weft::proto
