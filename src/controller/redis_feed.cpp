#include "controller/redis_feed.hpp"

#include <charconv>
#include <chrono>

#include "proto/report.hpp"

namespace weft::controller::redis {
namespace {

std::string_view text(const redisReply* r) { return {r->str, static_cast<size_t>(r->len)}; }

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Fields of an entry: r = publishing replica, k = kind (w report, g registration, x removal),
// a = agent, t = received (Unix ns), b = body (report: window list, registration: its body, agent
// state: its JSON, pinglist: "VERSION TARGETS"). A replica of an older version skips the kinds it
// does not know.
constexpr char kReport = 'w', kRegistration = 'g', kRemoval = 'x', kAgentState = 's', kPinglist = 'p';

}  // namespace

std::string Feed::stream(int i) { return fmt::format("weft:{{feed.{}}}", i); }

std::string Feed::stream_of(std::string_view agent) {
  uint32_t h = 2166136261u;  // FNV-1a: the same stream for an agent in every replica and version
  for (unsigned char c : agent) h = (h ^ c) * 16777619u;
  return stream(static_cast<int>(h % kStreams));
}

Command Feed::entry(const std::string& agent, char kind, int64_t received_ns) const {
  return {"XADD",
          stream_of(agent),
          "MINID",
          "~",
          std::to_string(now_ms() - kKeepMs),
          "*",
          "r",
          replica_,
          "k",
          std::string(1, kind),
          "a",
          agent,
          "t",
          std::to_string(received_ns)};
}

Command Feed::report(const std::string& agent, std::span<const proto::WindowStats> windows,
                     int64_t received_ns, std::string_view encoded) const {
  Command c = entry(agent, kReport, received_ns);
  c.emplace_back("b");
  if (encoded.empty()) {
    std::string b;
    proto::append_window_list(b, windows);
    c.push_back(std::move(b));
  } else {
    c.emplace_back(encoded);
  }
  return c;
}

Command Feed::registration(const std::string& agent, std::string_view body, int64_t received_ns) const {
  Command c = entry(agent, kRegistration, received_ns);
  c.emplace_back("b");
  c.emplace_back(body);
  return c;
}

Command Feed::removal(const std::string& agent) const { return entry(agent, kRemoval, 0); }

Command Feed::agent_state(const std::string& agent, std::string_view state, int64_t received_ns) const {
  Command c = entry(agent, kAgentState, received_ns);
  c.emplace_back("b");
  c.emplace_back(state);
  return c;
}

Command Feed::pinglist(const std::string& agent, uint64_t version, uint64_t targets) const {
  Command c = entry(agent, kPinglist, 0);
  c.emplace_back("b");
  c.push_back(fmt::format("{} {}", version, targets));
  return c;
}

Status Feed::start(Conn& conn) {
  for (int i = 0; i < kStreams; ++i) {
    std::string key = stream(i);
    auto r = conn.run(key, {"XREVRANGE", key, "+", "-", "COUNT", "1"});
    if (!r)
      return unexpected(Error{fmt::format("redis feed {}: {}", key, r.error().message), r.error().code});
    if ((*r)->type == REDIS_REPLY_ERROR) return fail("redis feed {}: {}", key, text(r->get()));
    cursor_[i] = "0-0";
    if ((*r)->type == REDIS_REPLY_ARRAY && (*r)->elements > 0 &&
        (*r)->element[0]->type == REDIS_REPLY_ARRAY && (*r)->element[0]->elements > 0)
      cursor_[i] = std::string(text((*r)->element[0]->element[0]));
  }
  return {};
}

Result<size_t> Feed::poll(Conn& conn, const PeerEventFn& fn) {
  size_t n = 0;
  for (int i = 0; i < kStreams; ++i) {
    std::string key = stream(i);
    auto r = conn.run(key, {"XREAD", "COUNT", std::to_string(kPollCount), "STREAMS", key, cursor_[i]});
    if (!r) return fail("redis feed {}: {}", key, r.error().message);
    if ((*r)->type == REDIS_REPLY_NIL) continue;  // nothing new
    if ((*r)->type == REDIS_REPLY_ERROR) return fail("redis feed {}: {}", key, text(r->get()));
    // [[key, [[id, [field, value, ...]], ...]]]
    if ((*r)->type != REDIS_REPLY_ARRAY || (*r)->elements != 1 || (*r)->element[0]->elements != 2)
      return fail("redis feed {}: unexpected XREAD reply", key);
    const redisReply* entries = (*r)->element[0]->element[1];
    for (size_t e = 0; e < entries->elements; ++e) {
      const redisReply* ent = entries->element[e];
      if (ent->type != REDIS_REPLY_ARRAY || ent->elements != 2) continue;
      cursor_[i] = std::string(text(ent->element[0]));
      const redisReply* f = ent->element[1];
      std::string_view replica, kind, body;
      PeerEvent ev;
      for (size_t k = 0; k + 1 < f->elements; k += 2) {
        std::string_view name = text(f->element[k]), v = text(f->element[k + 1]);
        if (name == "r")
          replica = v;
        else if (name == "k")
          kind = v;
        else if (name == "a")
          ev.agent = std::string(v);
        else if (name == "t")
          std::from_chars(v.data(), v.data() + v.size(), ev.received_ns);
        else if (name == "b")
          body = v;
      }
      if (replica == replica_ || kind.size() != 1 || ev.agent.empty()) continue;
      if (kind[0] == kReport) {
        auto ws = proto::decode_window_list(body);
        if (!ws) continue;  // written by a newer or broken replica: its windows stay in the store
        ev.kind = PeerEvent::Kind::report;
        ev.windows = std::move(*ws);
      } else if (kind[0] == kRegistration) {
        ev.kind = PeerEvent::Kind::registration;
        ev.registration = std::string(body);
      } else if (kind[0] == kRemoval) {
        ev.kind = PeerEvent::Kind::removal;
      } else if (kind[0] == kAgentState) {
        ev.kind = PeerEvent::Kind::agent_state;
        ev.agent_state = std::string(body);
      } else if (kind[0] == kPinglist) {
        ev.kind = PeerEvent::Kind::pinglist;
        const size_t sp = body.find(' ');
        if (sp == std::string_view::npos) continue;
        auto [p1, e1] = std::from_chars(body.data(), body.data() + sp, ev.pinglist_version);
        auto [p2, e2] = std::from_chars(body.data() + sp + 1, body.data() + body.size(), ev.pinglist_targets);
        if (e1 != std::errc{} || e2 != std::errc{}) continue;
      } else {
        continue;
      }
      fn(ev);
      ++n;
    }
  }
  return n;
}

}  // namespace weft::controller::redis
