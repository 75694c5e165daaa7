#include "agent/outbox.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/log.hpp"
#include "proto/report.hpp"

namespace weft::agent {
namespace fs = std::filesystem;

Outbox::Outbox(OutboxLimits limits) : lim_(std::move(limits)) {}

std::string Outbox::path_of(uint64_t seq) const { return fmt::format("{}/{:016d}.wb", lim_.spool_dir, seq); }

Status Outbox::open() {
  if (lim_.spool_dir.empty()) return {};
  std::error_code ec;
  fs::create_directories(lim_.spool_dir, ec);
  if (ec) return fail("spool directory {}: {}", lim_.spool_dir, ec.message());
  std::lock_guard lk(mu_);
  std::vector<OnDisk> found;
  for (const auto& e : fs::directory_iterator(lim_.spool_dir, ec)) {
    std::string name = e.path().filename().string();
    if (name.ends_with(".tmp")) {
      fs::remove(e.path(), ec);  // an interrupted write: never delivered, never acknowledged
      continue;
    }
    if (!name.ends_with(".wb")) continue;
    uint64_t seq = 0;
    auto [p, err] = std::from_chars(name.data(), name.data() + name.size() - 3, seq);
    if (err != std::errc{} || p != name.data() + name.size() - 3) continue;
    uint64_t bytes = e.file_size(ec);
    // The window count is only known after decoding; count it once now so the cap math is right.
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    auto ws = proto::decode_window_list(ss.str());
    if (!ws) {
      log().warn("spool: dropping unreadable {}: {}", e.path().string(), ws.error().message);
      fs::remove(e.path(), ec);
      continue;
    }
    found.push_back({seq, bytes, ws->size()});
  }
  if (ec) return fail("spool directory {}: {}", lim_.spool_dir, ec.message());
  std::sort(found.begin(), found.end(), [](const OnDisk& a, const OnDisk& b) { return a.seq < b.seq; });
  for (const auto& d : found) {
    disk_.push_back(d);
    disk_bytes_ += d.bytes;
    disk_windows_ += d.windows;
    next_seq_ = std::max(next_seq_, d.seq + 1);
  }
  if (!found.empty())
    log().info("spool: {} batches ({} windows) from a previous run to deliver", found.size(), disk_windows_);
  return {};
}

void Outbox::push(std::vector<proto::WindowStats> windows) {
  if (windows.empty()) return;
  std::lock_guard lk(mu_);
  mem_windows_ += windows.size();
  mem_.push_back({next_seq_++, std::move(windows)});
  spill_locked(lim_.memory_windows);
}

void Outbox::spill_all() {
  std::lock_guard lk(mu_);
  if (!lim_.spool_dir.empty()) spill_locked(0);
}

void Outbox::spill_locked(uint64_t keep_in_memory) {
  while (!mem_.empty() && mem_windows_ > keep_in_memory && (keep_in_memory == 0 || mem_.size() > 1)) {
    Batch b = std::move(mem_.front());
    mem_.pop_front();
    mem_windows_ -= b.windows.size();
    if (lim_.spool_dir.empty()) {
      dropped_ += b.windows.size();
      continue;
    }
    // Batches move to disk in order, and disk_ is older than mem_, so delivery order holds.
    std::string data;
    proto::append_window_list(data, b.windows);
    std::string path = path_of(b.seq), tmp = path + ".tmp";
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out.write(data.data(), static_cast<std::streamsize>(data.size()));
      out.close();
      if (!out) {
        log().error("spool: cannot write {}; dropping {} windows", tmp, b.windows.size());
        dropped_ += b.windows.size();
        std::error_code ec;
        fs::remove(tmp, ec);
        continue;
      }
    }
    std::error_code ec;
    fs::rename(tmp, path, ec);
    if (ec) {
      dropped_ += b.windows.size();
      continue;
    }
    disk_.push_back({b.seq, data.size(), b.windows.size()});
    disk_bytes_ += data.size();
    disk_windows_ += b.windows.size();
    while (disk_bytes_ > lim_.spool_max_bytes && !disk_.empty()) {
      const OnDisk old = disk_.front();
      disk_.pop_front();
      fs::remove(path_of(old.seq), ec);
      disk_bytes_ -= old.bytes;
      disk_windows_ -= old.windows;
      dropped_ += old.windows;
      log().warn("spool full ({} bytes): dropped the oldest batch ({} windows)", lim_.spool_max_bytes,
                 old.windows);
    }
  }
}

std::optional<Batch> Outbox::front() {
  std::lock_guard lk(mu_);
  while (!disk_.empty()) {
    const OnDisk d = disk_.front();
    std::ifstream in(path_of(d.seq), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    auto ws = proto::decode_window_list(ss.str());
    if (in.bad() || !ws) {
      log().error("spool: cannot read back batch {}; dropping it", d.seq);
      std::error_code ec;
      fs::remove(path_of(d.seq), ec);
      disk_.pop_front();
      disk_bytes_ -= d.bytes;
      disk_windows_ -= d.windows;
      dropped_ += d.windows;
      continue;
    }
    return Batch{d.seq, std::move(*ws)};
  }
  if (mem_.empty()) return std::nullopt;
  return mem_.front();
}

void Outbox::pop(uint64_t seq, bool dropped) {
  std::lock_guard lk(mu_);
  if (!disk_.empty() && disk_.front().seq == seq) {
    std::error_code ec;
    fs::remove(path_of(seq), ec);
    disk_bytes_ -= disk_.front().bytes;
    disk_windows_ -= disk_.front().windows;
    if (dropped) dropped_ += disk_.front().windows;
    disk_.pop_front();
  } else if (!mem_.empty() && mem_.front().seq == seq) {
    mem_windows_ -= mem_.front().windows.size();
    if (dropped) dropped_ += mem_.front().windows.size();
    mem_.pop_front();
  }
}

std::string Outbox::set_aside(uint64_t seq) {
  std::optional<Batch> b = front();
  if (!b || b->seq != seq) return "";
  std::lock_guard lk(mu_);
  const uint64_t n = b->windows.size();
  // Take it out of the queue first (mu_ is held, so nothing else moves it meanwhile).
  bool on_disk = !disk_.empty() && disk_.front().seq == seq;
  if (on_disk) {
    disk_bytes_ -= disk_.front().bytes;
    disk_windows_ -= disk_.front().windows;
    disk_.pop_front();
  } else if (!mem_.empty() && mem_.front().seq == seq) {
    mem_windows_ -= mem_.front().windows.size();
    mem_.pop_front();
  } else {
    return "";  // no longer at the front: someone else took it
  }
  std::error_code ec;
  if (lim_.spool_dir.empty()) {
    dropped_ += n;
    return "";
  }
  const fs::path dir = fs::path(lim_.spool_dir) / "refused";
  fs::create_directories(dir, ec);
  const fs::path dest = dir / fmt::format("{:016d}.wb", seq);
  std::string data;
  proto::append_window_list(data, b->windows);
  {
    std::ofstream out(dest, std::ios::binary | std::ios::trunc);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!out) {
      log().error("spool: cannot keep refused batch {} in {}; dropping {} windows", seq, dest.string(), n);
      dropped_ += n;
      fs::remove(dest, ec);
      if (on_disk) fs::remove(path_of(seq), ec);
      return "";
    }
  }
  if (on_disk) fs::remove(path_of(seq), ec);
  refused_ += n;
  // Bounded: the oldest refused files go first (names sort by sequence).
  std::vector<std::pair<fs::path, uint64_t>> files;
  uint64_t total = 0;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    uint64_t sz = e.file_size(ec);
    files.emplace_back(e.path(), sz);
    total += sz;
  }
  std::sort(files.begin(), files.end());
  for (size_t i = 0; i < files.size() && total > lim_.spool_max_bytes / 4 && files[i].first != dest; ++i) {
    log().warn("spool: refused batches over {} bytes: removing {}", lim_.spool_max_bytes / 4,
               files[i].first.string());
    fs::remove(files[i].first, ec);
    total -= files[i].second;
  }
  return dest.string();
}

uint64_t Outbox::pending_windows() const {
  std::lock_guard lk(mu_);
  return mem_windows_ + disk_windows_;
}
uint64_t Outbox::spooled_batches() const {
  std::lock_guard lk(mu_);
  return disk_.size();
}
uint64_t Outbox::dropped_windows() const {
  std::lock_guard lk(mu_);
  return dropped_;
}
uint64_t Outbox::refused_windows() const {
  std::lock_guard lk(mu_);
  return refused_;
}

}  // namespace weft::agent
