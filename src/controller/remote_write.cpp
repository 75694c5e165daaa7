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

void pair_series(proto::Protocol protocol, const PairWindow& pw, std::vector<RemoteSeries>& out) {
  const auto& w = pw.window;
  const int64_t ts = w.end_unix_ns / 1'000'000;
  const std::string p = proto::to_string(protocol);
  auto add = [&](std::string name, double v, const char* stat = nullptr) {
    RemoteSeries s{{{"__name__", std::move(name)}, {"dst", pw.dst}, {"protocol", p}, {"src", pw.src}}, v, ts};
    if (stat) s.labels.emplace_back("stat", stat);  // sorts after "src"
    out.push_back(std::move(s));
  };
  add("weft_pair_loss_ratio", ratio(w.lost, w.sent));
  add("weft_pair_late_ratio", ratio(w.late, w.sent));
  add("weft_pair_duplicate_ratio", ratio(w.duplicate, w.sent));
  if (w.network_rtt.count == 0) return;
  const std::array<std::pair<const char*, int64_t>, 4> stats = {{{"p50", w.network_rtt.p50_ns},
                                                                 {"p90", w.network_rtt.p90_ns},
                                                                 {"p99", w.network_rtt.p99_ns},
                                                                 {"max", w.network_rtt.max_ns}}};
  for (const auto& [stat, ns] : stats)
    add("weft_pair_network_rtt_seconds", static_cast<double>(ns) / 1e9, stat);
}

Result<size_t> RemoteWriter::push_once(const std::string& url) {
  // http(s)://HOST:PORT/PATH
  const bool tls = url.starts_with("https://");
  if (!tls && !url.starts_with("http://"))
    return fail("remote_write '{}': only http:// and https:// are supported", url);
  const size_t slash = url.find('/', tls ? 8 : 7);
  const std::string base = url.substr(0, slash), path = slash == std::string::npos ? "/" : url.substr(slash);
  std::vector<RemoteSeries> series;
  std::vector<std::pair<std::tuple<int, std::string, std::string>, int64_t>> sent;
  for (auto protocol : {proto::Protocol::udp, proto::Protocol::tcp, proto::Protocol::rdma}) {
    for (const auto& pw : mesh_.latest(protocol)) {
      auto key = std::make_tuple(static_cast<int>(protocol), pw.src, pw.dst);
      if (auto it = pushed_end_.find(key); it != pushed_end_.end() && it->second >= pw.window.end_unix_ns)
        continue;
      pair_series(protocol, pw, series);
      sent.emplace_back(std::move(key), pw.window.end_unix_ns);
    }
  }
  if (series.empty()) return size_t{0};
  auto body = snappy_compress(remote_write_request(series));
  if (!body) return std::unexpected(body.error());
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
  if (res->status / 100 != 2)
    return fail("remote_write {}: HTTP {}: {}", url, res->status, res->body.substr(0, 200));
  for (auto& [k, end] : sent) pushed_end_[std::move(k)] = end;
  return series.size();
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
  uint64_t failures = 0;
  std::unique_lock lk(mu_);
  while (!stopping_) {
    auto cfg = mesh_.config();
    cv_.wait_for(lk, std::chrono::nanoseconds(cfg->remote_write_interval_ns),
                 [&] { return stopping_.load(); });
    if (stopping_ || cfg->remote_write.empty()) continue;
    lk.unlock();
    // A failed push keeps what it could not send for the next one (pushed_end_ moves only on success).
    if (auto r = push_once(cfg->remote_write); !r && failures++ % 10 == 0)
      log().warn("{} ({} failed pushes)", r.error().message, failures);
    lk.lock();
  }
}

}  // namespace weft::controller
