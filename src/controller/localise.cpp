#include "controller/localise.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>
#include <tuple>
#include <unordered_map>

namespace weft::controller {
namespace {

constexpr uint32_t kMixture = kNoElement - 1;  // a row whose request path is not known

// The variables: per host its prober (0) and responder (1), per link one per direction (0: from
// ends[0] to ends[1]), one per ToR and spine.
struct Vars {
  std::vector<uint32_t> base;  // per element
  uint32_t count = 0;
  explicit Vars(const Topology& t) {
    base.resize(t.elements().size());
    for (size_t e = 0; e < base.size(); ++e) {
      base[e] = count;
      const ElementType ty = t.elements()[e].type;
      count += ty == ElementType::host || ty == ElementType::link ? 2 : 1;
    }
  }
};

// One row of the path matrix: the flows of a pair that took the same (known or unknown) path,
// their probes added up.
struct Row {
  uint32_t src = 0, dst = 0, spine = kMixture;  // spine: kNoElement within a rack
  uint64_t sent = 0, lost = 0;
  double extra_us_sum = 0;
  uint32_t latency_flows = 0;
  uint32_t flows = 0;
};

struct Matrix {
  std::vector<uint32_t> col_begin;  // per variable, into rows/coef
  std::vector<uint32_t> rows;
  std::vector<float> coef;
};

class Paths {
 public:
  Paths(const Topology& t, const Vars& v) : t_(t), v_(v) {}

  // The variables a round trip of `r` crosses, with the expected number of crossings.
  void entries(const Row& r, std::vector<std::pair<uint32_t, float>>& out) {
    out.clear();
    const uint32_t ta = t_.tor_of(r.src), tb = t_.tor_of(r.dst);
    auto dir = [&](uint32_t link, uint32_t from) {
      return v_.base[link] + (t_.element(link).ends[0] == from ? 0u : 1u);
    };
    out.emplace_back(v_.base[r.src] + 0, 1.f);
    out.emplace_back(v_.base[r.dst] + 1, 1.f);
    const uint32_t ls = t_.access_link(r.src), ld = t_.access_link(r.dst);
    out.emplace_back(dir(ls, r.src), 1.f);
    out.emplace_back(dir(ls, ta), 1.f);
    out.emplace_back(dir(ld, tb), 1.f);
    out.emplace_back(dir(ld, r.dst), 1.f);
    out.emplace_back(v_.base[ta], 2.f);
    if (ta != tb) {
      out.emplace_back(v_.base[tb], 2.f);
      const auto& ps = spines(ta, tb);
      const float share = ps.empty() ? 0.f : 1.f / static_cast<float>(ps.size());
      auto leg = [&](uint32_t from_tor, uint32_t to_tor, uint32_t s, float w) {
        out.emplace_back(dir(t_.uplink(from_tor, s), from_tor), w);
        out.emplace_back(v_.base[s], w);
        out.emplace_back(dir(t_.uplink(to_tor, s), s), w);
      };
      if (r.spine != kMixture)
        leg(ta, tb, r.spine, 1.f);
      else
        for (uint32_t s : ps) leg(ta, tb, s, share);
      for (uint32_t s : ps) leg(tb, ta, s, share);  // the reply's own ECMP choice
    }
    std::sort(out.begin(), out.end());
    size_t k = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      if (k > 0 && out[k - 1].first == out[i].first)
        out[k - 1].second += out[i].second;
      else
        out[k++] = out[i];
    }
    out.resize(k);
  }

  const std::vector<uint32_t>& spines(uint32_t ta, uint32_t tb) {
    auto [it, fresh] = between_.try_emplace(static_cast<uint64_t>(ta) << 32 | tb);
    if (fresh) it->second = t_.spines_between(ta, tb);
    return it->second;
  }

 private:
  const Topology& t_;
  const Vars& v_;
  std::unordered_map<uint64_t, std::vector<uint32_t>> between_;
};

Matrix build_matrix(const std::vector<Row>& rows, Paths& paths, uint32_t nvars) {
  Matrix m;
  std::vector<std::pair<uint32_t, float>> e;
  std::vector<uint32_t> count(nvars + 1, 0);
  for (const Row& r : rows) {
    paths.entries(r, e);
    for (auto& [v, c] : e) ++count[v];
  }
  m.col_begin.assign(nvars + 1, 0);
  for (uint32_t v = 0; v < nvars; ++v) m.col_begin[v + 1] = m.col_begin[v] + count[v];
  m.rows.resize(m.col_begin[nvars]);
  m.coef.resize(m.col_begin[nvars]);
  std::vector<uint32_t> fill(m.col_begin.begin(), m.col_begin.end() - 1);
  for (uint32_t i = 0; i < rows.size(); ++i) {
    paths.entries(rows[i], e);
    for (auto& [v, c] : e) {
      m.rows[fill[v]] = i;
      m.coef[fill[v]++] = c;
    }
  }
  return m;
}

// Non-negative least squares with a per-variable L1 penalty, by coordinate descent: a full sweep
// over every variable, then sweeps over the non-zero ones until they settle, until a full sweep
// changes nothing (no estimate moves by `tol` or more: 1e-6 loss, 0.05 us).
std::vector<double> fit(const Matrix& m, const std::vector<double>& y, const std::vector<double>& w,
                        const std::vector<double>& lambda, const std::vector<double>& denom, double tol) {
  const size_t nvars = denom.size();
  std::vector<double> z(nvars, 0.0), r = y;
  // Widest columns first: a cable under a host, a ToR or a spine takes the loss its flows share
  // before the narrower variables (a host's prober or responder, one uplink) are looked at, so the
  // descent starts from the explanation the L1 penalty prefers instead of creeping towards it.
  std::vector<uint32_t> order(nvars);
  for (uint32_t v = 0; v < nvars; ++v) order[v] = v;
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return denom[a] > denom[b]; });
  auto update = [&](size_t v) {
    if (denom[v] <= 0) return 0.0;
    double g = 0;
    for (uint32_t k = m.col_begin[v]; k < m.col_begin[v + 1]; ++k)
      g += w[m.rows[k]] * m.coef[k] * r[m.rows[k]];
    const double nz = std::max(0.0, (g + denom[v] * z[v] - lambda[v]) / denom[v]);
    const double d = nz - z[v];
    if (d == 0) return 0.0;
    for (uint32_t k = m.col_begin[v]; k < m.col_begin[v + 1]; ++k) r[m.rows[k]] -= m.coef[k] * d;
    z[v] = nz;
    return std::abs(d);
  };
  for (int full = 0; full < 8; ++full) {
    double change = 0;
    for (uint32_t v : order) change = std::max(change, update(v));
    if (change < tol) break;
    std::vector<uint32_t> active;
    for (uint32_t v : order)
      if (z[v] > 0) active.push_back(v);
    for (int sweep = 0; sweep < 200; ++sweep) {
      double c = 0;
      for (uint32_t v : active) c = std::max(c, update(v));
      if (c < tol) break;
    }
  }
  return z;
}

// Per variable with a non-zero estimate: sum(w^2 a^2 max(r^2, floor)) / (sum(w a^2))^2, r being its
// rows' residuals after the fit.
template <typename Floor>
std::vector<double> variances(const Matrix& m, const std::vector<double>& y, const std::vector<double>& w,
                              const std::vector<double>& z, Floor floor) {
  const size_t nvars = z.size();
  std::vector<double> fitted(y.size(), 0.0), out(nvars, 0.0);
  for (size_t v = 0; v < nvars; ++v)
    if (z[v] > 0)
      for (uint32_t k = m.col_begin[v]; k < m.col_begin[v + 1]; ++k) fitted[m.rows[k]] += m.coef[k] * z[v];
  for (size_t v = 0; v < nvars; ++v) {
    if (z[v] <= 0) continue;
    double num = 0, den = 0;
    for (uint32_t k = m.col_begin[v]; k < m.col_begin[v + 1]; ++k) {
      const uint32_t row = m.rows[k];
      if (w[row] <= 0) continue;
      const double r = y[row] - fitted[row], wa = w[row] * m.coef[k];
      num += wa * wa * std::max(r * r, floor(row, fitted[row]));
      den += wa * m.coef[k];
    }
    out[v] = den > 0 ? num / (den * den) : 0;
  }
  return out;
}

// A host side's loss or extra latency and its variance from its clean rows: those whose fit
// without this variable is under `clean` (they cross little else that is lossy or slow), what each
// has beyond that fit averaged by weight, with the sandwich variance over them (`floor(row, fit)`,
// the row's noise at that fit, as its floor). {0, 0} without clean rows.
template <typename Floor>
std::pair<double, double> own_effect(const Matrix& m, uint32_t v, const std::vector<double>& y,
                                     const std::vector<double>& w, const std::vector<double>& fitted,
                                     double est, double clean, Floor floor) {
  double sw = 0, swu = 0;
  for (uint32_t k = m.col_begin[v]; k < m.col_begin[v + 1]; ++k) {
    const uint32_t row = m.rows[k];
    const double other = fitted[row] - m.coef[k] * est;
    if (w[row] <= 0 || other >= clean) continue;
    sw += w[row] * m.coef[k] * m.coef[k];
    swu += w[row] * m.coef[k] * (y[row] - other);
  }
  if (sw <= 0) return {0, 0};
  const double own = std::max(0.0, swu / sw);
  double num = 0;
  for (uint32_t k = m.col_begin[v]; k < m.col_begin[v + 1]; ++k) {
    const uint32_t row = m.rows[k];
    const double other = fitted[row] - m.coef[k] * est;
    if (w[row] <= 0 || other >= clean) continue;
    const double r = y[row] - other - m.coef[k] * own, wa = w[row] * m.coef[k];
    num += wa * wa * std::max(r * r, floor(row, other + m.coef[k] * own));
  }
  return {own, num / (sw * sw)};
}

// The fit's value per row from the variables with a positive estimate.
std::vector<double> fitted_rows(const Matrix& m, const std::vector<double>& est, size_t nrows) {
  std::vector<double> fitted(nrows, 0.0);
  for (size_t v = 0; v < est.size(); ++v)
    if (est[v] > 0)
      for (uint32_t k = m.col_begin[v]; k < m.col_begin[v + 1]; ++k) fitted[m.rows[k]] += m.coef[k] * est[v];
  return fitted;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

std::string flow_name(const FlowObservation& f) {
  return f.src_port ? fmt::format("{} -> {} sport {}", f.src, f.dst, f.src_port)
                    : fmt::format("{} -> {}", f.src, f.dst);
}

double confidence_of(double score, double enter) { return 1.0 - std::pow(0.5, score / enter); }

}  // namespace

Localisation localise(const Topology& topo, const std::vector<FlowObservation>& flows, int64_t now,
                      LocaliserState& state, const LocaliseOptions& opt) {
  Localisation out;
  const Vars vars(topo);
  Paths paths(topo, vars);

  // Flows -> rows (flows of one pair over one path added up); flapping flows set aside.
  std::vector<Row> rows;
  std::vector<uint32_t> row_of(flows.size(), UINT32_MAX);
  std::unordered_map<uint64_t, std::vector<uint32_t>> pair_rows;  // (src, dst) -> its rows
  std::vector<uint32_t> flapping;
  std::set<std::string> unplaced, stale;
  for (uint32_t i = 0; i < flows.size(); ++i) {
    const FlowObservation& f = flows[i];
    if (f.sent == 0) continue;
    if (f.end_unix_ns < now - opt.max_age_ns) {
      ++out.flows_stale;
      if (out.stale_oldest_end_unix_ns == 0 || f.end_unix_ns < out.stale_oldest_end_unix_ns)
        out.stale_oldest_end_unix_ns = f.end_unix_ns;
      if (stale.size() < 20) stale.insert(f.src);
      continue;
    }
    ++out.flows;
    auto s = topo.host(f.src), d = topo.host(f.dst);
    if (!s || !d || *s == *d) {
      ++out.flows_unplaced;
      if (!s && unplaced.size() < 20) unplaced.insert(f.src);
      if (!d && unplaced.size() < 20) unplaced.insert(f.dst);
      continue;
    }
    if (f.path_flapping) {
      ++out.flows_flapping;
      flapping.push_back(i);
      continue;
    }
    uint32_t spine = topo.tor_of(*s) == topo.tor_of(*d) ? kNoElement : kMixture;
    if (!f.hops.empty()) {
      const HopMatch hm = topo.match_hops(*s, *d, f.hops);
      if (hm.kind == HopMatch::Kind::known) {
        ++out.flows_known_path;
        if (spine == kMixture && hm.spine != kNoElement) spine = hm.spine;
      } else if (hm.kind == HopMatch::Kind::disagrees && out.disagreements.size() < opt.max_disagreements) {
        out.disagreements.push_back(fmt::format("{}: {}", flow_name(f), hm.disagreement));
      }
    }
    auto& pr = pair_rows[static_cast<uint64_t>(*s) << 32 | *d];
    uint32_t ri = UINT32_MAX;
    for (uint32_t r : pr)
      if (rows[r].spine == spine) ri = r;
    if (ri == UINT32_MAX) {
      ri = static_cast<uint32_t>(rows.size());
      rows.push_back(Row{*s, *d, spine});
      pr.push_back(ri);
    }
    Row& row = rows[ri];
    ++row.flows;
    row.sent += f.sent;
    row.lost += std::min(f.lost, f.sent);
    if (f.rtt_p50_ns > 0 && f.baseline_rtt_ns > 0) {
      row.extra_us_sum += static_cast<double>(f.rtt_p50_ns - f.baseline_rtt_ns) / 1e3;
      ++row.latency_flows;
    }
    row_of[i] = ri;
  }
  out.unplaced_hosts.assign(unplaced.begin(), unplaced.end());
  out.stale_hosts.assign(stale.begin(), stale.end());
  // Each row's flows, for the evidence.
  std::vector<uint32_t> flows_begin(rows.size() + 1, 0), row_flows;
  for (uint32_t r : row_of)
    if (r != UINT32_MAX) ++flows_begin[r + 1];
  for (size_t r = 0; r < rows.size(); ++r) flows_begin[r + 1] += flows_begin[r];
  row_flows.resize(flows_begin.back());
  {
    std::vector<uint32_t> fill(flows_begin.begin(), flows_begin.end() - 1);
    for (uint32_t i = 0; i < row_of.size(); ++i)
      if (row_of[i] != UINT32_MAX) row_flows[fill[row_of[i]]++] = i;
  }

  const Matrix m = build_matrix(rows, paths, vars.count);
  const size_t n = rows.size();

  // Loss: y = -ln(success), weighted by the probes sent (its variance is about p / sent).
  std::vector<double> y(n), w(n);
  for (size_t i = 0; i < n; ++i) {
    const double p = std::min(0.99, static_cast<double>(rows[i].lost) / static_cast<double>(rows[i].sent));
    y[i] = -std::log1p(-p);
    w[i] = static_cast<double>(rows[i].sent);
  }
  // The background loss, what a healthy element loses: the median host's (as prober), so that one
  // bad element does not raise every other element's bar.
  std::unordered_map<uint32_t, std::pair<uint64_t, uint64_t>> by_src;  // host -> (sent, lost)
  for (const Row& r : rows) {
    by_src[r.src].first += r.sent;
    by_src[r.src].second += r.lost;
  }
  std::vector<double> host_loss;
  for (const auto& [h, sl] : by_src)
    host_loss.push_back(static_cast<double>(sl.second) /
                        static_cast<double>(std::max<uint64_t>(sl.first, 1)));
  const double p_bg = std::clamp(median_of(host_loss), 1e-4, 1e-2);
  std::vector<double> denom(vars.count, 0.0), lambda(vars.count, 0.0);
  for (uint32_t v = 0; v < vars.count; ++v) {
    for (uint32_t k = m.col_begin[v]; k < m.col_begin[v + 1]; ++k)
      denom[v] += w[m.rows[k]] * m.coef[k] * m.coef[k];
    // The noise of this variable's gradient is about sqrt(denom * p_bg) lost probes: 3 of those.
    lambda[v] = 3.0 * std::sqrt(denom[v] * p_bg) + 1.0;
  }
  std::vector<double> loss = fit(m, y, w, lambda, denom, 1e-6);
  // The estimates' variances, robust to a model that is only roughly right (the reply's ECMP choice
  // is a mixture, so a flow over a bad spine differs from its prediction by far more than the
  // binomial noise): the sandwich estimator over each variable's rows, with the binomial variance
  // of the fitted loss as its floor.
  std::vector<double> loss_var = variances(
      m, y, w, loss, [&](size_t row, double fit_value) { return std::max(fit_value, p_bg) / w[row]; });
  // A host's side is judged on its rows that cross nothing else lossy (under min_loss elsewhere). Loss on a
  // congested element comes in bursts (a full queue drops what arrives while it is full) and a prober sends
  // to its targets together, so in one window one host's probes meet more of the same element's loss than
  // another's: the fit puts that on the host, and its rows, all shifted alike, do not show it as noise (a
  // congested ToR named a host under it as prober in 2-9 of ~250 polls of the Clos lab). Rows that cross no
  // other lossy element have no bursts to share; a host whose every row crosses one cannot be told from it
  // and is not named.
  {
    const std::vector<double> fitted = fitted_rows(m, loss, n);
    for (uint32_t e = 0; e < topo.elements().size(); ++e) {
      if (topo.element(e).type != ElementType::host) continue;
      for (uint32_t v = vars.base[e]; v < vars.base[e] + 2; ++v)
        if (loss[v] > 0)
          std::tie(loss[v], loss_var[v]) =
              own_effect(m, v, y, w, fitted, loss[v], opt.min_loss,
                         [&](size_t row, double at) { return std::max(at, p_bg) / w[row]; });
    }
  }
  // Latency: y = the flows' mean extra RTT (us), weighted by their number; noise from the median
  // absolute deviation of the rows.
  std::vector<double> ly(n, 0.0), lw(n, 0.0), dev;
  for (size_t i = 0; i < n; ++i)
    if (rows[i].latency_flows) {
      lw[i] = rows[i].latency_flows;
      ly[i] = rows[i].extra_us_sum / lw[i];
      dev.push_back(ly[i]);
    }
  const double lat_median = median_of(dev);
  for (double& d : dev) d = std::abs(d - lat_median);
  const double sigma = std::max(2.0, 1.4826 * median_of(dev));
  std::vector<double> ldenom(vars.count, 0.0), llambda(vars.count, 0.0);
  for (uint32_t v = 0; v < vars.count; ++v) {
    for (uint32_t k = m.col_begin[v]; k < m.col_begin[v + 1]; ++k)
      ldenom[v] += lw[m.rows[k]] * m.coef[k] * m.coef[k];
    llambda[v] = 3.0 * sigma * std::sqrt(ldenom[v]);
  }
  std::vector<double> lat =
      dev.empty() ? std::vector<double>(vars.count, 0.0) : fit(m, ly, lw, llambda, ldenom, 0.05);
  std::vector<double> lat_var =
      variances(m, ly, lw, lat, [&](size_t row, double) { return sigma * sigma / lw[row]; });
  // A host's side is judged on its rows that cross nothing else slow, as for loss: as a ToR's
  // queues fill, the windows of the probes from the hosts under it close first (the agents report
  // at different moments), the fit put part of the ToR's delay on the three hosts as probers, and
  // the Clos lab named them with the congested ToR (+19 ms each, 2 of 249 polls). A host whose every
  // row crosses a slow element cannot be told from it and is not named for latency.
  if (!dev.empty()) {
    const std::vector<double> fitted = fitted_rows(m, lat, n);
    const double clean_us = static_cast<double>(opt.min_extra_latency_ns) / 1e3;
    for (uint32_t e = 0; e < topo.elements().size(); ++e) {
      if (topo.element(e).type != ElementType::host) continue;
      for (uint32_t v = vars.base[e]; v < vars.base[e] + 2; ++v)
        if (lat[v] > 0)
          std::tie(lat[v], lat_var[v]) =
              own_effect(m, v, ly, lw, fitted, lat[v], clean_us,
                         [&](size_t row, double) { return sigma * sigma / lw[row]; });
    }
  }

  // A slow responder: the median responder delay of the flows to a host against the fleet's.
  std::unordered_map<uint32_t, std::vector<double>> responder;  // host -> its flows' p50 (us)
  for (uint32_t i = 0; i < flows.size(); ++i)
    if (row_of[i] != UINT32_MAX && flows[i].responder_delay_p50_ns > 0)
      responder[rows[row_of[i]].dst].push_back(static_cast<double>(flows[i].responder_delay_p50_ns) / 1e3);
  std::vector<double> host_medians;
  for (auto& [h, v] : responder) host_medians.push_back(median_of(v));
  const double fleet_responder = median_of(host_medians);
  // How much hosts' responders differ when nothing is wrong (a busy machine's scheduling): the
  // robust spread of the hosts' medians, at least 10 us. A responder is slow when it stands out of
  // that spread by the naming z-score, not when a busy second lifts it past a fixed bar.
  std::vector<double> host_dev;
  for (double m : host_medians) host_dev.push_back(std::abs(m - fleet_responder));
  const double responder_spread = std::max(10.0, 1.4826 * median_of(host_dev));

  // Elements: combine their variables, judge, keep the state.
  std::vector<ElementSuspect> named;
  std::map<std::string, int64_t, std::less<>> still;
  for (uint32_t e = 0; e < topo.elements().size(); ++e) {
    const Element& el = topo.element(e);
    const uint32_t b = vars.base[e];
    const bool two = el.type == ElementType::host || el.type == ElementType::link;
    double l_est = 0, l_var = 0, t_est = 0, t_se = 0;
    std::string detail;
    if (el.type == ElementType::link) {
      l_est = loss[b] + loss[b + 1];
      l_var = (loss[b] > 0 ? loss_var[b] : 0) + (loss[b + 1] > 0 ? loss_var[b + 1] : 0);
      t_est = lat[b] + lat[b + 1];
      t_se = std::sqrt((lat[b] > 0 ? lat_var[b] : 0) + (lat[b + 1] > 0 ? lat_var[b + 1] : 0));
      const double fwd = loss[b] + lat[b] * 1e-3, back = loss[b + 1] + lat[b + 1] * 1e-3;
      const std::string a = topo.element(el.ends[0]).name, z = topo.element(el.ends[1]).name;
      // Under a host, both directions carry the same flows: the direction cannot be told.
      // Otherwise the direction that carries 80 % of it (the reply legs' mixture smears a little
      // onto the other).
      // It is also where a NIC that loses frames both ways shows: end to end, the host's NIC, the
      // cable and the ToR's port look alike, so the detail names all three.
      if (topo.element(el.ends[0]).type == ElementType::host) {
        detail = fmt::format("{}'s NIC, the cable or {}'s port", a, z);
      } else {
        if (fwd >= 4 * back)
          detail = fmt::format("{} -> {}", a, z);
        else if (back >= 4 * fwd)
          detail = fmt::format("{} -> {}", z, a);
      }
    } else {
      // A host's two sides are different causes: the larger one speaks.
      uint32_t v = b;
      if (two && loss[b + 1] + lat[b + 1] * 1e-3 > loss[b] + lat[b] * 1e-3) v = b + 1;
      l_est = loss[v];
      l_var = l_est > 0 ? loss_var[v] : 0;
      t_est = lat[v];
      t_se = t_est > 0 ? std::sqrt(lat_var[v]) : 0;
      if (two && (l_est > 0 || t_est > 0))
        detail = v == b ? "its own probes (as prober)" : "probes to it (as responder)";
    }
    const bool was = state.named_since.count(el.name) > 0;
    const double threshold = was ? opt.stay_score : opt.enter_score;
    const double loss_ratio = 1.0 - std::exp(-l_est);
    const double l_score = l_var > 0 ? l_est / std::sqrt(l_var) : 0;
    const double t_score = t_se > 0 ? t_est / t_se : 0;
    const bool lossy = loss_ratio >= (was ? opt.min_loss / 2 : opt.min_loss) && l_score >= threshold;
    bool slow =
        t_est * 1e3 >= static_cast<double>(was ? opt.min_extra_latency_ns / 2 : opt.min_extra_latency_ns) &&
        t_score >= threshold;
    double extra_us = slow ? t_est : 0, score = std::max(lossy ? l_score : 0.0, slow ? t_score : 0.0);
    if (el.type == ElementType::host) {
      auto it = responder.find(e);
      if (it != responder.end() && it->second.size() >= 3) {
        const double med = median_of(it->second), extra = med - fleet_responder;
        const double min_us = static_cast<double>(opt.min_extra_latency_ns) / 1e3 / (was ? 2 : 1);
        const double z = extra / responder_spread;
        if (extra >= min_us && med >= 2 * fleet_responder && z >= threshold) {
          slow = true;
          extra_us = std::max(extra_us, extra);
          score = std::max(score, z);
          detail = "probes to it (a slow responder)";
        }
      }
    }
    if (!lossy && !slow) continue;
    ElementSuspect s;
    s.type = el.type;
    s.name = el.name;
    s.reason = lossy && slow ? "loss+latency" : lossy ? "loss" : "latency";
    s.detail = detail;
    s.score = score;
    s.confidence = confidence_of(score, opt.enter_score);
    s.loss_ratio = lossy ? loss_ratio : 0;
    s.extra_latency_ns = static_cast<int64_t>(extra_us * 1e3);
    s.since_unix_ns = was ? state.named_since.find(el.name)->second : now;
    still[el.name] = s.since_unix_ns;
    // Evidence: the flows over its rows (those surely on it, else those that may be).
    const bool have_sure = [&] {
      for (uint32_t v = b; v < b + (two ? 2u : 1u); ++v)
        for (uint32_t k = m.col_begin[v]; k < m.col_begin[v + 1]; ++k)
          if (m.coef[k] >= 0.5f) return true;
      return false;
    }();
    std::set<uint64_t> pairs_seen, rows_seen;
    std::vector<std::pair<double, uint32_t>> worst;
    for (uint32_t v = b; v < b + (two ? 2u : 1u); ++v)
      for (uint32_t k = m.col_begin[v]; k < m.col_begin[v + 1]; ++k) {
        if ((have_sure && m.coef[k] < 0.5f) || !rows_seen.insert(m.rows[k]).second) continue;
        const Row& r = rows[m.rows[k]];
        pairs_seen.insert(static_cast<uint64_t>(r.src) << 32 | r.dst);
        for (uint32_t j = flows_begin[m.rows[k]]; j < flows_begin[m.rows[k] + 1]; ++j) {
          const FlowObservation& f = flows[row_flows[j]];
          ++s.evidence.flows;
          const double extra = f.rtt_p50_ns > 0 && f.baseline_rtt_ns > 0
                                   ? static_cast<double>(f.rtt_p50_ns - f.baseline_rtt_ns)
                                   : 0;
          const bool bad = (lossy && f.lost > 0) ||
                           (slow && extra * 2 >= static_cast<double>(s.extra_latency_ns) && extra > 0);
          if (!bad) continue;
          ++s.evidence.bad_flows;
          worst.emplace_back(lossy ? static_cast<double>(f.lost) / static_cast<double>(f.sent) : extra,
                             row_flows[j]);
        }
      }
    s.evidence.pairs = pairs_seen.size();
    const size_t keep = std::min(worst.size(), opt.max_examples);
    std::partial_sort(worst.begin(), worst.begin() + static_cast<ptrdiff_t>(keep), worst.end(),
                      [](const auto& a, const auto& b2) { return a.first > b2.first; });
    for (size_t i = 0; i < keep; ++i) {
      const FlowObservation& f = flows[worst[i].second];
      if (lossy)
        s.evidence.examples.push_back(fmt::format("{}: {}/{} lost", flow_name(f), f.lost, f.sent));
      else
        s.evidence.examples.push_back(fmt::format("{}: +{:.2f} ms", flow_name(f), worst[i].first / 1e6));
    }
    named.push_back(std::move(s));
  }

  // Flapping paths: the element most of them share, the most specific first (fewest stable flows).
  // A flow whose two latest paths are both known votes for where they differ (a flapping
  // ToR-spine cable moves flows between spines: the cable, not the ToR every one of them crosses),
  // only for its home path's side when it has one; one whose paths are not both known votes for
  // its ToRs and its current path's fabric.
  if (!flapping.empty()) {
    std::unordered_map<uint32_t, size_t> votes, stable, difference_votes, home_votes;
    for (uint32_t i : flapping) {
      const FlowObservation& f = flows[i];
      const uint32_t s = *topo.host(f.src), d = *topo.host(f.dst);
      auto spine_of = [&](const std::vector<std::string>& hops) {
        if (hops.empty()) return kNoElement;
        const HopMatch hm = topo.match_hops(s, d, hops);
        return hm.kind == HopMatch::Kind::known ? hm.spine : kNoElement;
      };
      const uint32_t now_spine = spine_of(f.hops), before_spine = spine_of(f.other_hops);
      const uint32_t home_spine = spine_of(f.home_hops);
      std::set<uint32_t> on;
      if (now_spine != kNoElement && before_spine != kNoElement && now_spine != before_spine) {
        const auto a = topo.path_via(s, d, now_spine), b = topo.path_via(s, d, before_spine);
        const std::set<uint32_t> sa(a.begin(), a.end()), sb(b.begin(), b.end());
        // With a home path among the two, what is on it and not on the other: a link that flaps
        // moves the flow off its home path and back. Without, both sides.
        if (home_spine == now_spine || home_spine == before_spine) {
          const auto& home = home_spine == now_spine ? sa : sb;
          const auto& away = home_spine == now_spine ? sb : sa;
          std::set_difference(home.begin(), home.end(), away.begin(), away.end(),
                              std::inserter(on, on.end()));
          for (uint32_t x : on) ++home_votes[x];
        } else {
          std::set_symmetric_difference(sa.begin(), sa.end(), sb.begin(), sb.end(),
                                        std::inserter(on, on.end()));
        }
        for (uint32_t x : on) ++difference_votes[x];
      } else {
        on = {topo.tor_of(s), topo.tor_of(d)};
        if (now_spine != kNoElement)
          for (uint32_t x : topo.path_via(s, d, now_spine))
            if (topo.element(x).type != ElementType::host && x != topo.access_link(s) &&
                x != topo.access_link(d))
              on.insert(x);
      }
      for (uint32_t x : on) ++votes[x];
    }
    for (const Row& r : rows) {  // steady flows crossing each element
      stable[topo.tor_of(r.src)] += r.flows;
      if (topo.tor_of(r.dst) != topo.tor_of(r.src)) stable[topo.tor_of(r.dst)] += r.flows;
      if (r.spine != kMixture && r.spine != kNoElement)
        for (uint32_t x : topo.path_via(r.src, r.dst, r.spine)) stable[x] += r.flows;
    }
    // Only the elements the most flapping flows agree on are candidates: one that fewer of them
    // cross is not where they flap, and must not be named in its place when those are ruled out
    // below (the Clos lab named tor1-spine2, on 6 of 7 flapping flows, for the tor3-spine2 on
    // all 7 that the steady-flow rule had set aside).
    size_t top_votes = 0;
    for (const auto& [x, v] : votes)
      if (v >= 2 && v * 2 >= flapping.size()) top_votes = std::max(top_votes, v);
    std::vector<uint32_t> top;
    for (const auto& [x, v] : votes)
      if (top_votes > 0 && v == top_votes) top.push_back(x);
    // y is x's twin: of x's kind, with at least as many votes from where the paths differ (the
    // other side of the same flapping flows; votes from flows with only one known path, which go
    // to whatever path they are on now, do not count here).
    auto twins = [&](uint32_t x, uint32_t y) {
      return y != x && difference_votes[y] > 0 && difference_votes[y] >= difference_votes[x] &&
             topo.element(y).type == topo.element(x).type;
    };
    uint32_t best = kNoElement;
    double best_key = 0;
    std::vector<uint32_t> candidates;  // what passes the rule below, for the tie check after
    for (uint32_t x : top) {
      const size_t v = votes[x];
      // Where two paths differ, both sides get every vote: a flapping cable's other side (the
      // cable its flows move to meanwhile) carries as many steady flows as flapping ones, the
      // flapping cable none while it flaps. Of two such sides, one at least half as many steady
      // flows cross is carrying traffic, not flapping: after a repair, as the moved flows
      // settle, neither side is named rather than the healthy one. Without such a twin there is
      // no tie to break (steady flows placed by stale traces cross a flapping cable too).
      // Votes from flows whose home path is known are not ties: the rule is for the others.
      if (difference_votes[x] > 0 && home_votes[x] * 2 < v && 2 * stable[x] >= v &&
          std::any_of(votes.begin(), votes.end(), [&](const auto& e) { return twins(x, e.first); }))
        continue;
      const double key = static_cast<double>(v) + static_cast<double>(v) / static_cast<double>(v + stable[x]);
      candidates.push_back(x);
      if (key > best_key) {
        best = x;
        best_key = key;
      }
    }
    // Two elements of one kind that the same flapping flows leave the same way (both ends of one
    // home path: tor1-spine2 and tor3-spine2 while only rack 1 <-> rack 3 flows have been seen
    // flapping) are not told apart by how many steady flows happened to cross each this interval;
    // only one that no steady flow crosses, against one that some do, is. Until more flows flap
    // (or one end carries none steadily), neither is named: one of them is innocent.
    if (best != kNoElement && difference_votes[best] > 0) {
      const auto twin =
          std::find_if(candidates.begin(), candidates.end(), [&](uint32_t y) { return twins(best, y); });
      if (twin != candidates.end() && !(stable[best] == 0 && stable[*twin] > 0)) best = kNoElement;
    }
    const bool already =
        best != kNoElement && std::any_of(named.begin(), named.end(), [&](const ElementSuspect& s) {
          return s.name == topo.element(best).name;
        });
    if (best != kNoElement && !already) {
      const Element& el = topo.element(best);
      ElementSuspect s;
      s.type = el.type;
      s.name = el.name;
      s.reason = "flapping";
      s.detail = fmt::format("{} of {} flapping flows cross it", top_votes, flapping.size());
      s.confidence = static_cast<double>(top_votes) / static_cast<double>(flapping.size());
      auto it = state.named_since.find(el.name);
      s.since_unix_ns = it != state.named_since.end() ? it->second : now;
      still[el.name] = s.since_unix_ns;
      std::set<uint64_t> pairs_seen;
      for (uint32_t i : flapping) {
        const FlowObservation& f = flows[i];
        pairs_seen.insert(static_cast<uint64_t>(*topo.host(f.src)) << 32 | *topo.host(f.dst));
        if (s.evidence.examples.size() < opt.max_examples)
          s.evidence.examples.push_back(flow_name(f) + ": path flapping");
      }
      s.evidence.flows = s.evidence.bad_flows = flapping.size();
      s.evidence.pairs = pairs_seen.size();
      named.push_back(std::move(s));
    }
  }
  std::stable_sort(named.begin(), named.end(), [](const ElementSuspect& a, const ElementSuspect& b) {
    const bool fa = a.reason == "flapping", fb = b.reason == "flapping";
    if (fa != fb) return fb;
    return a.score > b.score;
  });
  state.named_since = std::move(still);
  out.elements = std::move(named);
  return out;
}

}  // namespace weft::controller
