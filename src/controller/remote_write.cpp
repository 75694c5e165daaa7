#include "controller/remote_write.hpp"

#include <httplib.h>
#include <openssl/x509.h>
#include <snappy-c.h>

#include <array>
#include <bit>
#include <cstring>

#include "base/little_endian.hpp"
#include "base/log.hpp"
#include "base/signals.hpp"

namespace weft::controller {
namespace {

// Protobuf wire format: field key = field number << 3 | wire type (0 varint, 1 fixed 64, 2 bytes).
void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void put_bytes(std::string& out, int field, std::string_view b) {
  put_varint(out, static_cast<uint64_t>(field) << 3 | 2);
  put_varint(out, b.size());
  out += b;
}

double ratio(uint64_t n, uint64_t d) {
  return d == 0 ? 0.0 : static_cast<double>(n) / static_cast<double>(d);
}

}  // namespace

// message WriteRequest { repeated TimeSeries timeseries = 1; }
// message TimeSeries   { repeated Label labels = 1; repeated Sample samples = 2; }
// message Label        { string name = 1; string value = 2; }
// message Sample       { double value = 1; int64 timestamp = 2; }   (prometheus/prompb)
std::string remote_write_request(const std::vector<RemoteSeries>& series) {
  std::string out, ts, tmp;
  for (const auto& s : series) {
    ts.clear();
    for (const auto& [name, value] : s.labels) {
      tmp.clear();
      put_bytes(tmp, 1, name);
      put_bytes(tmp, 2, value);
      put_bytes(ts, 1, tmp);
    }
    tmp.clear();
    tmp.push_back(0x09);  // field 1, fixed 64: the double, little-endian
    uint8_t value[8];
    le::store(value, std::bit_cast<uint64_t>(s.value));
    tmp.append(reinterpret_cast<const char*>(value), sizeof value);
    tmp.push_back(0x10);  // field 2, varint
    put_varint(tmp, static_cast<uint64_t>(s.timestamp_ms));
    put_bytes(ts, 2, tmp);
    put_bytes(out, 1, ts);
  }
  return out;
}

Result<std::string> snappy_compress(std::string_view raw) {
  std::string out(snappy_max_compressed_length(raw.size()), '\0');
  size_t n = out.size();
  if (::snappy_compress(raw.data(), raw.size(), out.data(), &n) != SNAPPY_OK)
    return fail("snappy: compress failed");
  out.resize(n);
  return out;
}

Result<std::string> snappy_uncompress(std::string_view compressed) {
  size_t n = 0;
  if (snappy_uncompressed_length(compressed.data(), compressed.size(), &n) != SNAPPY_OK || n > (256u << 20))
    return fail("snappy: not a snappy block");
  std::string out(n, '\0');
  if (::snappy_uncompress(compressed.data(), compressed.size(), out.data(), &n) != SNAPPY_OK)
    return fail("snappy: corrupt block");
  out.resize(n);
  return out;
}

void pair_series(const QueuedWindow& w, std::vector<RemoteSeries>& out) {
  const int64_t ts = w.end_unix_ns / 1'000'000;
  const std::string p = proto::to_string(w.protocol);
  auto add = [&](std::string name, double v, const char* stat = nullptr) {
    RemoteSeries s{{{"__name__", std::move(name)}, {"dst", w.dst}, {"protocol", p}, {"src", w.src}}, v, ts};
    if (stat) s.labels.emplace_back("stat", stat);  // sorts after "src"
    out.push_back(std::move(s));
  };
  add("weft_pair_loss_ratio", ratio(w.lost, w.sent));
  add("weft_pair_late_ratio", ratio(w.late, w.sent));
  add("weft_pair_duplicate_ratio", ratio(w.duplicate, w.sent));
  if (w.rtt_count == 0) return;
  const std::array<std::pair<const char*, int64_t>, 4> stats = {
      {{"p50", w.p50_ns}, {"p90", w.p90_ns}, {"p99", w.p99_ns}, {"max", w.max_ns}}};
  for (const auto& [stat, ns] : stats)
    add("weft_pair_network_rtt_seconds", static_cast<double>(ns) / 1e9, stat);
}

Status RemoteWriter::push(const std::string& url, std::span<const QueuedWindow> windows) {
  // http(s)://HOST:PORT/PATH
  const bool tls = url.starts_with("https://");
  if (!tls && !url.starts_with("http://"))
    return unexpected(Error{fmt::format("remote_write '{}': only http:// and https:// are supported", url),
                            kRemoteWriteRefused});
  const size_t slash = url.find('/', tls ? 8 : 7);
  const std::string base = url.substr(0, slash), path = slash == std::string::npos ? "/" : url.substr(slash);
  // Oldest first: a series' samples in one request are then in time order, as a receiver without
  // out-of-order ingestion needs them.
  std::vector<const QueuedWindow*> order;
  order.reserve(windows.size());
  for (const auto& w : windows) order.push_back(&w);
  std::stable_sort(order.begin(), order.end(), [](const QueuedWindow* a, const QueuedWindow* b) {
    return a->end_unix_ns < b->end_unix_ns;
  });
  std::vector<RemoteSeries> series;
  series.reserve(windows.size() * 7);
  for (const QueuedWindow* w : order) pair_series(*w, series);
  auto body = snappy_compress(remote_write_request(series));
  if (!body) return unexpected(body.error());
  httplib::Client cli(base);  // "https://..." makes a TLS client (Debian's httplib is built with OpenSSL)
  cli.set_connection_timeout(2);
  cli.set_read_timeout(10);
  const auto cfg = mesh_.config();
  if (tls) {
    cli.enable_server_certificate_verification(true);
    if (!cfg->remote_write_ca.empty()) cli.set_ca_cert_path(cfg->remote_write_ca);
  }
  if (!cfg->remote_write_bearer_token.empty()) cli.set_bearer_token_auth(cfg->remote_write_bearer_token);
  if (!cfg->remote_write_username.empty())
    cli.set_basic_auth(cfg->remote_write_username, cfg->remote_write_password);
  httplib::Headers headers{{"Content-Encoding", "snappy"}, {"X-Prometheus-Remote-Write-Version", "0.1.0"}};
  // httplib (and OpenSSL, over https) write without MSG_NOSIGNAL: a receiver that resets the
  // connection must cost a failed push, not the controller.
  SigpipeBlock no_sigpipe;
  auto res = cli.Post(path, headers, *body, "application/x-protobuf");
  if (!res && res.error() == httplib::Error::SSLServerVerification)
    return fail("remote_write {}: TLS: the receiver's certificate does not verify against {}: {}", url,
                cfg->remote_write_ca.empty() ? "the system's CAs" : cfg->remote_write_ca,
                X509_verify_cert_error_string(cli.get_openssl_verify_result()));
  if (!res) return fail("remote_write {}: {}", url, httplib::to_string(res.error()));
  if (res->status / 100 == 2) return {};
  Error e{fmt::format("remote_write {}: HTTP {}: {}", url, res->status, res->body.substr(0, 200))};
  // The remote-write spec: 5xx and 429 may be retried, any other 4xx may not.
  if (res->status / 100 == 4 && res->status != 429) e.code = kRemoteWriteRefused;
  return unexpected(std::move(e));
}

Result<size_t> RemoteWriter::push_batch(const std::string& url) {
  auto batch = queue_.take(batch_limit_);
  if (batch.empty()) return size_t{0};
  auto st = push(url, batch);
  if (st) {
    queue_.acknowledged(batch.size());
    batch_limit_ = std::min(kBatchWindows, batch_limit_ * 2);
    return batch.size();
  }
  if (st.error().code != kRemoteWriteRefused) {
    queue_.count_failed_push();
    queue_.retry(std::move(batch));
  } else if (batch.size() > 1) {
    // One refused sample fails the whole request (Prometheus rolls the request back): narrow it
    // down by halves so the others still get through.
    batch_limit_ = batch.size() / 2;
    queue_.retry(std::move(batch));
  } else {
    queue_.rejected(1);
    batch_limit_ = std::min(kBatchWindows, batch_limit_ * 2);
  }
  return unexpected(st.error());
}

void RemoteWriter::start() {
  stopping_ = false;
  thread_ = std::thread([this] { run(); });
}

void RemoteWriter::stop() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void RemoteWriter::run() {
  using namespace std::chrono;
  uint64_t failures = 0;
  const nanoseconds kFirstBackoff = seconds(1), kMaxBackoff = seconds(30);
  nanoseconds backoff = kFirstBackoff, delay{0};
  std::unique_lock lk(mu_);
  while (!stopping_) {
    auto cfg = mesh_.config();
    queue_.set_capacity(cfg->remote_write_queue_windows);
    queue_.set_enabled(!cfg->remote_write.empty());
    if (delay.count() == 0) delay = nanoseconds(cfg->remote_write_interval_ns);
    if (cv_.wait_for(lk, delay, [&] { return stopping_.load(); })) break;
    delay = nanoseconds(cfg->remote_write_interval_ns);
    if (cfg->remote_write.empty()) continue;
    lk.unlock();
    // Once per round, off the ingest's path: a power cut loses at most what came in since.
    queue_.sync_spool();
    // Drain what is queued, batch after batch, until it is empty or a push fails.
    for (int round = 0; round < 10'000 && !stopping_.load(); ++round) {
      auto r = push_batch(cfg->remote_write);
      if (r && *r == 0) break;
      if (r) {
        if (failures)
          log().info("remote_write {}: receiver back after {} failed pushes", cfg->remote_write, failures);
        failures = 0;
        backoff = kFirstBackoff;
        continue;
      }
      if (r.error().code == kRemoteWriteRefused) {
        log().warn("{} (narrowing the batch down to the refused windows)", r.error().message);
        continue;
      }
      if (failures++ % 10 == 0)
        log().warn("{} ({} failed pushes; {} windows queued; next try in {:g} s)", r.error().message,
                   failures, queue_.size(), duration<double>(backoff).count());
      delay = backoff;
      backoff = std::min(backoff * 2, kMaxBackoff);
      break;
    }
    lk.lock();
  }
  lk.unlock();
  flush_at_stop();
}

// A controller stopped (SIGTERM) sends what it still owes once, for a few seconds at most; what
// is left (receiver down or slow) stays in the spool and is sent after the restart, as after a
// crash. Without a spool (remote_write_spool: off) what is left is lost, and said so here.
void RemoteWriter::flush_at_stop() {
  auto cfg = mesh_.config();
  if (cfg->remote_write.empty() || queue_.size() == 0) return;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (queue_.size() > 0 && std::chrono::steady_clock::now() < deadline) {
    auto r = push_batch(cfg->remote_write);
    if (!r && r.error().code != kRemoteWriteRefused) break;
  }
  queue_.sync_spool();
  if (size_t left = queue_.size()) {
    const std::string spool = queue_.spool_path();
    if (spool.empty())
      log().warn("remote_write: stopping with {} windows not sent to {} (no spool: they are lost)", left,
                 cfg->remote_write);
    else
      log().info("remote_write: stopping with {} windows not sent to {}; kept in {} for the next start", left,
                 cfg->remote_write, spool);
  }
}

}  // namespace weft::controller
