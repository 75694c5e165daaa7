#include "posix/real_calls.hpp"

#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

namespace weft::posix {
namespace {

RealCalls g_real{};
std::once_flag g_once;

template <typename F>
void resolve(F& f, const char* name) {
  f = reinterpret_cast<F>(::dlsym(RTLD_NEXT, name));
  if (f == nullptr) {  // a libc without it: nothing sensible can run
    const char* a = "weft-preload: the C library has no ";
    ::syscall(SYS_write, 2, a, std::strlen(a));
    ::syscall(SYS_write, 2, name, std::strlen(name));
    ::syscall(SYS_write, 2, "\n", 1);
    std::abort();
  }
}

void resolve_all() {
  RealCalls& r = g_real;
  resolve(r.socket, "socket");
  resolve(r.bind, "bind");
  resolve(r.listen, "listen");
  resolve(r.accept, "accept");
  resolve(r.accept4, "accept4");
  resolve(r.connect, "connect");
  resolve(r.read, "read");
  resolve(r.write, "write");
  resolve(r.readv, "readv");
  resolve(r.writev, "writev");
  resolve(r.send, "send");
  resolve(r.recv, "recv");
  resolve(r.sendto, "sendto");
  resolve(r.recvfrom, "recvfrom");
  resolve(r.sendmsg, "sendmsg");
  resolve(r.recvmsg, "recvmsg");
  resolve(r.sendmmsg, "sendmmsg");
  resolve(r.recvmmsg, "recvmmsg");
  resolve(r.close, "close");
  resolve(r.shutdown, "shutdown");
  resolve(r.getsockname, "getsockname");
  resolve(r.getpeername, "getpeername");
  resolve(r.getsockopt, "getsockopt");
  resolve(r.setsockopt, "setsockopt");
  resolve(r.fcntl, "fcntl");
  resolve(r.ioctl, "ioctl");
  resolve(r.poll, "poll");
  resolve(r.ppoll, "ppoll");
  resolve(r.select, "select");
  resolve(r.pselect, "pselect");
  resolve(r.epoll_create, "epoll_create");
  resolve(r.epoll_create1, "epoll_create1");
  resolve(r.epoll_ctl, "epoll_ctl");
  resolve(r.epoll_wait, "epoll_wait");
  resolve(r.epoll_pwait, "epoll_pwait");
  resolve(r.sendfile, "sendfile");
  resolve(r.dup, "dup");
  resolve(r.dup2, "dup2");
  resolve(r.dup3, "dup3");
}

}  // namespace

const RealCalls& real() {
  std::call_once(g_once, resolve_all);
  return g_real;
}

}  // namespace weft::posix
