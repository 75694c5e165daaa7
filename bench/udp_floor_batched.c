// Calibration for the probe benchmark, batched: the cheapest request/reply on loopback in the
// shape the probe engine now has (both sides wake every TICK_US, sendmmsg/recvmmsg, kernel
// timestamps as asked), with no wire format, no matching, no windows and no follow-ups. What the
// engine costs above this is its own work; what this costs is the kernel's price of the datagrams,
// stamps and wake-ups on this machine.
// Usage: udp_floor_batched RATE SECONDS TICK_US STAMPS [ADDRESSES]
//   STAMPS 0: none; 1: receive stamps; 2: receive stamps and transmit stamps read back from the
//   error queue (what prober and responder both need).
//   ADDRESSES (default 1): the datagrams go round-robin to this many loopback addresses
//   (127.1.x.y as in `weft bench probe`); the echo side then listens on all addresses and replies
//   from the address each datagram came to (IP_PKTINFO), as the responder does. 1: 127.0.0.1.
// RATE below one datagram per tick is kept exact: a tick sends floor(k * RATE * TICK) - sent.
// Prints {"floor_batched_rate","tick_us","stamps","addresses","cpu_percent_client","cpu_percent_server",
// "replies"}.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <linux/net_tstamp.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cpu_time.h"

#define BATCH 256

static char bufs[BATCH][64], ctl[BATCH][256];
static char reply_ctl[BATCH][CMSG_SPACE(sizeof(struct in_pktinfo))];
static int pktinfo = 0;  // the echo side replies from the address each datagram came to
static struct sockaddr_in from[BATCH];
static struct mmsghdr msgs[BATCH];
static struct iovec iovs[BATCH];

static void sleep_tick(struct timespec* t, long us) {
  t->tv_nsec += us * 1000;
  while (t->tv_nsec >= 1000000000L) {
    t->tv_nsec -= 1000000000L;
    t->tv_sec++;
  }
  clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, t, NULL);
}

// 4 MB buffers, as the engine's sockets have (net/socket.cpp): at 100,000/s a 5 ms tick queues 500
// datagrams, more than the default 208 KB holds.
static void big_buffers(int fd) {
  int sz = 4 << 20;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
}

static void enable_stamps(int fd, int level) {
  big_buffers(fd);
  if (level == 0) return;
  unsigned f = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;
  if (level > 1) f |= SOF_TIMESTAMPING_TX_SOFTWARE | SOF_TIMESTAMPING_OPT_ID | SOF_TIMESTAMPING_OPT_TSONLY;
  setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &f, sizeof f);
}

// Headers are wired once; after a call only the entries it filled (or the echo changed) are
// re-armed, and error-queue reads pass no data buffer (OPT_TSONLY stamps carry none): the same
// receive work as the engine's net::RecvBatch, so the floor is not inflated by its own setup.
static struct mmsghdr emsgs[BATCH];
static char ectl[BATCH][256];

static void arm(int i, int with_name) {
  iovs[i].iov_base = bufs[i];
  iovs[i].iov_len = sizeof bufs[i];
  msgs[i].msg_hdr.msg_name = with_name ? &from[i] : NULL;
  msgs[i].msg_hdr.msg_namelen = with_name ? sizeof from[i] : 0;
  msgs[i].msg_hdr.msg_iov = &iovs[i];
  msgs[i].msg_hdr.msg_iovlen = 1;
  msgs[i].msg_hdr.msg_control = ctl[i];
  msgs[i].msg_hdr.msg_controllen = sizeof ctl[i];
}

// Reads everything waiting (data or error queue); returns how many messages.
static int drain(int fd, int flags, int with_name) {
  static int wired = 0, used = 0, eused = BATCH;
  if (!wired) {
    for (int i = 0; i < BATCH; i++) arm(i, with_name);
    for (int i = 0; i < BATCH; i++) emsgs[i].msg_hdr.msg_control = ectl[i];
    wired = 1;
  }
  const int errq = flags & MSG_ERRQUEUE;
  int total = 0;
  for (;;) {
    if (errq) {
      for (int i = 0; i < eused; i++) emsgs[i].msg_hdr.msg_controllen = sizeof ectl[i];
    } else {
      for (int i = 0; i < used; i++) arm(i, with_name);
    }
    int n = recvmmsg(fd, errq ? emsgs : msgs, BATCH, flags | MSG_DONTWAIT, NULL);
    if (errq)
      eused = n > 0 ? n : 0;
    else
      used = n > 0 ? n : 0;
    if (n <= 0) return total;
    total += n;
    if (!errq && with_name) {  // echo them back, in one call
      for (int i = 0; i < n; i++) {
        iovs[i].iov_len = msgs[i].msg_len;
        struct in_pktinfo src;
        int have = 0;
        if (pktinfo) {
          for (struct cmsghdr* c = CMSG_FIRSTHDR(&msgs[i].msg_hdr); c; c = CMSG_NXTHDR(&msgs[i].msg_hdr, c))
            if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
              struct in_pktinfo got;
              memcpy(&got, CMSG_DATA(c), sizeof got);
              memset(&src, 0, sizeof src);
              src.ipi_spec_dst = got.ipi_addr;
              have = 1;
            }
        }
        if (have) {
          struct cmsghdr* c = (struct cmsghdr*)reply_ctl[i];
          c->cmsg_level = IPPROTO_IP;
          c->cmsg_type = IP_PKTINFO;
          c->cmsg_len = CMSG_LEN(sizeof src);
          memcpy(CMSG_DATA(c), &src, sizeof src);
          msgs[i].msg_hdr.msg_control = reply_ctl[i];
          msgs[i].msg_hdr.msg_controllen = sizeof reply_ctl[i];
        } else {
          msgs[i].msg_hdr.msg_control = NULL;
          msgs[i].msg_hdr.msg_controllen = 0;
        }
      }
      sendmmsg(fd, msgs, (unsigned)n, 0);
    }
    if (n < BATCH) return total;
  }
}

int main(int argc, char** argv) {
  if (argc != 5 && argc != 6) {
    fprintf(stderr, "usage: %s RATE SECONDS TICK_US STAMPS(0|1|2) [ADDRESSES]\n", argv[0]);
    return 2;
  }
  const int rate = atoi(argv[1]), secs = atoi(argv[2]), tick_us = atoi(argv[3]), stamps = atoi(argv[4]);
  const int naddr = argc == 6 ? atoi(argv[5]) : 1;
  if (rate <= 0 || secs <= 0 || tick_us <= 0 || stamps < 0 || stamps > 2 || naddr < 1 || naddr > 64000)
    return 2;
  if ((long)rate * tick_us / 1000000 > 64 * BATCH) return 2;  // keep a tick's sends bounded
  int server = socket(AF_INET, SOCK_DGRAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET};
  inet_pton(AF_INET, naddr == 1 ? "127.0.0.1" : "0.0.0.0", &a.sin_addr);
  if (naddr > 1) {
    int on = 1;
    setsockopt(server, IPPROTO_IP, IP_PKTINFO, &on, sizeof on);
    pktinfo = 1;
  }
  socklen_t alen = sizeof a;
  if (bind(server, (struct sockaddr*)&a, sizeof a) != 0 ||
      getsockname(server, (struct sockaddr*)&a, &alen) != 0) {
    perror("bind");
    return 1;
  }
  pid_t pid = fork();
  if (pid == 0) {  // the echo side: wake every tick, answer everything, read its own tx stamps
    enable_stamps(server, stamps);
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    for (;;) {
      sleep_tick(&t, tick_us);
      drain(server, 0, 1);
      if (stamps > 1) drain(server, MSG_ERRQUEUE, 0);
    }
  }
  close(server);
  int c = socket(AF_INET, SOCK_DGRAM, 0);
  enable_stamps(c, stamps);
  static struct mmsghdr sm[BATCH];
  static struct iovec siov[BATCH];
  static char sb[BATCH][48];
  // The destinations, round-robin: 127.1.(k / 250).(k % 250 + 1) as in `weft bench probe`.
  struct sockaddr_in* dst = calloc((size_t)naddr, sizeof *dst);
  for (int k = 0; k < naddr; k++) {
    dst[k] = a;
    if (naddr > 1)
      dst[k].sin_addr.s_addr =
          htonl((127u << 24) | (1u << 16) | ((unsigned)(k / 250) << 8) | (unsigned)(k % 250 + 1));
  }
  long next_dst = 0;
  for (int i = 0; i < BATCH; i++) {
    siov[i].iov_base = sb[i];
    siov[i].iov_len = sizeof sb[i];
    sm[i].msg_hdr.msg_namelen = sizeof a;
    sm[i].msg_hdr.msg_iov = &siov[i];
    sm[i].msg_hdr.msg_iovlen = 1;
  }
  long replies = 0, sent = 0;
  double self0 = 0, child0 = 0, wall0 = 0;
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  const long warmup = 1000000L / tick_us, ticks = (long)(secs + 1) * 1000000L / tick_us;
  for (long k = 0; k < ticks; k++) {
    if (k == warmup) {  // one second of warm-up, then measure
      self0 = self_cpu_seconds();
      child0 = proc_cpu_seconds(pid);
      wall0 = mono_seconds();
      replies = 0;
    }
    const long due = (long)((double)(k + 1) * rate * tick_us / 1e6) - sent;
    // More than BATCH due (above 51,200/s at 5 ms ticks): several sendmmsg calls, as the engine makes.
    for (long off = 0; off < due; off += BATCH) {
      const long n = due - off < BATCH ? due - off : BATCH;
      for (long i = 0; i < n; i++) sm[i].msg_hdr.msg_name = &dst[next_dst++ % naddr];
      sendmmsg(c, sm, (unsigned)n, 0);
    }
    sent += due;
    sleep_tick(&t, tick_us);
    replies += drain(c, 0, 0);
    if (stamps > 1) drain(c, MSG_ERRQUEUE, 0);
  }
  const double client = self_cpu_seconds() - self0;
  const double server_s = proc_cpu_seconds(pid) - child0;
  const double wall = mono_seconds() - wall0;  // the interval measured, as the engine divides by
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  printf(
      "{\"floor_batched_rate\":%d,\"tick_us\":%d,\"stamps\":%d,\"addresses\":%d,\"cpu_percent_client\":%.3f,"
      "\"cpu_percent_server\":%.3f,\"replies\":%ld}\n",
      rate, tick_us, stamps, naddr, 100.0 * client / wall, 100.0 * server_s / wall, replies);
  free(dst);
  return 0;
}
