// SYN flood for bench/stack_synflood.sh: N TCP SYNs with random spoofed IPv4 sources, ports and
// sequence numbers, written to one interface through an AF_PACKET socket in batches of 64
// (sendmmsg), as fast as the interface takes them, or paced to RATE SYNs a second (per batch).
//   syn_flood IFNAME DST_MAC DST_IP DST_PORT N SEED [RATE]
// Prints "sent N in S s (R/s)". Sources are 198.18.0.0/15 (RFC 2544 benchmarking space), so the
// target's SYN-ACKs go to its gateway and nowhere further.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { kBatch = 64, kLen = 14 + 20 + 24 };

static uint64_t rng_state;
static uint32_t rnd(void) {  // xorshift64*: seeded, so a run can be repeated
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return (uint32_t)((rng_state * 2685821657736338717ull) >> 32);
}

static uint16_t fold(uint32_t s) {
  while (s >> 16) s = (s & 0xffff) + (s >> 16);
  return (uint16_t)~s;
}

static uint32_t sum16(const uint8_t* p, size_t n, uint32_t s) {
  for (size_t i = 0; i + 1 < n; i += 2) s += (uint32_t)(p[i] << 8 | p[i + 1]);
  if (n & 1) s += (uint32_t)(p[n - 1] << 8);
  return s;
}

int main(int argc, char** argv) {
  if (argc != 7 && argc != 8) {
    fprintf(stderr, "usage: %s IFNAME DST_MAC DST_IP DST_PORT N SEED [RATE]\n", argv[0]);
    return 2;
  }
  unsigned mac[6];
  if (sscanf(argv[2], "%x:%x:%x:%x:%x:%x", &mac[0], &mac[1], &mac[2], &mac[3], &mac[4], &mac[5]) != 6)
    return 2;
  struct in_addr dst;
  if (inet_pton(AF_INET, argv[3], &dst) != 1) return 2;
  const uint16_t dport = (uint16_t)atoi(argv[4]);
  const long n = atol(argv[5]);
  rng_state = (uint64_t)atoll(argv[6]) * 0x9E3779B97F4A7C15ull + 1;
  const double rate = argc == 8 ? atof(argv[7]) : 0;  // SYNs a second; 0: as fast as it goes
  const int fd = socket(AF_PACKET, SOCK_RAW, 0);
  if (fd < 0) return perror("socket"), 1;
  struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_ifindex = (int)if_nametoindex(argv[1])};
  if (sll.sll_ifindex == 0 || bind(fd, (struct sockaddr*)&sll, sizeof sll) < 0) return perror("bind"), 1;
  static uint8_t frames[kBatch][kLen];
  struct iovec iov[kBatch];
  struct mmsghdr msgs[kBatch];
  memset(msgs, 0, sizeof msgs);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  long sent = 0;
  while (sent < n) {
    if (rate > 0) {  // the batch leaves when the schedule says `sent` SYNs are due, not before
      const double due = (double)sent / rate;
      struct timespec at = {t0.tv_sec + (time_t)due, t0.tv_nsec + (long)((due - (double)(time_t)due) * 1e9)};
      if (at.tv_nsec >= 1000000000L) at.tv_sec += 1, at.tv_nsec -= 1000000000L;
      while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL) != 0) {
      }
    }
    const int k = n - sent < kBatch ? (int)(n - sent) : kBatch;
    for (int i = 0; i < k; ++i) {
      uint8_t* f = frames[i];
      memset(f, 0, kLen);
      for (int j = 0; j < 6; ++j) f[j] = (uint8_t)mac[j];
      f[6] = 0x02, f[7] = 0x5f, f[8] = 0x11, f[9] = 0x22, f[10] = 0x33, f[11] = 0x44;
      f[12] = 0x08, f[13] = 0x00;
      uint8_t* ip = f + 14;
      ip[0] = 0x45, ip[2] = 0, ip[3] = 44, ip[8] = 64, ip[9] = 6;
      const uint32_t src = htonl(0xC6120000u | (rnd() & 0x1ffff));  // 198.18.0.0/15
      memcpy(ip + 12, &src, 4);
      memcpy(ip + 16, &dst, 4);
      const uint16_t ipc = fold(sum16(ip, 20, 0));
      ip[10] = (uint8_t)(ipc >> 8), ip[11] = (uint8_t)ipc;
      uint8_t* t = ip + 20;
      const uint16_t sport = (uint16_t)(1024 + rnd() % 64000);
      const uint32_t seq = rnd();
      t[0] = (uint8_t)(sport >> 8), t[1] = (uint8_t)sport, t[2] = (uint8_t)(dport >> 8),
      t[3] = (uint8_t)dport;
      t[4] = (uint8_t)(seq >> 24), t[5] = (uint8_t)(seq >> 16), t[6] = (uint8_t)(seq >> 8),
      t[7] = (uint8_t)seq;
      t[12] = 6 << 4, t[13] = 0x02, t[14] = 0xff, t[15] = 0xff;  // 24-byte header, SYN, window 65535
      t[20] = 2, t[21] = 4, t[22] = 0x05, t[23] = 0xb4;          // MSS 1460
      uint32_t s = sum16(ip + 12, 8, 0) + 6 + 24;                // pseudo-header
      const uint16_t tc = fold(sum16(t, 24, s));
      t[16] = (uint8_t)(tc >> 8), t[17] = (uint8_t)tc;
      iov[i].iov_base = f;
      iov[i].iov_len = kLen;
      msgs[i].msg_hdr.msg_iov = &iov[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
    }
    const int r = sendmmsg(fd, msgs, (unsigned)k, 0);
    if (r > 0) sent += r;
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  const double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  printf("sent %ld in %.3f s (%.0f/s)\n", sent, s, (double)sent / s);
  close(fd);
  return 0;
}
