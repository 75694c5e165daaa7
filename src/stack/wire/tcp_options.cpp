#include "stack/wire/tcp_options.hpp"

#include <algorithm>

#include "base/big_endian.hpp"

namespace weft::stack::wire {

// As Linux's tcp_parse_options: a list that breaks (a length below 2, or past the end) ends the
// parse and keeps what came before it; a known kind with the wrong length is skipped by its
// length. So a SYN whose options are damaged is answered, without the options that could not be
// read, rather than dropped.
ParseError parse_tcp_options(Bytes d, TcpOptions& out) {
  out = TcpOptions{};
  size_t i = 0;
  while (i < d.size()) {
    const uint8_t kind = d[i];
    if (kind == tcpopt::eol) break;
    if (kind == tcpopt::nop) {
      ++i;
      continue;
    }
    if (i + 1 >= d.size()) break;
    const size_t len = d[i + 1];
    if (len < 2 || i + len > d.size()) break;  // "silly options", partial options
    const uint8_t* v = d.data() + i + 2;
    switch (kind) {
      case tcpopt::mss:
        if (len != 4) break;
        out.has_mss = true;
        out.mss = be::load<uint16_t>(v);
        break;
      case tcpopt::wscale:
        if (len != 3) break;
        out.has_wscale = true;
        out.wscale = v[0];
        break;
      case tcpopt::sack_permitted:
        if (len != 2) break;
        out.sack_permitted = true;
        break;
      case tcpopt::sack: {
        const size_t n = (len - 2) / 8;
        if ((len - 2) % 8 != 0 || n == 0 || n > kMaxSackBlocks) break;
        out.sack_count = static_cast<uint8_t>(n);
        for (size_t b = 0; b < n; ++b)
          out.sack[b] = {be::load<uint32_t>(v + 8 * b), be::load<uint32_t>(v + 8 * b + 4)};
        break;
      }
      case tcpopt::timestamps:
        if (len != 10) break;
        out.has_timestamps = true;
        out.ts_val = be::load<uint32_t>(v);
        out.ts_ecr = be::load<uint32_t>(v + 4);
        break;
      default:
        break;  // unknown: skipped
    }
    i += len;
  }
  return ParseError::ok;
}

namespace {
// Bytes of everything but SACK, and how many SACK blocks then fit.
size_t fixed_len(const TcpOptions& o) {
  size_t n = 0;
  if (o.has_mss) n += 4;
  if (o.has_timestamps)
    n += 12;  // SACK-permitted + TS, or NOP NOP + TS
  else if (o.sack_permitted)
    n += 4;  // NOP NOP SACK-permitted
  if (o.has_wscale) n += 4;
  return n;
}
size_t sack_fit(const TcpOptions& o) {
  const size_t room = kTcpMaxOptions - std::min(fixed_len(o), kTcpMaxOptions);
  const size_t fit = room >= 4 ? (room - 4) / 8 : 0;
  return std::min<size_t>({o.sack_count, kMaxSackBlocks, fit});
}
}  // namespace

size_t tcp_options_len(const TcpOptions& o) {
  const size_t blocks = sack_fit(o);
  return fixed_len(o) + (blocks ? 4 + 8 * blocks : 0);
}

size_t emit_tcp_options(MutBytes out, const TcpOptions& o) {
  if (out.size() < tcp_options_len(o)) return 0;
  uint8_t* p = out.data();
  if (o.has_mss) {
    p[0] = tcpopt::mss;
    p[1] = 4;
    be::store<uint16_t>(p + 2, o.mss);
    p += 4;
  }
  if (o.has_timestamps) {
    if (o.sack_permitted) {
      p[0] = tcpopt::sack_permitted;
      p[1] = 2;
    } else {
      p[0] = p[1] = tcpopt::nop;
    }
    p[2] = tcpopt::timestamps;
    p[3] = 10;
    be::store<uint32_t>(p + 4, o.ts_val);
    be::store<uint32_t>(p + 8, o.ts_ecr);
    p += 12;
  } else if (o.sack_permitted) {
    p[0] = p[1] = tcpopt::nop;
    p[2] = tcpopt::sack_permitted;
    p[3] = 2;
    p += 4;
  }
  if (o.has_wscale) {
    p[0] = tcpopt::nop;
    p[1] = tcpopt::wscale;
    p[2] = 3;
    p[3] = o.wscale;
    p += 4;
  }
  if (const size_t blocks = sack_fit(o)) {
    p[0] = p[1] = tcpopt::nop;
    p[2] = tcpopt::sack;
    p[3] = static_cast<uint8_t>(2 + 8 * blocks);
    p += 4;
    for (size_t b = 0; b < blocks; ++b, p += 8) {
      be::store<uint32_t>(p, o.sack[b].left);
      be::store<uint32_t>(p + 4, o.sack[b].right);
    }
  }
  return static_cast<size_t>(p - out.data());
}

}  // namespace weft::stack::wire
