#include "net/timestamping.hpp"

#include <linux/errqueue.h>
#include <linux/net_tstamp.h>
#include <netinet/in.h>

#include <cstring>

#include "base/clock.hpp"

namespace weft::net {

Status enable_timestamping(int fd, bool tx) {
  unsigned flags = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_RX_HARDWARE | SOF_TIMESTAMPING_SOFTWARE |
                   SOF_TIMESTAMPING_RAW_HARDWARE;
  if (tx) {
    flags |= SOF_TIMESTAMPING_TX_SOFTWARE | SOF_TIMESTAMPING_TX_HARDWARE | SOF_TIMESTAMPING_OPT_ID |
             SOF_TIMESTAMPING_OPT_TSONLY;
  }
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
      if (ee.ee_errno == ENOMSG && ee.ee_origin == SO_EE_ORIGIN_TIMESTAMPING && ee.ee_info == SCM_TSTAMP_SND) {
        out.id = ee.ee_data;
        have_id = true;
      }
    }
  }
  return have_time && have_id;
}

}  // namespace weft::net
