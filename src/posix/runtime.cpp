#include "posix/runtime.hpp"

#include <arpa/inet.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "posix/env.hpp"
#include "posix/real_calls.hpp"
#include "stack/dev/packet_device.hpp"
#include "stack/dev/stable_mac.hpp"

namespace weft::posix {

std::atomic<Sock*> g_socks[kMaxFd];
thread_local bool t_event_loop = false;
thread_local bool t_driver = false;
namespace {

thread_local bool t_stack_thread = false;  // Runtime::thread_main's

Runtime* g_rt = nullptr;
// A function's static, not a global: the library's constructor (interpose.c) may run before this
// file's dynamic initialisers, which would then overwrite what init_runtime() set. Never destroyed:
// made at its first use (in a fork's child, at the fork), it would be destroyed at exit before the
// program's own earlier atexit handlers ran, and their calls on weft sockets logged freed memory
// (socat's child logged "shutdown: <16 bytes of malloc's free list> has no stack").
std::string& why_text() {
  static auto* s = new std::string("weft's stack was not started in this process");
  return *s;
}
std::atomic<bool> g_forked{false};
std::atomic<int> g_children{0};  // fork()s the owner made (its children have no stack)
bool g_verbose = false;
int64_t g_drain_ns = 10'000'000'000;  // at exit, how long close()d connections may take to finish

const char* env_or(const char* name, const char* dflt) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : dflt;
}

bool parse_ip(const std::string& s, uint32_t& ip, uint8_t& prefix) {
  const auto slash = s.find('/');
  in_addr in{};
  if (inet_pton(AF_INET, s.substr(0, slash).c_str(), &in) != 1) return false;
  ip = ntohl(in.s_addr);
  prefix = 32;
  if (slash != std::string::npos) {
    const int p = std::atoi(s.c_str() + slash + 1);
    if (p < 1 || p > 32) return false;
    prefix = static_cast<uint8_t>(p);
  }
  return true;
}

// The stack ends with the process that owns it: a daemon that forks and lets its parent exit
// (nginx's default `daemon on;`) leaves its child holding listeners that no longer answer. Said
// at the owner's exit, the one moment it can be seen (the child may never touch them again).
int live_children() {
  int n = 0;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream f(task.path() / "children");
    for (long pid; f >> pid;) ++n;
  }
  return n;
}

void say_children_lose_sockets() {
  // Children that are gone (redis's BGSAVE) or never held on (fork and exec a helper) lose nothing.
  if (g_children.load() == 0 || live_children() == 0) return;
  int listening = 0, other = 0;
  for (int fd = 0; fd < kMaxFd; ++fd)
    if (const Sock* s = g_socks[fd].load(std::memory_order_acquire))
      ++(s->st == Sock::St::listening ? listening : other);
  if (listening + other == 0) return;
  log_line(
      "exit: weft's stack ends with this process (pid " + std::to_string(::getpid()) + "), which forked " +
      std::to_string(g_children.load()) + " time(s): the " + std::to_string(listening) + " listening and " +
      std::to_string(other) +
      " other weft sockets its live children inherited no longer work. Run the program in the foreground on "
      "weft (nginx: `daemon off; master_process off;`; no `iperf3 -D`)");
}

void at_exit_drain() {
  Runtime* rt = Runtime::get();
  if (rt == nullptr) return;
  say_children_lose_sockets();
  rt->drain(g_drain_ns);
  if (g_verbose) {
    log_line("stack: " + std::to_string(rt->inline_runs()) + " runs on the program's threads, " +
             std::to_string(rt->stack_thread_runs()) +
             " by the stack thread while a loop was busy elsewhere, " +
             std::to_string(rt->stack_thread_all()) + " by the stack thread in all; " +
             std::to_string(rt->tx_batches()) + " sendmmsg batches; " + std::to_string(rt->program_frames()) +
             " frames taken in on the program's threads, " + std::to_string(rt->stack_thread_frames()) +
             " on the stack thread");
    const std::lock_guard g(layer_mutex());
    const stack::tcp::TcpLayer& tcp = rt->iface().tcp();
    const stack::tcp::TcpLayerStats& st = tcp.stats();
    log_line("tcp: " + std::to_string(st.connections_made) + " connections, " +
             std::to_string(st.resets_sent) + " resets to no connection, " +
             std::to_string(st.time_wait_reopened) + " TIME-WAITs reopened by a new SYN, " +
             std::to_string(st.time_wait_overflow) + " closed without TIME-WAIT (table full), " +
             std::to_string(tcp.time_wait_count()) + " waiting at exit");
  }
}

}  // namespace

std::mutex& layer_mutex() {
  static std::mutex m;
  return m;
}

void log_line(const std::string& s) {
  const std::string line = "weft-preload[" + std::to_string(::getpid()) + "]: " + s + "\n";
  (void)real().write(2, line.data(), line.size());
}

void log_once(const std::string& key, const std::string& s) {
  static std::mutex m;
  static auto* seen = new std::set<std::string>;  // never destroyed, as why_text(): atexit handlers log
  {
    std::lock_guard g(m);
    if (!seen->insert(key).second) return;
  }
  log_line(s);
}

bool verbose() { return g_verbose; }

int to_errno(stack::SockErr e) {
  using stack::SockErr;
  switch (e) {
    case SockErr::again:
      return EAGAIN;
    case SockErr::reset:
      return ECONNRESET;
    case SockErr::refused:
      return ECONNREFUSED;
    case SockErr::timed_out:
      return ETIMEDOUT;
    case SockErr::shut_down:
      return EPIPE;
    case SockErr::bad_socket:
      return EBADF;
    case SockErr::in_use:
      return EADDRINUSE;
    case SockErr::no_ports:
      return EADDRNOTAVAIL;
    case SockErr::no_route:
      return ENETUNREACH;
    case SockErr::too_big:
      return EMSGSIZE;
    case SockErr::unreachable:
      return EHOSTUNREACH;
    case SockErr::not_connected:
      return EDESTADDRREQ;
  }
  return EIO;
}

Runtime* Runtime::get() { return g_forked.load(std::memory_order_relaxed) ? nullptr : g_rt; }
const std::string& Runtime::why() { return why_text(); }
bool Runtime::forked() { return g_forked.load(std::memory_order_relaxed); }

// Called once, from the library's constructor: the process `weft stack run` started opens the
// device and starts the stack thread; any other process (a child that exec'd) gets no stack.
void init_runtime() {
  (void)real();
  g_verbose = std::strcmp(env_or(env::kVerbose, "0"), "1") == 0;
  const char* owner = std::getenv(env::kOwner);
  if (owner == nullptr) {
    why_text() = std::string(env::kOwner) + " is not set (start programs with `weft stack run`)";
    return;
  }
  if (std::atoll(owner) != ::getpid()) {
    why_text() = "this process is not the one `weft stack run` started (pid " + std::string(owner) +
                 "): a program it ran with exec from a child has no stack (use exec in wrapper scripts)";
    return;
  }
  auto* rt = new Runtime();  // never deleted: the stack thread may run until the process ends
  std::string err;
  if (!rt->open(err)) {
    why_text() = "the stack could not start: " + err;
    log_line(why_text());
    delete rt;
    return;
  }
  g_rt = rt;
  pthread_atfork([] { layer_mutex().lock(); },
                 [] {
                   layer_mutex().unlock();
                   g_children.fetch_add(1);
                 },
                 [] {
                   layer_mutex().unlock();
                   g_forked.store(true);
                   g_rt->release_device_claim();  // the interface is free once the parent is gone
                   why_text() =
                       "a child of fork() has no stack (it lives in the parent's thread); its inherited "
                       "weft sockets are unusable here";
                 });
  std::atexit(at_exit_drain);
  std::thread([rt] { rt->thread_main(); }).detach();
}

bool Runtime::open(std::string& err) {
  const std::string device = env_or(env::kDevice, "packet");
  if (device != "packet") {
    err = "device '" + device + "' is not supported under weft stack run (only packet)";
    return false;
  }
  stack::IfaceConfig cfg;
  uint8_t prefix = 24;
  if (!parse_ip(env_or(env::kIp, ""), cfg.ip.v, prefix)) {
    err = std::string(env::kIp) + " wants A.B.C.D/P";
    return false;
  }
  cfg.prefix_len = prefix;
  if (const char* gw = std::getenv(env::kGateway); gw != nullptr && *gw != '\0') {
    uint8_t ignored = 0;
    if (!parse_ip(gw, cfg.gateway.v, ignored)) {
      err = std::string(env::kGateway) + " wants A.B.C.D";
      return false;
    }
  }
  const long long buffer = std::atoll(env_or(env::kBuffer, "1048576"));
  cfg.tcp.send_buffer = cfg.tcp.recv_buffer = static_cast<uint32_t>(std::max(buffer, 4096LL));
  cfg.tcp.nagle = true;  // as the kernel: TCP_NODELAY turns it off per socket
  cfg.tso = std::strcmp(env_or(env::kNoTso, "0"), "1") != 0;
  drive_in_waits_ = std::strcmp(env_or(env::kDriveInWaits, "0"), "1") == 0;
  stack::PacketDevice::Options o;
  o.ifname = env_or(env::kIfname, "");
  o.tx_csum_offload = std::strcmp(env_or(env::kNoVnetHdr, "0"), "1") != 0;
  o.mac = stack::stable_mac(cfg.ip.v);  // the same every run (stable_mac.hpp)
  if (o.ifname.empty()) {
    err = std::string(env::kIfname) + " is not set";
    return false;
  }
  auto d = stack::PacketDevice::open(o);
  if (!d) {
    err = d.error().message;
    return false;
  }
  pkt_ = d->get();
  dev_ = std::move(*d);
  iface_ = std::make_unique<stack::Interface>(*dev_, clock_, cfg);
  sk_ = std::make_unique<stack::Sockets>(*iface_);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) {
    err = std::string("eventfd: ") + std::strerror(errno);
    return false;
  }
  if (g_verbose) log_line("stack on " + o.ifname + " " + env_or(env::kIp, ""));
  return true;
}

uint32_t Runtime::ip() const { return iface_->ip().v; }

bool Runtime::stack_routes(uint32_t dst) const {
  wire::Ipv4Addr a;
  a.v = dst;
  return iface_->routable(a);
}

// Under mu: the stack's receive, timer and transmit work, and the news it made reaches the
// sockets' descriptors. The stack thread runs it, and so does a program's thread that a frame woke
// in its own epoll_wait (run_inline). What it sends (SYN-ACKs, ACKs) leaves at once from the stack
// thread; on an event loop's thread it joins the device's batch with what the loop's calls send
// next, and the loop's next wait flushes both in one sendmmsg (flush_deferred): with a new
// connection per request, a pass's SYN-ACKs and FIN ACKs went in a sendmmsg of their own.
void Runtime::service() {
  const uint64_t frames_before = iface_->stats().rx_frames;
  sk_->poll_no_flush();
  (t_stack_thread ? stack_thread_frames_ : program_frames_)
      .fetch_add(iface_->stats().rx_frames - frames_before, std::memory_order_relaxed);
  for (size_t n; (n = sk_->events(events_)) > 0;)
    for (size_t i = 0; i < n; ++i)
      if (auto it = by_id_.find(events_[i].id); it != by_id_.end()) refresh(*it->second, true);
  sweep_closing();
  if (t_event_loop)
    tx_deferred_.store(true, std::memory_order_relaxed);
  else
    iface_->flush();
}

void Runtime::run_inline() {
  std::lock_guard g(layer_mutex());
  inline_runs_.fetch_add(1, std::memory_order_relaxed);
  service();
  after_call();
}

bool Runtime::watch_device(int ep) {
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLEXCLUSIVE;  // one idle loop thread per frame, not all of them
  ev.data.u64 = kDeviceTag;
  if (real().epoll_ctl(ep, EPOLL_CTL_ADD, iface_->device_fd(), &ev) < 0) return false;
  if (const int aux = iface_->device_aux_fd();
      aux >= 0 && real().epoll_ctl(ep, EPOLL_CTL_ADD, aux, &ev) < 0) {
    (void)real().epoll_ctl(ep, EPOLL_CTL_DEL, iface_->device_fd(), nullptr);
    return false;
  }
  watchers_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void Runtime::unwatch_device() {
  if (watchers_.fetch_sub(1, std::memory_order_relaxed) == 1) {  // the device is the stack thread's again
    const uint64_t one = 1;
    (void)real().write(wake_fd_, &one, sizeof one);
  }
}

// The stack thread sleeps in its own epoll on its wake-up eventfd and the stack's next timer, and
// on the device while no program thread watches it. While programs' epoll instances watch the
// device (event loops, watch_device) the device is theirs: a frame wakes the loop's thread, which
// runs the stack and answers on the spot, and this thread stays asleep. It then only looks in on
// a tick (1 ms, doubling up to 16 ms while a loop thread sits in epoll_wait, where it will see
// the next frame itself) and runs the stack when no loop thread waits and none came back to
// epoll_wait since the last tick (a loop busy elsewhere: its frames and timers would wait).
void Runtime::thread_main() {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);  // the program's signals go to its own threads
  t_stack_thread = true;
  const int ep = real().epoll_create1(EPOLL_CLOEXEC);
  epoll_event dev{};
  dev.events = EPOLLIN;
  dev.data.u64 = 0;
  epoll_event wake{};
  wake.events = EPOLLIN;
  wake.data.u64 = 1;
  const int aux = iface_->device_aux_fd();
  if (ep < 0 || real().epoll_ctl(ep, EPOLL_CTL_ADD, iface_->device_fd(), &dev) < 0 ||
      (aux >= 0 && real().epoll_ctl(ep, EPOLL_CTL_ADD, aux, &dev) < 0) ||
      real().epoll_ctl(ep, EPOLL_CTL_ADD, wake_fd_, &wake) < 0) {
    log_line(std::string("the stack thread cannot make its epoll: ") + std::strerror(errno));
    std::abort();
  }
  constexpr int64_t kTickMin = 1'000'000, kTickMax = 16'000'000;
  bool device_in = true;  // the device is in `ep`
  bool woken = true;      // by the device or the wake-up eventfd: run the stack
  int64_t tick = kTickMin;
  uint64_t seen_entries = 0;
  int64_t last_drive_ns = INT64_MIN / 2;
  uint64_t drive_entries = 0;
  epoll_event got[3];
  while (!stop_.load(std::memory_order_relaxed)) {
    // The device belongs to the event loops that watch it, to a blocked thread that drives it, and
    // stays with the threads that drive it while they keep coming back (a blocking program
    // between two waits), unless passengers wait with nobody driving.
    // A driver busy in its program between two waits keeps the device for 100 ms (its frames
    // meanwhile are the tick's, below): handing it back and forth would wake this thread with the
    // driver for every frame.
    const uint64_t entries_now = loop_entries_.load(std::memory_order_relaxed);
    const int64_t now_top = clock_.now_ns();
    if (driving_.load() || entries_now != drive_entries) last_drive_ns = now_top;
    drive_entries = entries_now;
    const bool driven = driving_.load() || (now_top - last_drive_ns < 100'000'000 &&
                                            passengers_.load(std::memory_order_relaxed) == 0);
    const bool watched = watchers_.load(std::memory_order_relaxed) > 0 || driven;
    if (watched == device_in) {
      (void)real().epoll_ctl(ep, watched ? EPOLL_CTL_DEL : EPOLL_CTL_ADD, iface_->device_fd(), &dev);
      if (aux >= 0) (void)real().epoll_ctl(ep, watched ? EPOLL_CTL_DEL : EPOLL_CTL_ADD, aux, &dev);
      device_in = !watched;
    }
    bool run = true;
    if (watched) {
      const uint64_t entries = loop_entries_.load(std::memory_order_relaxed);
      const bool waiting = loop_waiting_.load(std::memory_order_relaxed) > 0;
      const bool stuck = !waiting && entries == seen_entries;
      seen_entries = entries;
      tick = waiting ? std::min(tick * 2, kTickMax) : kTickMin;
      run = woken || stuck || clock_.now_ns() >= deadline_.load(std::memory_order_relaxed);
      if (run && stuck) stack_thread_runs_.fetch_add(1, std::memory_order_relaxed);
    }
    int64_t until = deadline_.load(std::memory_order_relaxed);
    if (run) {
      std::lock_guard g(layer_mutex());
      stack_thread_all_.fetch_add(1, std::memory_order_relaxed);
      service();
      until = sk_->next_deadline();
      deadline_.store(until, std::memory_order_relaxed);
      if (!closing_.empty()) until = std::min(until, clock_.now_ns() + 10'000'000);
    }
    const int64_t now = clock_.now_ns();
    until = std::min(until, now + (watched ? tick : 1'000'000'000));
    sleeping_until_.store(until, std::memory_order_relaxed);
    const int64_t ns = std::max<int64_t>(until - now, 0);
    const timespec ts{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
    const int n = ::epoll_pwait2(ep, got, 3, &ts, nullptr);
    woken = n > 0;
    for (int i = 0; i < n; ++i)
      if (got[i].data.u64 == 1) {
        uint64_t v;
        (void)real().read(wake_fd_, &v, sizeof v);
      }
  }
}

void Runtime::after_call() {
  if (t_event_loop)
    tx_deferred_.store(true, std::memory_order_relaxed);
  else
    iface_->flush();
  const int64_t next = sk_->next_deadline();
  deadline_.store(next, std::memory_order_relaxed);
  if (!t_event_loop && !t_driver && next < sleeping_until_.load(std::memory_order_relaxed)) {
    sleeping_until_.store(0, std::memory_order_relaxed);  // one wake-up is enough until it sleeps again
    const uint64_t one = 1;
    (void)real().write(wake_fd_, &one, sizeof one);
  }
}

void Runtime::flush_deferred() {
  if (!tx_deferred_.load(std::memory_order_relaxed)) return;
  std::lock_guard g(layer_mutex());
  tx_deferred_.store(false, std::memory_order_relaxed);
  iface_->flush();
}

bool Runtime::try_drive() {
  if (!drive_in_waits_) return false;
  if (driving_.load(std::memory_order_relaxed) || driving_.exchange(true)) return false;
  t_driver = true;
  return true;
}

void Runtime::end_drive() {
  driving_.store(false);
  if (passengers_.load() > 0) {  // they would wait for a frame nobody reads: the stack thread takes it
    const uint64_t one = 1;
    (void)real().write(wake_fd_, &one, sizeof one);
  }
}

void Runtime::before_block() {
  if (deadline_.load(std::memory_order_relaxed) < sleeping_until_.load(std::memory_order_relaxed)) {
    sleeping_until_.store(0, std::memory_order_relaxed);
    const uint64_t one = 1;
    (void)real().write(wake_fd_, &one, sizeof one);
  }
}

short Runtime::poll_bits(const Sock& s) {
  short b = 0;
  if (s.kind == Sock::Kind::udp) {
    b = POLLOUT | POLLWRNORM;
    if (s.id != 0) {
      const uint32_t st = sk_->state(s.id);
      if (st & stack::sockev::readable) b |= POLLIN | POLLRDNORM;
      if (st & stack::sockev::error) b |= POLLERR;
    }
    return b;
  }
  if (s.id == 0) return POLLHUP | (s.wr_shut ? POLLOUT : 0);  // as Linux: an unconnected TCP socket
  const uint32_t st = sk_->state(s.id);
  if (s.st == Sock::St::listening) return (st & stack::sockev::acceptable) ? POLLIN | POLLRDNORM : 0;
  if (st & stack::sockev::readable) b |= POLLIN | POLLRDNORM;
  if (st & stack::sockev::writable) b |= POLLOUT | POLLWRNORM;
  if (st & stack::sockev::hangup) b |= POLLHUP | POLLIN | POLLRDHUP;
  if (st & stack::sockev::error) b |= POLLERR;
  const tcp::Connection* c = sk_->connection(s.id);
  if (s.rd_shut || (c != nullptr && c->peer_closed())) b |= POLLIN | POLLRDNORM | POLLRDHUP;
  if (s.wr_shut && (b & POLLRDHUP)) b |= POLLHUP;
  return b;
}

void Runtime::refresh(Sock& s, bool news, bool clear) {
  const short b = poll_bits(s);
  // Someone waits to write and there is no room: Sockets reports room only after a send came up
  // short, and the program's last send may have fit exactly. send_reserve() on a full ring arms
  // that report without sending anything.
  if (s.want_out > 0 && !(b & POLLOUT) && s.kind == Sock::Kind::tcp && s.id != 0 &&
      s.st != Sock::St::listening)
    (void)sk_->send_reserve(s.id);
  const bool signal =
      (b & (POLLIN | POLLHUP | POLLERR | POLLRDHUP)) != 0 || ((b & POLLOUT) && s.want_out > 0);
  // A set eventfd is written again only for an edge-triggered epoll: poll, select and a
  // level-triggered epoll already see it readable (a bulk receiver's every segment batch was a
  // write(2) on it).
  if (signal && (!s.efd_set || (news && s.et_regs > 0))) {
    const uint64_t one = 1;
    if (real().write(s.fd, &one, sizeof one) == sizeof one) s.efd_set = true;
  } else if (!signal && s.efd_set && clear) {
    uint64_t v;
    (void)real().read(s.fd, &v, sizeof v);
    s.efd_set = false;
  }
}

void Runtime::adopt(Sock& s, stack::SockId id) {
  s.id = id;
  by_id_[id] = &s;
}

void Runtime::forget(Sock& s) {
  if (s.id != 0) by_id_.erase(s.id);
  if (s.bound_port != 0 && s.kind == Sock::Kind::tcp) note_port(s.bound_port, false);
}

bool Runtime::tcp_port_taken(uint16_t port) const { return tcp_ports_.contains(port); }

void Runtime::note_port(uint16_t port, bool taken) {
  if (taken) {
    ++tcp_ports_[port];
  } else if (auto it = tcp_ports_.find(port); it != tcp_ports_.end() && --it->second <= 0) {
    tcp_ports_.erase(it);
  }
}

void Runtime::close_later(stack::SockId id) {
  const tcp::Connection* c = sk_->connection(id);
  if (c == nullptr) {  // a listener or a UDP socket: nothing to finish
    sk_->close(id);
    return;
  }
  if (c->readable() > 0) {  // unread data: the peer must learn it was not read (RFC 2525 2.17, as Linux)
    sk_->abort(id);
    return;
  }
  (void)sk_->shutdown(id);
  closing_.emplace_back(id, clock_.now_ns() + 60'000'000'000);
}

// Connections close() left: released once our FIN is out and acknowledged (or the connection
// ended), so the data queued before close() is all delivered, as the kernel would deliver it.
void Runtime::sweep_closing() {
  const int64_t now = clock_.now_ns();
  for (size_t i = 0; i < closing_.size();) {
    const auto [id, until] = closing_[i];
    const tcp::Connection* c = sk_->connection(id);
    const bool done = c == nullptr || c->is_closed() || c->state() == tcp::State::time_wait ||
                      c->state() == tcp::State::fin_wait_2;
    if (done || now > until || (c != nullptr && c->readable() > 0)) {
      if (!done) sk_->abort(id);
      sk_->close(id);
      closing_[i] = closing_.back();
      closing_.pop_back();
    } else {
      ++i;
    }
  }
}

void Runtime::drain(int64_t max_ns) {
  {
    std::lock_guard g(layer_mutex());
    // Sockets the program never closed: the kernel closes them in order at exit; so do we.
    std::vector<Sock*> open;
    for (auto& [id, s] : by_id_) open.push_back(s);
    for (Sock* s : open) {
      for (const int fd : s->fds) g_socks[fd].store(nullptr);
      forget(*s);
      close_later(s->id);
    }
    after_call();
    iface_->flush();  // also on an event loop's thread, which would have left it for its next wait
  }
  const int64_t until = clock_.now_ns() + max_ns;
  while (clock_.now_ns() < until) {
    {
      std::lock_guard g(layer_mutex());
      if (closing_.empty()) break;
    }
    ::usleep(1000);
  }
  stop_.store(true);
}

int new_sock_fd(Sock::Kind kind, bool nonblock, bool cloexec, bool ready) {
  const int fd = ::eventfd(ready ? 1 : 0, EFD_NONBLOCK | (cloexec ? EFD_CLOEXEC : 0));
  if (fd < 0) return -1;
  if (fd >= kMaxFd) {
    (void)real().close(fd);
    errno = EMFILE;
    return -1;
  }
  auto* s = new Sock();
  s->fd = fd;
  s->fds.push_back(fd);
  s->kind = kind;
  s->nonblock = nonblock;
  s->efd_set = ready;
  g_socks[fd].store(s, std::memory_order_release);
  return fd;
}

void drop_sock_fd(Sock* s, int fd) {
  g_socks[fd].store(nullptr, std::memory_order_release);
  std::erase(s->fds, fd);
  if (!s->fds.empty()) {  // another descriptor still names it: the socket lives on
    if (s->fd == fd) s->fd = s->fds.front();
    return;
  }
  if (Runtime* rt = Runtime::get()) {
    rt->forget(*s);
    if (s->id != 0) {
      if (s->linger_on && s->linger_s == 0)
        rt->sk().abort(s->id);  // SO_LINGER 0: an RST, as the kernel
      else
        rt->close_later(s->id);
      rt->after_call();
    }
  }
  delete s;
}

Wait wait_sock(int fd, short events, int64_t timeout_ns, int64_t& deadline) {
  int64_t wait = -1;
  if (timeout_ns > 0) {
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    const int64_t now = ts.tv_sec * 1'000'000'000LL + ts.tv_nsec;
    if (deadline == 0) deadline = now + timeout_ns;
    if (now >= deadline) return Wait::timed_out;
    wait = deadline - now;
  }
  pollfd p{fd, events, 0};
  const int r = poll_mixed(&p, 1, wait, nullptr);
  return r < 0 && errno == EINTR ? Wait::interrupted : Wait::again;
}

}  // namespace weft::posix

extern "C" void weft_px_init(void) { weft::posix::init_runtime(); }
