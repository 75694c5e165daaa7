#include "net/timestamping.hpp"

#include <linux/errqueue.h>
#include <linux/net_tstamp.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cstring>

#include "base/clock.hpp"
#include "net/address.hpp"
#include "net/socket.hpp"

namespace weft::net {

Status enable_timestamping(int fd, bool tx, unsigned extra) {
  unsigned flags = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_RX_HARDWARE | SOF_TIMESTAMPING_SOFTWARE |
                   SOF_TIMESTAMPING_RAW_HARDWARE;
  if (tx) {
    flags |= SOF_TIMESTAMPING_TX_SOFTWARE | SOF_TIMESTAMPING_TX_HARDWARE | SOF_TIMESTAMPING_OPT_ID |
             SOF_TIMESTAMPING_OPT_TSONLY;
  }
  flags |= extra;
  if (setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof flags) != 0)
    return fail_errno("setsockopt(SO_TIMESTAMPING)");
  return {};
}

namespace {
bool read_scm_timestamping(const cmsghdr* c, KernelTime& out) {
  if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_TIMESTAMPING) return false;
  if (c->cmsg_len < CMSG_LEN(sizeof(scm_timestamping))) return false;
  scm_timestamping ts;
  std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
  out.software_ns = timespec_ns(ts.ts[0]);
  out.hardware_ns = timespec_ns(ts.ts[2]);
  return out.software_ns != 0 || out.hardware_ns != 0;
}
}  // namespace

bool parse_rx_time(const msghdr& msg, KernelTime& out) {
  out = {};
  if (msg.msg_controllen == 0) return false;
  for (auto* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(const_cast<msghdr*>(&msg), c)) {
    if (read_scm_timestamping(c, out)) return true;
  }
  return false;
}

bool parse_tx_timestamp(const msghdr& msg, TxTimestamp& out) {
  out = {};
  bool have_time = false, have_id = false;
  for (auto* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(const_cast<msghdr*>(&msg), c)) {
    if (read_scm_timestamping(c, out.time)) {
      have_time = true;
      continue;
    }
    const bool err = (c->cmsg_level == SOL_IP && c->cmsg_type == IP_RECVERR) ||
                     (c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_RECVERR);
    if (err && c->cmsg_len >= CMSG_LEN(sizeof(sock_extended_err))) {
      sock_extended_err ee;
      std::memcpy(&ee, CMSG_DATA(c), sizeof ee);
      if (ee.ee_errno == ENOMSG && ee.ee_origin == SO_EE_ORIGIN_TIMESTAMPING &&
          ee.ee_info == SCM_TSTAMP_SND) {
        out.id = ee.ee_data;
        have_id = true;
      }
    }
  }
  return have_time && have_id;
}

size_t write_no_tx_timestamp(char* buf, size_t cap) {
  if (cap < CMSG_SPACE(sizeof(uint32_t))) return 0;
  std::memset(buf, 0, CMSG_SPACE(sizeof(uint32_t)));
  auto* c = reinterpret_cast<cmsghdr*>(buf);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SO_TIMESTAMPING;
  c->cmsg_len = CMSG_LEN(sizeof(uint32_t));
  const uint32_t none = 0;
  std::memcpy(CMSG_DATA(c), &none, sizeof none);
  return CMSG_SPACE(sizeof(uint32_t));
}

namespace {
bool probe_skip_ids() {
  for (const char* ip : {"127.0.0.1", "::1"}) {
    auto addr = SocketAddress::parse_ip(ip, 0);
    auto fd = udp_socket(*addr);
    if (!fd || !enable_timestamping(fd->get(), true)) continue;
    auto self = local_address(fd->get());
    if (!self) continue;
    char byte = 0;
    iovec iov{&byte, 1};
    alignas(cmsghdr) char ctrl[64];
    msghdr m{};
    m.msg_name = self->sa();
    m.msg_namelen = self->length;
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = ctrl;
    m.msg_controllen = write_no_tx_timestamp(ctrl, sizeof ctrl);
    if (sendmsg(fd->get(), &m, 0) != 1) continue;
    m.msg_control = nullptr;
    m.msg_controllen = 0;
    if (sendmsg(fd->get(), &m, 0) != 1) continue;
    for (int tries = 0; tries < 100; ++tries) {
      char data[16];
      alignas(cmsghdr) char rctrl[kControlBytes];
      iovec riov{data, sizeof data};
      msghdr r{};
      r.msg_iov = &riov;
      r.msg_iovlen = 1;
      r.msg_control = rctrl;
      r.msg_controllen = sizeof rctrl;
      if (recvmsg(fd->get(), &r, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) {
        usleep(1000);
        continue;
      }
      TxTimestamp ts;
      if (parse_tx_timestamp(r, ts)) return ts.id == 0;  // the second datagram got the first number
    }
  }
  return false;  // unknown: assume every datagram takes a number
}
}  // namespace

bool untimestamped_sends_skip_ids() {
  static const bool skip = probe_skip_ids();
  return skip;
}

}  // namespace weft::net
