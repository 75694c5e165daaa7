/* The libc names libweft_preload.so interposes, each a thin forwarder to the C++ layer
 * (weft_px_*). Written in C, without the libc headers that declare these names: C++ cannot
 * redefine them against glibc's exception specifications and transparent unions
 * (__SOCKADDR_ARG), so pointers to structures travel as void* here. The _chk variants are what
 * programs built with _FORTIFY_SOURCE call (Debian builds its packages so). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
typedef long ssize_t; /* no <sys/types.h>: it declares select() */
typedef long off_t;

#define EXPORT __attribute__((visibility("default")))
typedef unsigned int wsocklen;

extern void __chk_fail(void) __attribute__((noreturn));

int weft_px_socket(int, int, int);
int weft_px_bind(int, const void*, wsocklen);
int weft_px_listen(int, int);
int weft_px_accept4(int, void*, wsocklen*, int, int);
int weft_px_connect(int, const void*, wsocklen);
ssize_t weft_px_read(int, void*, size_t);
ssize_t weft_px_write(int, const void*, size_t);
ssize_t weft_px_readv(int, const void*, int);
ssize_t weft_px_writev(int, const void*, int);
ssize_t weft_px_send(int, const void*, size_t, int);
ssize_t weft_px_recv(int, void*, size_t, int);
ssize_t weft_px_sendto(int, const void*, size_t, int, const void*, wsocklen);
ssize_t weft_px_recvfrom(int, void*, size_t, int, void*, wsocklen*);
ssize_t weft_px_sendmsg(int, const void*, int);
ssize_t weft_px_recvmsg(int, void*, int);
int weft_px_sendmmsg(int, void*, unsigned, int);
int weft_px_recvmmsg(int, void*, unsigned, int, void*);
int weft_px_close(int);
int weft_px_shutdown(int, int);
int weft_px_getsockname(int, void*, wsocklen*);
int weft_px_getpeername(int, void*, wsocklen*);
int weft_px_getsockopt(int, int, int, void*, wsocklen*);
int weft_px_setsockopt(int, int, int, const void*, wsocklen);
int weft_px_fcntl(int, int, uintptr_t);
int weft_px_ioctl(int, unsigned long, void*);
int weft_px_poll(void*, unsigned long, int);
int weft_px_ppoll(void*, unsigned long, const void*, const void*);
int weft_px_select(int, void*, void*, void*, void*);
int weft_px_pselect(int, void*, void*, void*, const void*, const void*);
int weft_px_epoll_create1(int, int);
int weft_px_epoll_ctl(int, int, int, void*);
int weft_px_epoll_pwait(int, void*, int, int, const void*);
int weft_px_epoll_pwait2(int, void*, int, const void*, const void*);
ssize_t weft_px_splice(int, void*, int, void*, size_t, unsigned);
ssize_t weft_px_sendfile(int, int, off_t*, size_t);
int weft_px_dup(int);
int weft_px_dup3(int, int, int, int);
void weft_px_init(void);

__attribute__((constructor)) static void weft_preload_init(void) { weft_px_init(); }

EXPORT int socket(int d, int t, int p) { return weft_px_socket(d, t, p); }
EXPORT int bind(int fd, const void* a, wsocklen l) { return weft_px_bind(fd, a, l); }
EXPORT int listen(int fd, int b) { return weft_px_listen(fd, b); }
EXPORT int accept(int fd, void* a, wsocklen* l) { return weft_px_accept4(fd, a, l, 0, 0); }
EXPORT int accept4(int fd, void* a, wsocklen* l, int f) { return weft_px_accept4(fd, a, l, f, 1); }
EXPORT int connect(int fd, const void* a, wsocklen l) { return weft_px_connect(fd, a, l); }
EXPORT ssize_t read(int fd, void* b, size_t n) { return weft_px_read(fd, b, n); }
EXPORT ssize_t __read_chk(int fd, void* b, size_t n, size_t cap) {
  if (n > cap) __chk_fail();
  return weft_px_read(fd, b, n);
}
EXPORT ssize_t write(int fd, const void* b, size_t n) { return weft_px_write(fd, b, n); }
EXPORT ssize_t readv(int fd, const void* v, int n) { return weft_px_readv(fd, v, n); }
EXPORT ssize_t writev(int fd, const void* v, int n) { return weft_px_writev(fd, v, n); }
EXPORT ssize_t send(int fd, const void* b, size_t n, int f) { return weft_px_send(fd, b, n, f); }
EXPORT ssize_t recv(int fd, void* b, size_t n, int f) { return weft_px_recv(fd, b, n, f); }
EXPORT ssize_t __recv_chk(int fd, void* b, size_t n, size_t cap, int f) {
  if (n > cap) __chk_fail();
  return weft_px_recv(fd, b, n, f);
}
EXPORT ssize_t sendto(int fd, const void* b, size_t n, int f, const void* a, wsocklen l) {
  return weft_px_sendto(fd, b, n, f, a, l);
}
EXPORT ssize_t recvfrom(int fd, void* b, size_t n, int f, void* a, wsocklen* l) {
  return weft_px_recvfrom(fd, b, n, f, a, l);
}
EXPORT ssize_t __recvfrom_chk(int fd, void* b, size_t n, size_t cap, int f, void* a, wsocklen* l) {
  if (n > cap) __chk_fail();
  return weft_px_recvfrom(fd, b, n, f, a, l);
}
EXPORT ssize_t sendmsg(int fd, const void* m, int f) { return weft_px_sendmsg(fd, m, f); }
EXPORT ssize_t recvmsg(int fd, void* m, int f) { return weft_px_recvmsg(fd, m, f); }
EXPORT int sendmmsg(int fd, void* v, unsigned n, int f) { return weft_px_sendmmsg(fd, v, n, f); }
EXPORT int recvmmsg(int fd, void* v, unsigned n, int f, void* t) { return weft_px_recvmmsg(fd, v, n, f, t); }
EXPORT int close(int fd) { return weft_px_close(fd); }
EXPORT int shutdown(int fd, int how) { return weft_px_shutdown(fd, how); }
EXPORT int getsockname(int fd, void* a, wsocklen* l) { return weft_px_getsockname(fd, a, l); }
EXPORT int getpeername(int fd, void* a, wsocklen* l) { return weft_px_getpeername(fd, a, l); }
EXPORT int getsockopt(int fd, int lv, int o, void* v, wsocklen* l) {
  return weft_px_getsockopt(fd, lv, o, v, l);
}
EXPORT int setsockopt(int fd, int lv, int o, const void* v, wsocklen l) {
  return weft_px_setsockopt(fd, lv, o, v, l);
}
/* fcntl's third argument is an int, a long or a pointer by command: read as the widest. */
EXPORT int fcntl(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  uintptr_t arg = va_arg(ap, uintptr_t);
  va_end(ap);
  return weft_px_fcntl(fd, cmd, arg);
}
EXPORT int fcntl64(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  uintptr_t arg = va_arg(ap, uintptr_t);
  va_end(ap);
  return weft_px_fcntl(fd, cmd, arg);
}
EXPORT int ioctl(int fd, unsigned long req, ...) {
  va_list ap;
  va_start(ap, req);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  return weft_px_ioctl(fd, req, arg);
}
EXPORT int poll(void* fds, unsigned long n, int t) { return weft_px_poll(fds, n, t); }
EXPORT int __poll_chk(void* fds, unsigned long n, int t, size_t cap) {
  if (cap / 8 < n) __chk_fail(); /* sizeof(struct pollfd) */
  return weft_px_poll(fds, n, t);
}
EXPORT int ppoll(void* fds, unsigned long n, const void* ts, const void* mask) {
  return weft_px_ppoll(fds, n, ts, mask);
}
EXPORT int __ppoll_chk(void* fds, unsigned long n, const void* ts, const void* mask, size_t cap) {
  if (cap / 8 < n) __chk_fail();
  return weft_px_ppoll(fds, n, ts, mask);
}
EXPORT int select(int n, void* r, void* w, void* e, void* tv) { return weft_px_select(n, r, w, e, tv); }
EXPORT int pselect(int n, void* r, void* w, void* e, const void* ts, const void* mask) {
  return weft_px_pselect(n, r, w, e, ts, mask);
}
EXPORT int epoll_create(int size) { return weft_px_epoll_create1(size, 0); }
EXPORT int epoll_create1(int flags) { return weft_px_epoll_create1(1, flags); }
EXPORT int epoll_ctl(int ep, int op, int fd, void* ev) { return weft_px_epoll_ctl(ep, op, fd, ev); }
EXPORT int epoll_wait(int ep, void* ev, int n, int t) { return weft_px_epoll_pwait(ep, ev, n, t, NULL); }
EXPORT int epoll_pwait(int ep, void* ev, int n, int t, const void* mask) {
  return weft_px_epoll_pwait(ep, ev, n, t, mask);
}
EXPORT int epoll_pwait2(int ep, void* ev, int n, const void* ts, const void* mask) {
  return weft_px_epoll_pwait2(ep, ev, n, ts, mask);
}
EXPORT ssize_t splice(int in, void* off_in, int out, void* off_out, size_t len, unsigned flags) {
  return weft_px_splice(in, off_in, out, off_out, len, flags);
}
EXPORT ssize_t sendfile(int out, int in, off_t* off, size_t n) { return weft_px_sendfile(out, in, off, n); }
EXPORT ssize_t sendfile64(int out, int in, off_t* off, size_t n) { return weft_px_sendfile(out, in, off, n); }
EXPORT int dup(int fd) { return weft_px_dup(fd); }
EXPORT int dup2(int fd, int to) { return weft_px_dup3(fd, to, 0, 0); }
EXPORT int dup3(int fd, int to, int flags) { return weft_px_dup3(fd, to, flags, 1); }
