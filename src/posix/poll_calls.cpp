// poll/ppoll/select/pselect and epoll over weft sockets and kernel descriptors together.
//
// A weft socket's descriptor is an eventfd that is readable while the socket has something to
// report (runtime.hpp), so the kernel's own poll and epoll wait on a mix; the events reported for
// a weft socket are then computed from the stack (Runtime::poll_bits), never taken from the
// eventfd. epoll keeps a shadow of each instance's registrations: the kernel holds every descriptor
// with the descriptor number as its data, and epoll_wait puts the program's data and events back.
// A weft socket is registered for EPOLLIN on its eventfd (with the program's EPOLLET/EPOLLONESHOT),
// and EPOLLOUT interest is counted on the socket so the eventfd also signals room to write.
// An eventfd may be left set after a read emptied its socket (runtime.hpp): a wait that finds
// nothing to report for a weft socket clears it before sleeping (poll), or drops the report and
// clears it (epoll; a one-shot registration is armed again, the report was not the program's).
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <unordered_map>
#include <vector>

#include "posix/real_calls.hpp"
#include "posix/runtime.hpp"
#include "posix/sock_calls.hpp"

using namespace weft;
using namespace weft::posix;

namespace {

using Lock = std::unique_lock<std::mutex>;

int64_t now_ns() {
  timespec t;
  ::clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1'000'000'000LL + t.tv_nsec;
}

timespec to_ts(int64_t ns) {
  return {static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
}

// Under the lock: what a weft socket reports to a poll that asked for `events`.
short weft_revents(const Sock& s, short events) {
  Runtime* rt = Runtime::get();
  const short all = rt != nullptr ? rt->poll_bits(s) : static_cast<short>(POLLNVAL);
  return static_cast<short>(all & (events | POLLHUP | POLLERR | POLLNVAL));
}

struct EpReg {
  uint32_t events = 0;
  uint64_t data = 0;
  bool weft = false;
};
struct EpShadow {
  std::mutex m;
  std::unordered_map<int, EpReg> regs;
  std::atomic<bool> device{false};  // the instance also watches the stack's device (watch_device)
};
std::atomic<EpShadow*> g_eps[kMaxFd];

EpShadow* shadow_of(int fd) {
  if (fd < 0 || fd >= kMaxFd) return nullptr;
  return g_eps[fd].load(std::memory_order_acquire);
}

}  // namespace

namespace weft::posix {

void close_epoll_shadow(int fd) {
  if (fd < 0 || fd >= kMaxFd) return;
  if (EpShadow* sh = g_eps[fd].exchange(nullptr)) {
    if (sh->device.load())
      if (Runtime* rt = Runtime::get()) rt->unwatch_device();
    delete sh;
  }
}

int poll_mixed(pollfd* fds, nfds_t n, int64_t timeout_ns, const sigset_t* mask) {
  bool any = false;
  for (nfds_t i = 0; i < n && !any; ++i) any = sock_of(fds[i].fd) != nullptr;
  if (!any) {
    const timespec ts = to_ts(std::max<int64_t>(timeout_ns, 0));
    return real().ppoll(fds, n, timeout_ns < 0 ? nullptr : &ts, mask);
  }
  if (Runtime::get() == nullptr)  // a fork's child: its weft sockets poll as POLLNVAL, and it is said
    log_once("nostack-poll", "poll/select on a weft socket: " + Runtime::why() + " (POLLNVAL)");
  std::vector<pollfd> k(fds, fds + n);
  std::vector<char> weft(n, 0);
  {
    Lock g(layer_mutex());
    Runtime* rt = Runtime::get();
    for (nfds_t i = 0; i < n; ++i) {
      Sock* s = sock_of(fds[i].fd);
      if (s == nullptr) continue;
      weft[i] = 1;
      k[i].events = POLLIN;  // the eventfd: readable when the socket has news
      if (fds[i].events & POLLOUT) {
        weft[i] = 2;
        ++s->want_out;
        if (rt != nullptr) rt->refresh(*s);
      }
    }
  }
  // One more entry, used while this thread drives the device (Runtime::try_drive).
  Runtime* const rt = Runtime::get();
  bool wants_out = false;
  for (nfds_t i = 0; i < n; ++i) wants_out = wants_out || weft[i] == 2;
  // (Two when the device has a second descriptor: AF_PACKET's SYN ring.)
  nfds_t ndev = 0;
  if (rt != nullptr) {
    k.push_back({rt->device_fd(), POLLIN, 0});
    ndev = 1;
    if (const int aux = rt->device_aux_fd(); aux >= 0) {
      k.push_back({aux, POLLIN, 0});
      ndev = 2;
    }
  }
  const int64_t deadline = timeout_ns < 0 ? INT64_MAX : now_ns() + timeout_ns;
  int result = 0, err = 0;
  for (;;) {
    int ready = 0;
    {
      Lock g(layer_mutex());
      for (nfds_t i = 0; i < n; ++i)
        if (weft[i]) {
          Sock* s = sock_of(fds[i].fd);
          fds[i].revents = s != nullptr ? weft_revents(*s, fds[i].events) : static_cast<short>(POLLNVAL);
          ready += fds[i].revents != 0;
          if (fds[i].revents == 0 && rt != nullptr)
            rt->refresh(*s);  // a stale eventfd would not let ppoll sleep
        }
    }
    const int64_t now = now_ns();
    const int64_t left = deadline == INT64_MAX ? -1 : std::max<int64_t>(deadline - now, 0);
    int64_t wait = ready > 0 ? 0 : left;
    // Run to completion without an event loop: a thread about to block on weft sockets drives the
    // device itself while no other thread does (a frame wakes it here, it runs the stack and looks
    // again), and sleeps no longer than the stack's next timer, which it then runs.
    bool drive = false, for_timer = false;
    if (rt != nullptr && wait != 0) {
      rt->flush_deferred();
      // A thread that waits for room to write (a bulk sender) leaves the device to the stack
      // thread, as a passenger: on two cores the stack's work (the ACKs) then runs beside the
      // program's copying (iperf3 -R sent 1.9 Gb/s driving itself, 5.5 with the stack thread, in
      // the same 5 rounds).
      drive = !wants_out && rt->try_drive();
      if (!drive) {
        rt->passenger(true);
        if (!wants_out && rt->try_drive()) {  // the driver left in between
          rt->passenger(false);
          drive = true;
        }
      }
      if (drive) {  // (at least 0.1 ms: a timer that stays due never makes this spin)
        if (const int64_t t = rt->deadline(); t != INT64_MAX) {
          const int64_t until_timer = std::max<int64_t>(t - now, 100'000);
          if (wait < 0 || until_timer < wait) {
            wait = until_timer;
            for_timer = true;
          }
        }
        rt->loop_entered();
        rt->loop_sleeps(true);
      } else if (t_event_loop || t_driver) {
        rt->before_block();
      }
    }
    const timespec ts = to_ts(std::max<int64_t>(wait, 0));
    const int r = real().ppoll(k.data(), n + (drive ? ndev : 0), wait < 0 ? nullptr : &ts, mask);
    const int e = errno;
    if (rt != nullptr && wait != 0) {
      if (drive) {
        rt->loop_sleeps(false);
        rt->end_drive();
      } else {
        rt->passenger(false);
      }
    }
    const bool frames = drive && ((k[n].revents & POLLIN) || (ndev == 2 && (k[n + 1].revents & POLLIN)));
    if (drive && r >= 0 && (frames || (r == 0 && for_timer))) rt->run_inline();
    if (r < 0) {
      err = e;
      result = -1;
      break;
    }
    int count = 0;
    {
      Lock g(layer_mutex());
      for (nfds_t i = 0; i < n; ++i) {
        if (weft[i]) {
          Sock* s = sock_of(fds[i].fd);
          fds[i].revents = s != nullptr ? weft_revents(*s, fds[i].events) : static_cast<short>(POLLNVAL);
        } else {
          fds[i].revents = k[i].revents;
        }
        count += fds[i].revents != 0;
      }
    }
    if (count > 0 || (wait == 0 && !for_timer)) {
      result = count;
      break;
    }
  }
  {
    Lock g(layer_mutex());
    for (nfds_t i = 0; i < n; ++i)
      if (weft[i] == 2)
        if (Sock* s = sock_of(fds[i].fd)) {
          --s->want_out;
          if (rt != nullptr) rt->refresh(*s);
        }
  }
  if (result < 0) errno = err;
  return result;
}

// select() and pselect() as a poll over the descriptors in the sets, when one of them is a weft
// socket (Linux's mapping of poll events to the three sets).
int select_mixed(int nfds, fd_set* r, fd_set* w, fd_set* e, int64_t timeout_ns, const sigset_t* mask,
                 bool* handled) {
  *handled = false;
  std::vector<pollfd> p;
  bool any = false;
  for (int fd = 0; fd < nfds && fd < FD_SETSIZE; ++fd) {
    short ev = 0;
    if (r != nullptr && FD_ISSET(fd, r)) ev |= POLLIN;
    if (w != nullptr && FD_ISSET(fd, w)) ev |= POLLOUT;
    if (e != nullptr && FD_ISSET(fd, e)) ev |= POLLPRI;
    if (ev == 0) continue;
    any = any || sock_of(fd) != nullptr;
    p.push_back({fd, ev, 0});
  }
  if (!any) return 0;
  *handled = true;
  const int n = poll_mixed(p.data(), p.size(), timeout_ns, mask);
  if (n < 0) return -1;
  for (const pollfd& q : p)
    if (q.revents & POLLNVAL) {
      errno = EBADF;
      return -1;
    }
  if (r != nullptr) FD_ZERO(r);
  if (w != nullptr) FD_ZERO(w);
  if (e != nullptr) FD_ZERO(e);
  int bits = 0;
  for (const pollfd& q : p) {
    if (r != nullptr && (q.events & POLLIN) && (q.revents & (POLLIN | POLLHUP | POLLERR))) {
      FD_SET(q.fd, r);
      ++bits;
    }
    if (w != nullptr && (q.events & POLLOUT) && (q.revents & (POLLOUT | POLLERR))) {
      FD_SET(q.fd, w);
      ++bits;
    }
    if (e != nullptr && (q.events & POLLPRI) && (q.revents & POLLPRI)) {
      FD_SET(q.fd, e);
      ++bits;
    }
  }
  return bits;
}

}  // namespace weft::posix

extern "C" {

int weft_px_poll(void* fds, unsigned long n, int timeout_ms) {
  return poll_mixed(static_cast<pollfd*>(fds), n, timeout_ms < 0 ? -1 : int64_t{timeout_ms} * 1'000'000,
                    nullptr);
}

int weft_px_ppoll(void* fds, unsigned long n, const void* ts, const void* mask) {
  const auto* t = static_cast<const timespec*>(ts);
  return poll_mixed(static_cast<pollfd*>(fds), n,
                    t == nullptr ? -1 : t->tv_sec * 1'000'000'000LL + t->tv_nsec,
                    static_cast<const sigset_t*>(mask));
}

int weft_px_select(int nfds, void* r, void* w, void* e, void* tv) {
  auto* t = static_cast<timeval*>(tv);
  bool handled = false;
  const int64_t ns = t == nullptr ? -1 : t->tv_sec * 1'000'000'000LL + t->tv_usec * 1000LL;
  const int64_t start = now_ns();
  const int n = select_mixed(nfds, static_cast<fd_set*>(r), static_cast<fd_set*>(w), static_cast<fd_set*>(e),
                             ns, nullptr, &handled);
  if (!handled)
    return real().select(nfds, static_cast<fd_set*>(r), static_cast<fd_set*>(w), static_cast<fd_set*>(e), t);
  if (t != nullptr) {  // as Linux: the time not slept is left in the timeval
    const int64_t left = std::max<int64_t>(ns - (now_ns() - start), 0);
    t->tv_sec = left / 1'000'000'000;
    t->tv_usec = (left % 1'000'000'000) / 1000;
  }
  return n;
}

int weft_px_pselect(int nfds, void* r, void* w, void* e, const void* ts, const void* mask) {
  const auto* t = static_cast<const timespec*>(ts);
  bool handled = false;
  const int n = select_mixed(nfds, static_cast<fd_set*>(r), static_cast<fd_set*>(w), static_cast<fd_set*>(e),
                             t == nullptr ? -1 : t->tv_sec * 1'000'000'000LL + t->tv_nsec,
                             static_cast<const sigset_t*>(mask), &handled);
  if (!handled)
    return real().pselect(nfds, static_cast<fd_set*>(r), static_cast<fd_set*>(w), static_cast<fd_set*>(e), t,
                          static_cast<const sigset_t*>(mask));
  return n;
}

int weft_px_epoll_create1(int size, int flags) {
  if (size <= 0) {
    errno = EINVAL;
    return -1;
  }
  const int fd = real().epoll_create1(flags);
  if (fd >= 0 && fd < kMaxFd) {
    close_epoll_shadow(fd);
    g_eps[fd].store(new EpShadow(), std::memory_order_release);
  }
  return fd;
}

int weft_px_epoll_ctl(int ep, int op, int fd, void* evp) {
  EpShadow* sh = shadow_of(ep);
  auto* ev = static_cast<epoll_event*>(evp);
  if (sh == nullptr) return real().epoll_ctl(ep, op, fd, ev);
  const bool weft = sock_of(fd) != nullptr;
  if (weft && op != EPOLL_CTL_DEL && Runtime::get() == nullptr) {  // a fork's child (nginx's workers)
    log_once("nostack-epoll", "epoll_ctl on a weft socket: " + Runtime::why() + " (ENOTSUP)");
    errno = ENOTSUP;
    return -1;
  }
  epoll_event kev{};
  if (op != EPOLL_CTL_DEL) {
    if (ev == nullptr) {
      errno = EFAULT;
      return -1;
    }
    kev.events = weft ? (EPOLLIN | (ev->events & (EPOLLET | EPOLLONESHOT | EPOLLEXCLUSIVE | EPOLLWAKEUP)))
                      : ev->events;
    kev.data.u64 = static_cast<uint64_t>(fd);
  }
  const int r = real().epoll_ctl(ep, op, fd, op == EPOLL_CTL_DEL ? nullptr : &kev);
  if (r < 0) return r;
  bool had_out = false, has_out = false, had_et = false, has_et = false;
  {
    Lock g(sh->m);
    if (auto it = sh->regs.find(fd); it != sh->regs.end()) {
      had_out = it->second.weft && (it->second.events & EPOLLOUT);
      had_et = it->second.weft && (it->second.events & EPOLLET);
      if (op == EPOLL_CTL_DEL) sh->regs.erase(it);
    }
    if (op != EPOLL_CTL_DEL) {
      sh->regs[fd] = EpReg{ev->events, ev->data.u64, weft};
      has_out = weft && (ev->events & EPOLLOUT);
      has_et = weft && (ev->events & EPOLLET);
    }
  }
  if (weft && op == EPOLL_CTL_ADD && !sh->device.load())
    if (Runtime* rt = Runtime::get(); rt != nullptr && !sh->device.exchange(true) && !rt->watch_device(ep)) {
      sh->device.store(false);  // then the stack thread alone reads the device, as before
      log_once("watch-device",
               std::string("epoll_ctl: the device stays with the stack thread: ") + std::strerror(errno));
    }
  if (weft) {
    Lock g(layer_mutex());
    if (Sock* s = sock_of(fd)) {
      if (op == EPOLL_CTL_ADD) had_out = had_et = false;  // a stale entry from a closed descriptor
      s->want_out += (has_out ? 1 : 0) - (had_out ? 1 : 0);
      if (s->want_out < 0) s->want_out = 0;
      // (an instance closed without EPOLL_CTL_DEL leaves the count high: extra writes, never a
      // missed edge)
      s->et_regs += (has_et ? 1 : 0) - (had_et ? 1 : 0);
      if (s->et_regs < 0) s->et_regs = 0;
      // No news for the new registration: EPOLL_CTL_ADD and _MOD poll the eventfd themselves and
      // report a set one, edge-triggered or not (nginx's ADD of each accepted connection, whose
      // eventfd starts set, was a write(2) per request).
      if (Runtime* rt = Runtime::get()) rt->refresh(*s, false);
    }
  }
  return 0;
}

// Run to completion: an instance that holds a weft socket also watches the stack's device
// (Runtime::watch_device). When a frame wakes the program's thread here, that thread runs the
// stack itself (the frame is parsed, the socket's descriptor set, what the stack answers goes out),
// then collects what became ready with one more epoll_pwait that does not sleep; the request is
// handled on the thread that serves it, with no wake-up of the stack thread in between.
int weft_px_epoll_pwait(int ep, void* evp, int max, int timeout_ms, const void* mask) {
  EpShadow* sh = shadow_of(ep);
  auto* evs = static_cast<epoll_event*>(evp);
  const auto* sigs = static_cast<const sigset_t*>(mask);
  if (sh == nullptr) return real().epoll_pwait(ep, evs, max, timeout_ms, sigs);
  const int64_t deadline = timeout_ms < 0 ? INT64_MAX : now_ns() + int64_t{timeout_ms} * 1'000'000;
  Runtime* const loop = sh->device.load(std::memory_order_relaxed) ? Runtime::get() : nullptr;
  if (loop != nullptr) t_event_loop = true;
  bool collect = false;  // the stack just ran here: look again without sleeping
  for (;;) {
    const int64_t now = now_ns();
    int wait_ms = -1;
    // Rounded up, as the kernel never returns before the timeout: rounded down, a wait returned up
    // to 1 ms early, and redis (which rounds its own timer's remainder down) then called
    // epoll_wait(0) some 16 times in a row until its timer came due.
    if (deadline != INT64_MAX)
      wait_ms = static_cast<int>((std::max<int64_t>(deadline - now, 0) + 999'999) / 1'000'000);
    // An event loop sleeps no longer than the stack's next timer, then runs it (at least 1 ms: a
    // timer that stays due never makes this spin).
    bool for_timer = false;
    if (loop != nullptr && !collect && wait_ms != 0)
      if (const int64_t t = loop->deadline(); t != INT64_MAX) {
        const int64_t ms = std::max<int64_t>((t - now + 999'999) / 1'000'000, 1);
        if (wait_ms < 0 || ms < wait_ms) {
          wait_ms = static_cast<int>(std::min<int64_t>(ms, 1'000'000));
          for_timer = true;
        }
      }
    if (collect) wait_ms = 0;
    if (loop != nullptr) {
      // What the stack just answered here (SYN-ACKs, ACKs) waits in the device's batch for what
      // the program sends on the events this call returns: the next call, before it sleeps,
      // flushes both in one sendmmsg (two per pass before: 3.1 per nginx request with a new
      // connection each, 1.x after; docs/BENCHMARKS.md). The program's own calls always flush.
      if (!collect) loop->flush_deferred();
      loop->loop_entered();
      if (wait_ms != 0) loop->loop_sleeps(true);
    }
    const int r = real().epoll_pwait(ep, evs, max, wait_ms, sigs);
    if (loop != nullptr && wait_ms != 0) loop->loop_sleeps(false);
    if (r < 0 || (r == 0 && !collect && !for_timer)) return r;
    if (r == 0 && for_timer) {
      loop->run_inline();
      collect = true;
      continue;
    }
    int out = 0;
    bool frames = false;
    for (int i = 0; i < r; ++i) {
      if (evs[i].data.u64 == Runtime::kDeviceTag) {
        frames = true;
        continue;
      }
      const int fd = static_cast<int>(evs[i].data.u64);
      EpReg reg;
      {
        Lock g(sh->m);
        auto it = sh->regs.find(fd);
        if (it == sh->regs.end()) continue;
        reg = it->second;
      }
      uint32_t events = evs[i].events;
      if (reg.weft) {
        Lock g(layer_mutex());
        Sock* s = sock_of(fd);
        if (s == nullptr) continue;
        Runtime* rt = Runtime::get();
        const uint32_t bits =
            rt != nullptr ? static_cast<uint16_t>(rt->poll_bits(*s)) : uint32_t{EPOLLERR | EPOLLHUP};
        events = bits & (reg.events | EPOLLERR | EPOLLHUP);
        if (events == 0) {  // a stale eventfd (or news the program did not ask for)
          if (rt != nullptr) rt->refresh(*s);
          if (reg.events & EPOLLONESHOT) {  // the kernel disarmed it for a report the program never saw
            epoll_event kev{};
            kev.events = EPOLLIN | (reg.events & (EPOLLET | EPOLLONESHOT | EPOLLWAKEUP));
            kev.data.u64 = static_cast<uint64_t>(fd);
            (void)real().epoll_ctl(ep, EPOLL_CTL_MOD, fd, &kev);
          }
          continue;
        }
      }
      evs[out].events = events;
      evs[out].data.u64 = reg.data;
      ++out;
    }
    if (out > 0) {
      if (frames)
        if (Runtime* rt = Runtime::get()) rt->run_inline();  // what else the frames brought: the next call
      return out;
    }
    if (frames) {
      if (Runtime* rt = Runtime::get()) {
        rt->run_inline();
        collect = true;
        continue;
      }
    }
    if (timeout_ms == 0 || (deadline != INT64_MAX && now_ns() >= deadline)) return 0;
    // Work was done here, outside the kernel's wait, and nothing came of it for the program. A
    // signal whose handler ran meanwhile (nginx's SIGTERM sets a flag and counts on the wait's
    // EINTR) would be lost if this slept again: give the program an EINTR instead, which every
    // event loop takes as "look at your flags and call again".
    if (collect) {
      errno = EINTR;
      return -1;
    }
  }
}

// epoll_pwait2: nanoseconds. An instance with weft sockets waits through epoll_pwait in whole
// milliseconds, rounded up (never back before the timeout); any other goes to the kernel as asked.
int weft_px_epoll_pwait2(int ep, void* evp, int max, const void* tsp, const void* mask) {
  const auto* ts = static_cast<const timespec*>(tsp);
  if (shadow_of(ep) == nullptr)
    return static_cast<int>(::syscall(SYS_epoll_pwait2, ep, evp, max, ts, mask, _NSIG / 8));
  int ms = -1;
  if (ts != nullptr) {
    const int64_t ns = int64_t{ts->tv_sec} * 1'000'000'000 + ts->tv_nsec;
    ms = static_cast<int>(std::min<int64_t>((std::max<int64_t>(ns, 0) + 999'999) / 1'000'000, INT32_MAX));
  }
  return weft_px_epoll_pwait(ep, evp, max, ms, mask);
}

}  // extern "C"
