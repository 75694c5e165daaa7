#pragma once
// Addressing and transport attributes used to bring a QP up (and to build UD address handles).
#include <infiniband/verbs.h>

#include <cstdint>

#include "rdma/memory_region.hpp"

namespace weft::rdma {

// What a peer needs to know to reach a QP.
struct QpAddress {
  uint32_t qpn = 0;
  uint32_t psn = 0;
  uint16_t lid = 0;  // InfiniBand; 0 on RoCE
  ibv_gid gid{};     // RoCE (and IB across subnets)
};

struct ConnectOptions {
  uint8_t port = 1;
  int gid_index = 1;  // source GID index; -1 routes by LID without a GRH (InfiniBand only)
  ibv_mtu mtu = IBV_MTU_1024;
  uint8_t sl = 0;
  uint8_t traffic_class = 0;
  uint8_t hop_limit = 64;
  uint8_t timeout = 14;  // local ACK timeout, 4.096us * 2^timeout
  uint8_t retry_cnt = 7;
  uint8_t rnr_retry = 7;       // 7 = retry forever; 0 fails at once with IBV_WC_RNR_RETRY_EXC_ERR
  uint8_t min_rnr_timer = 12;  // 0.64 ms
  uint8_t max_rd_atomic = 1;   // outstanding RDMA READs/atomics, initiated and served (rxe allows 128)
  uint32_t qkey = 0x11111111;  // UD
  int access = access::all;    // remote access granted to the peer (RC; UC keeps only writes)
};

// The address vector for a destination (QP path or UD address handle).
inline ibv_ah_attr make_ah_attr(const ConnectOptions& o, const ibv_gid& dgid, uint16_t dlid) {
  ibv_ah_attr ah{};
  ah.dlid = dlid;
  ah.sl = o.sl;
  ah.port_num = o.port;
  if (o.gid_index >= 0) {
    ah.is_global = 1;
    ah.grh.dgid = dgid;
    ah.grh.sgid_index = static_cast<uint8_t>(o.gid_index);
    ah.grh.hop_limit = o.hop_limit;
    ah.grh.traffic_class = o.traffic_class;
  }
  return ah;
}

}  // namespace weft::rdma
