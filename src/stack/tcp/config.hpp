#pragma once
// Per-connection settings. Defaults follow the RFCs where they are firm and Linux where the RFCs
// leave room (each says which).
#include <cstdint>

#include "stack/tcp/congestion.hpp"
#include "stack/tcp/rto.hpp"

namespace weft::stack::tcp {

struct Config {
  uint32_t send_buffer = 256 * 1024;
  uint32_t recv_buffer = 256 * 1024;
  uint16_t mss = 1460;                  // advertised: the device MTU minus 40 (RFC 6691)
  bool nagle = true;                    // RFC 896; off = TCP_NODELAY
  bool delayed_ack = true;              // RFC 5681 4.2: ACK at least every second full segment
  int64_t delayed_ack_ns = 40'000'000;  // Linux's minimum; RFC 5681 allows up to 500 ms
  bool window_scaling = true;           // RFC 7323
  bool timestamps = true;               // RFC 7323
  CcAlgorithm congestion_control = CcAlgorithm::cubic;  // RFC 9438, Linux's default; or reno
  bool sack = true;                     // RFC 2018 blocks and RFC 6675 loss recovery when both offer it
  uint32_t initial_cwnd_segments = 10;  // RFC 6928
  bool tail_loss_probe = true;          // RFC 8985 7 (TLP): resend the tail at ~2 SRTT
  bool rack = true;  // RFC 8985 RACK loss detection (with SACK): by send times, not DupThresh
  // TSO: > 0 lets one segment of new data carry up to this many bytes (whole MSS pieces), which
  // the sink cuts into MSS-sized segments (SegmentSink::send_super_segment; a TAP or AF_PACKET
  // device hands that to the kernel's GSO). Slow start then counts every byte an ACK covers, as
  // Linux does: the peer ACKs a super-segment at once. 0 (the default): one MSS per segment.
  uint32_t tso_max = 0;
  RtoEstimator::Config rto;
  int syn_retries = 6;              // Linux tcp_syn_retries
  int synack_retries = 5;           // Linux tcp_synack_retries: a half-open entry lives 63 s at most
  int max_retransmits = 15;         // Linux tcp_retries2: then the connection times out
  int64_t msl_ns = 30'000'000'000;  // TIME-WAIT lasts 2 MSL = 60 s, as in Linux
  // At most this many TIME-WAITs of connections the application let go (time_wait.hpp, under 96
  // bytes each); past it a connection closes without the wait. Linux's tcp_max_tw_buckets on a
  // machine of 24 GiB.
  size_t max_time_wait = 131072;
  int64_t persist_max_ns = 60'000'000'000;
  // SO_OOBINLINE: the urgent byte stays in the stream. Off (Linux's default): it is taken out and
  // kept for Connection::oob_byte().
  bool oob_inline = false;
  bool keepalive = false;
  int64_t keepalive_idle_ns = 7200'000'000'000;  // RFC 1122 4.2.3.6: at least two hours
  int64_t keepalive_interval_ns = 75'000'000'000;
  int keepalive_probes = 9;
};

}  // namespace weft::stack::tcp
