#include "controller/remote_write_spool.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/little_endian.hpp"
#include "base/log.hpp"

namespace weft::controller {
namespace {

constexpr std::string_view kFileMagic = "WEFTRWSP";
constexpr uint32_t kFrameMagic = 0x52465754;  // "TWFR" little-endian
// protocol, reserved, two name lengths, ten 64-bit numbers; then the names.
constexpr size_t kFixedPayload = 1 + 1 + 2 + 2 + 10 * 8;

// CRC-32C (Castagnoli): the SSE4.2 instruction where the CPU has it (8 bytes per instruction; the
// ingest checksums every window it spools), else a table, bit for bit the same.
constexpr std::array<uint32_t, 256> kCrc32cTable = [] {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
    t[i] = c;
  }
  return t;
}();

uint32_t crc32c_table(const char* p, size_t n) {
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; ++i) c = kCrc32cTable[(c ^ static_cast<uint8_t>(p[i])) & 0xff] ^ (c >> 8);
  return ~c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t crc32c_sse42(const char* p, size_t n) {
  uint64_t c = 0xffffffffu;
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = __builtin_ia32_crc32di(c, v);
  }
  auto c32 = static_cast<uint32_t>(c);
  for (; n > 0; ++p, --n) c32 = __builtin_ia32_crc32qi(c32, static_cast<unsigned char>(*p));
  return ~c32;
}
const bool kHaveSse42 = __builtin_cpu_supports("sse4.2");
#endif

uint32_t crc(const char* p, size_t n) {
#if defined(__x86_64__)
  if (kHaveSse42) return crc32c_sse42(p, n);
#endif
  return crc32c_table(p, n);
}

const uint8_t* u8p(const char* p) { return reinterpret_cast<const uint8_t*>(p); }

std::array<char, RemoteWriteSpool::kHeaderBytes> header_bytes(uint64_t base, uint64_t acked) {
  std::array<char, RemoteWriteSpool::kHeaderBytes> h{};
  std::memcpy(h.data(), kFileMagic.data(), 8);
  le::store(reinterpret_cast<uint8_t*>(h.data() + 8), RemoteWriteSpool::kVersion);
  le::store(reinterpret_cast<uint8_t*>(h.data() + 16), base);
  le::store(reinterpret_cast<uint8_t*>(h.data() + 24), acked);
  le::store(reinterpret_cast<uint8_t*>(h.data() + 12), crc(h.data() + 16, 16));
  return h;
}

Status pwrite_all(int fd, const char* p, size_t n, uint64_t at, const std::string& what) {
  while (n > 0) {
    ssize_t w = ::pwrite(fd, p, n, static_cast<off_t>(at));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return fail_errno(what, w < 0 ? errno : ENOSPC);
    p += w;
    n -= static_cast<size_t>(w);
    at += static_cast<uint64_t>(w);
  }
  return {};
}

Result<std::string> read_all(int fd, uint64_t from, uint64_t to, const std::string& what) {
  std::string out(to - from, '\0');
  size_t got = 0;
  while (got < out.size()) {
    ssize_t r = ::pread(fd, out.data() + got, out.size() - got, static_cast<off_t>(from + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return fail_errno(what);
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  out.resize(got);
  return out;
}

// The payload of one frame, or false when its content is not a window (a corrupt frame whose
// CRC happens to match, or a frame of a writer that got it wrong).
bool decode(const char* p, size_t n, QueuedWindow& w) {
  if (n < kFixedPayload) return false;
  const uint8_t proto = static_cast<uint8_t>(p[0]);
  if (proto > static_cast<uint8_t>(proto::Protocol::rdma)) return false;
  const uint16_t ls = le::load<uint16_t>(u8p(p + 2)), ld = le::load<uint16_t>(u8p(p + 4));
  if (n != kFixedPayload + ls + ld || ls == 0 || ld == 0) return false;
  w.protocol = static_cast<proto::Protocol>(proto);
  const char* q = p + 6;
  uint64_t v[10];
  for (auto& x : v) {
    x = le::load<uint64_t>(u8p(q));
    q += 8;
  }
  w.end_unix_ns = static_cast<int64_t>(v[0]);
  w.sent = v[1];
  w.lost = v[2];
  w.late = v[3];
  w.duplicate = v[4];
  w.rtt_count = v[5];
  w.p50_ns = static_cast<int64_t>(v[6]);
  w.p90_ns = static_cast<int64_t>(v[7]);
  w.p99_ns = static_cast<int64_t>(v[8]);
  w.max_ns = static_cast<int64_t>(v[9]);
  w.src.assign(q, ls);
  w.dst.assign(q + ls, ld);
  return true;
}

// A frame at data[i] whose magic, length and CRC hold: its payload length, else -1.
int64_t whole_frame(std::string_view data, size_t i) {
  if (data.size() - i < RemoteWriteSpool::kFrameHeaderBytes) return -1;
  const char* p = data.data() + i;
  if (le::load<uint32_t>(u8p(p)) != kFrameMagic) return -1;
  const uint32_t len = le::load<uint32_t>(u8p(p + 4));
  if (len > RemoteWriteSpool::kMaxPayload || data.size() - i - RemoteWriteSpool::kFrameHeaderBytes < len)
    return -1;
  if (crc(p + RemoteWriteSpool::kFrameHeaderBytes, len) != le::load<uint32_t>(u8p(p + 8))) return -1;
  return len;
}

}  // namespace

uint32_t RemoteWriteSpool::checksum(std::string_view data) { return crc(data.data(), data.size()); }

void RemoteWriteSpool::encode(std::span<QueuedWindow> ws, std::string& out) {
  size_t total = out.size();
  for (const auto& w : ws)
    total += kFrameHeaderBytes + kFixedPayload + std::min<size_t>(w.src.size(), 0xffff) +
             std::min<size_t>(w.dst.size(), 0xffff);
  size_t at = out.size();
  out.resize(total);  // once per report; every field is then stored in place
  for (auto& w : ws) {
    w.spool_pos = at;
    const auto ls = static_cast<uint16_t>(std::min<size_t>(w.src.size(), 0xffff));
    const auto ld = static_cast<uint16_t>(std::min<size_t>(w.dst.size(), 0xffff));
    auto* f = reinterpret_cast<uint8_t*>(out.data() + at);
    uint8_t* p = f + kFrameHeaderBytes;
    p[0] = static_cast<uint8_t>(w.protocol);
    p[1] = 0;
    le::store(p + 2, ls);
    le::store(p + 4, ld);
    p += 6;
    for (uint64_t v : {static_cast<uint64_t>(w.end_unix_ns), w.sent, w.lost, w.late, w.duplicate, w.rtt_count,
                       static_cast<uint64_t>(w.p50_ns), static_cast<uint64_t>(w.p90_ns),
                       static_cast<uint64_t>(w.p99_ns), static_cast<uint64_t>(w.max_ns)}) {
      le::store(p, v);
      p += 8;
    }
    std::memcpy(p, w.src.data(), ls);
    std::memcpy(p + ls, w.dst.data(), ld);
    const auto len = static_cast<uint32_t>(kFixedPayload + ls + ld);
    le::store(f, kFrameMagic);
    le::store(f + 4, len);
    le::store(f + 8, crc(reinterpret_cast<const char*>(f) + kFrameHeaderBytes, len));
    at += kFrameHeaderBytes + len;
  }
}

SpoolScan RemoteWriteSpool::scan(std::string_view data, uint64_t at, uint64_t base) {
  SpoolScan s;
  size_t i = 0;
  while (i < data.size()) {
    int64_t len = whole_frame(data, i);
    if (len >= 0) {
      QueuedWindow w;
      if (decode(data.data() + i + kFrameHeaderBytes, static_cast<size_t>(len), w)) {
        w.spool_pos = base + i;
        s.windows.push_back(std::move(w));
      } else {
        ++s.corrupt_frames;
        s.corrupt_bytes += kFrameHeaderBytes + static_cast<uint64_t>(len);
      }
      i += kFrameHeaderBytes + static_cast<size_t>(len);
      continue;
    }
    // Not a whole frame here: the next one that is, past damaged bytes; none means a torn tail.
    size_t j = i + 1;
    for (; j < data.size(); ++j) {
      const void* m = std::memchr(data.data() + j, static_cast<char>(kFrameMagic & 0xff), data.size() - j);
      if (!m) {
        j = data.size();
        break;
      }
      j = static_cast<size_t>(static_cast<const char*>(m) - data.data());
      if (whole_frame(data, j) >= 0) break;
    }
    if (j >= data.size()) {
      s.torn_bytes = data.size() - i;
      break;
    }
    ++s.corrupt_frames;
    s.corrupt_bytes += j - i;
    i = j;
  }
  s.valid_end = at + data.size() - s.torn_bytes;
  return s;
}

Result<RemoteWriteSpool::Opened> RemoteWriteSpool::open(const std::string& path) {
  const std::string what = "remote_write spool " + path;
  Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0640));
  if (!fd.valid()) return fail_errno(what + ": cannot open");
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0)
    return fail(
        "{}: locked by another process (two controllers must not share one spool: set "
        "remote_write_spool)",
        what);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return fail_errno(what + ": stat");
  const auto size = static_cast<uint64_t>(st.st_size);
  std::unique_ptr<RemoteWriteSpool> sp(new RemoteWriteSpool(path, std::move(fd)));
  Opened out;

  auto head = read_all(sp->fd_.get(), 0, std::min<uint64_t>(size, kHeaderBytes), what);
  if (!head) return std::unexpected(head.error());
  const size_t seen = std::min<size_t>(head->size(), 8);
  const bool torn_first_header =
      size < kHeaderBytes && head->compare(0, seen, kFileMagic.substr(0, seen)) == 0;
  const bool ours = head->size() >= 12 && head->compare(0, 8, kFileMagic) == 0;
  const uint32_t version = ours ? le::load<uint32_t>(u8p(head->data() + 8)) : 0;
  if (size > 0 && !torn_first_header && (!ours || version != kVersion)) {
    // Another format (an older or newer weft, or not a spool at all): kept for whoever can read
    // it, never overwritten; this run starts an empty spool.
    const std::string aside = path + ".unreadable";
    const std::string why = ours ? fmt::format("format version {}, this build reads {}", version, kVersion)
                                 : std::string("not a weft remote-write spool");
    sp.reset();
    if (::rename(path.c_str(), aside.c_str()) != 0)
      return fail_errno(fmt::format("{}: {}; cannot move it aside to {}", what, why, aside));
    log().error("{}: {}: moved aside to {}; its windows are not sent", what, why, aside);
    return open(path);
  }
  if (size < kHeaderBytes) {
    // New, or killed while writing the very first header (no frame can follow it then).
    if (::ftruncate(sp->fd_.get(), 0) != 0) return fail_errno(what + ": truncate");
    sp->size_ = kHeaderBytes;
    if (auto s = sp->write_header(); !s) return std::unexpected(s.error());
    out.spool = std::move(sp);
    return out;
  }
  uint64_t base = le::load<uint64_t>(u8p(head->data() + 16)),
           acked = le::load<uint64_t>(u8p(head->data() + 24));
  uint64_t from = kHeaderBytes;  // file offset the owed frames start at
  if (crc(head->data() + 16, 16) != le::load<uint32_t>(u8p(head->data() + 12))) {
    log().warn("{}: header damaged (CRC): every window in the file is sent again", what);
    base = 0;
  } else if (acked < base || acked - base > size - kHeaderBytes) {
    if (size > kHeaderBytes)
      log().warn(
          "{}: acknowledged offset {} outside the file (base {}, {} bytes): every window in it is sent again",
          what, acked, base, size);
  } else {
    from = kHeaderBytes + (acked - base);
  }
  auto data = read_all(sp->fd_.get(), from, size, what);
  if (!data) return std::unexpected(data.error());
  out.scan = scan(*data, from, base + (from - kHeaderBytes));
  const SpoolScan& s = out.scan;
  if (s.corrupt_frames)
    log().warn("{}: skipped {} damaged records ({} bytes); the windows around them are kept", what,
               s.corrupt_frames, s.corrupt_bytes);
  if (s.torn_bytes) {
    log().warn("{}: cut off a torn last record ({} bytes at offset {}: killed while writing it)", what,
               s.torn_bytes, s.valid_end);
    if (::ftruncate(sp->fd_.get(), static_cast<off_t>(s.valid_end)) != 0)
      return fail_errno(what + ": truncate");
  }
  sp->base_ = base;
  sp->size_ = s.valid_end;
  sp->acked_ = base + (from - kHeaderBytes);
  if (auto h = sp->write_header(); !h) return std::unexpected(h.error());
  out.spool = std::move(sp);
  return out;
}

Status RemoteWriteSpool::write_header() {
  const auto h = header_bytes(base_, acked_);
  return pwrite_all(fd_.get(), h.data(), h.size(), 0, "remote_write spool " + path_ + ": write header");
}

Result<uint64_t> RemoteWriteSpool::append(std::string_view frames) {
  const uint64_t at = end();
  if (auto s = pwrite_all(fd_.get(), frames.data(), frames.size(), size_, "remote_write spool " + path_);
      !s) {
    // A partial write (disk full) must not leave half a frame for the next append to follow.
    if (::ftruncate(fd_.get(), static_cast<off_t>(size_)) != 0) {
      // Then the reader cuts the partial frame off as a torn tail at the next start.
    }
    return std::unexpected(s.error());
  }
  size_ += frames.size();
  return at;
}

Status RemoteWriteSpool::acknowledge_until(uint64_t owed) {
  owed = std::min(owed, end());
  if (owed <= acked_) return {};
  if (owed == end()) {
    // Nothing owed: the file shrinks back to its header. Truncated first: a crash in between
    // leaves the old `acked` past the (empty) end, which reads as "nothing owed".
    if (::ftruncate(fd_.get(), static_cast<off_t>(kHeaderBytes)) != 0)
      return fail_errno("remote_write spool " + path_ + ": truncate");
    base_ = acked_ = owed;
    size_ = kHeaderBytes;
    return write_header();
  }
  const uint64_t dead = owed - base_, live = end() - owed;
  if (dead > compact_bytes_ && dead > live) {
    if (auto s = compact(owed); s)
      return s;
    else
      log().warn("{} (the spool keeps its acknowledged head for now)", s.error().message);
  }
  acked_ = owed;
  return write_header();
}

// The owed tail copied into PATH.compact, which then replaces PATH (rename: a crash leaves one or
// the other whole, both with a correct header).
Status RemoteWriteSpool::compact(uint64_t owed) {
  const std::string tmp = path_ + ".compact", what = "remote_write spool " + path_ + ": compact";
  Fd nfd(::open(tmp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0640));
  if (!nfd.valid()) return fail_errno(what + ": open " + tmp);
  auto undo = [&](Error e) {
    ::unlink(tmp.c_str());
    return std::unexpected(std::move(e));
  };
  if (::flock(nfd.get(), LOCK_EX | LOCK_NB) != 0) return undo(Error{what + ": lock " + tmp});
  const auto h = header_bytes(owed, owed);
  if (auto s = pwrite_all(nfd.get(), h.data(), h.size(), 0, what); !s) return undo(s.error());
  uint64_t from = kHeaderBytes + (owed - base_), to = kHeaderBytes;
  while (from < size_) {
    auto chunk = read_all(fd_.get(), from, std::min<uint64_t>(size_, from + (4u << 20)), what);
    if (!chunk) return undo(chunk.error());
    if (chunk->empty()) return undo(Error{what + ": file shorter than expected"});
    if (auto s = pwrite_all(nfd.get(), chunk->data(), chunk->size(), to, what); !s) return undo(s.error());
    from += chunk->size();
    to += chunk->size();
  }
  if (::fdatasync(nfd.get()) != 0 || ::rename(tmp.c_str(), path_.c_str()) != 0)
    return undo(fail_errno(what).error());
  fd_ = std::move(nfd);
  base_ = acked_ = owed;
  size_ = to;
  return {};
}

Status RemoteWriteSpool::sync() {
  if (::fdatasync(fd_.get()) != 0) return fail_errno("remote_write spool " + path_ + ": fdatasync");
  return {};
}

}  // namespace weft::controller
