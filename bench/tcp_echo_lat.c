// Request/response latency over TCP for bench/stack_latency.sh: one connection, TCP_NODELAY,
// SIZE-byte requests each echoed back whole before the next goes out.
//   tcp_echo_lat server PORT                  a blocking echo server (a process per connection)
//   tcp_echo_lat client HOST PORT N SIZE      N round trips after 200 warm-up ones; prints
//                                             {"n":..,"median_us":..,"p99_us":..,"mean_us":..}
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static int full(int fd, char* buf, size_t n, int rd) {
  for (size_t done = 0; done < n;) {
    const ssize_t k = rd ? recv(fd, buf + done, n - done, 0) : send(fd, buf + done, n - done, 0);
    if (k <= 0) return -1;
    done += (size_t)k;
  }
  return 0;
}

int main(int argc, char** argv) {
  const int one = 1;
  if (argc == 3 && strcmp(argv[1], "server") == 0) {
    signal(SIGCHLD, SIG_IGN);
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2]))};
    if (bind(ls, (struct sockaddr*)&a, sizeof a) != 0 || listen(ls, 16) != 0) {
      perror("bind/listen");
      return 1;
    }
    for (;;) {
      int c = accept(ls, NULL, NULL);
      if (c < 0) continue;
      if (fork() == 0) {
        setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        char buf[65536];
        for (ssize_t k; (k = recv(c, buf, sizeof buf, 0)) > 0;)
          if (full(c, buf, (size_t)k, 0) != 0) break;
        _exit(0);
      }
      close(c);
    }
  }
  if (argc != 6 || strcmp(argv[1], "client") != 0) {
    fprintf(stderr, "usage: %s server PORT | client HOST PORT N SIZE\n", argv[0]);
    return 2;
  }
  const int n = atoi(argv[4]);
  const size_t size = (size_t)atoi(argv[5]);
  int s = socket(AF_INET, SOCK_STREAM, 0);
  setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[3]))};
  inet_pton(AF_INET, argv[2], &a.sin_addr);
  if (connect(s, (struct sockaddr*)&a, sizeof a) != 0) {
    perror("connect");
    return 1;
  }
  char* buf = calloc(1, size);
  double* rtt = calloc((size_t)n, sizeof *rtt);
  for (int i = -200; i < n; ++i) {
    buf[0] = (char)i;
    const double t0 = now_us();
    if (full(s, buf, size, 0) != 0 || full(s, buf, size, 1) != 0 || buf[0] != (char)i) {
      fprintf(stderr, "echo failed at %d\n", i);
      return 1;
    }
    if (i >= 0) rtt[i] = now_us() - t0;
  }
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += rtt[i];
  qsort(rtt, (size_t)n, sizeof *rtt, cmp);
  printf("{\"n\":%d,\"median_us\":%.2f,\"p99_us\":%.2f,\"mean_us\":%.2f}\n", n, rtt[n / 2],
         rtt[(size_t)(n * 0.99)], sum / n);
  close(s);
  return 0;
}
