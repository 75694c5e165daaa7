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

static double seconds(const struct timeval* t) { return (double)t->tv_sec + (double)t->tv_usec / 1e6; }

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
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  unsigned long su0 = 0, ss0 = 0, su1 = 0, ss1 = 0;
  struct rusage r0, r1;
  for (int tick = 0; tick < (secs + 1) * 1000; tick++) {
    if (tick == 1000) {  // one second of warm-up, then measure
      getrusage(RUSAGE_SELF, &r0);
      FILE* f = fopen(path, "r");
      char buf[1024] = {0};
      if (f) {
        fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
      }
      sscanf(strrchr(buf, ')') + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &su0, &ss0);
    }
    for (int i = 0; i < per_ms; i++) sendto(c, b, sizeof b, 0, (struct sockaddr*)&a, sizeof a);
    long ns = t0.tv_nsec + (long)(tick + 1) * 1000000L;
    struct timespec t = {t0.tv_sec + ns / 1000000000L, ns % 1000000000L};
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL);
    while (recv(c, b, sizeof b, MSG_DONTWAIT) > 0) replies++;
  }
  getrusage(RUSAGE_SELF, &r1);
  FILE* f = fopen(path, "r");
  char buf[1024] = {0};
  if (f) {
    fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
  }
  sscanf(strrchr(buf, ')') + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &su1, &ss1);
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  const double client =
      seconds(&r1.ru_utime) + seconds(&r1.ru_stime) - seconds(&r0.ru_utime) - seconds(&r0.ru_stime);
  const double server_s = (double)(su1 + ss1 - su0 - ss0) / (double)sysconf(_SC_CLK_TCK);
  printf("{\"floor_rate\":%d,\"cpu_percent_client\":%.1f,\"cpu_percent_server\":%.1f,\"replies\":%ld}\n",
         per_ms * 1000, 100.0 * client / secs, 100.0 * server_s / secs, replies);
  return 0;
}
