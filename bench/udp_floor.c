// Calibration for the probe benchmark: the cheapest UDP request/reply this machine can do on
// loopback at a given rate, in the same shape as `weft bench probe` (batches every millisecond,
// replies read without blocking; a blocking echo server), with no timestamps, no bookkeeping.
// Prints {"floor_rate", "cpu_percent_client", "cpu_percent_server", "replies"}.
// Usage: udp_floor RATE SECONDS
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cpu_time.h"

int main(int argc, char** argv) {
  const int rate = argc > 1 ? atoi(argv[1]) : 10000;
  const int secs = argc > 2 ? atoi(argv[2]) : 10;
  const int per_ms = rate / 1000 > 0 ? rate / 1000 : 1;
  int server = socket(AF_INET, SOCK_DGRAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  socklen_t alen = sizeof a;
  if (bind(server, (struct sockaddr*)&a, sizeof a) != 0 ||
      getsockname(server, (struct sockaddr*)&a, &alen) != 0) {
    perror("bind");
    return 1;
  }
  pid_t pid = fork();
  if (pid == 0) {
    char b[64];
    struct sockaddr_in f;
    for (;;) {
      socklen_t fl = sizeof f;
      ssize_t n = recvfrom(server, b, sizeof b, 0, (struct sockaddr*)&f, &fl);
      if (n > 0) sendto(server, b, (size_t)n, 0, (struct sockaddr*)&f, fl);
    }
  }
  close(server);
  int c = socket(AF_INET, SOCK_DGRAM, 0);
  char b[48] = {0};
  long replies = 0;
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  double self0 = 0, child0 = 0;
  for (int tick = 0; tick < (secs + 1) * 1000; tick++) {
    if (tick == 1000) {  // one second of warm-up, then measure
      self0 = self_cpu_seconds();
      child0 = proc_cpu_seconds(pid);
    }
    for (int i = 0; i < per_ms; i++) sendto(c, b, sizeof b, 0, (struct sockaddr*)&a, sizeof a);
    long ns = t0.tv_nsec + (long)(tick + 1) * 1000000L;
    struct timespec t = {t0.tv_sec + ns / 1000000000L, ns % 1000000000L};
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
    while (recv(c, b, sizeof b, MSG_DONTWAIT) > 0) replies++;
  }
  const double client = self_cpu_seconds() - self0;
  const double server_s = proc_cpu_seconds(pid) - child0;
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  printf("{\"floor_rate\":%d,\"cpu_percent_client\":%.1f,\"cpu_percent_server\":%.1f,\"replies\":%ld}\n",
         per_ms * 1000, 100.0 * client / secs, 100.0 * server_s / secs, replies);
  return 0;
}
