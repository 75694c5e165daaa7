#pragma once
// The process-wide state of the POSIX socket layer: weft's stack on its device, the table of weft
// sockets by descriptor, and the thread that drives the stack.
//
// Threads: one lock (layer_mutex()) around the stack. Any application thread may call in: it takes
// the lock, works on the stack directly (send and recv first take in the frames that came since
// the stack last ran, then copy between its buffer and the connection's rings; segments leave at
// once, the device's batch is flushed before it returns) and releases it. Run to completion: an
// epoll instance that holds a weft socket also watches the device (EPOLLEXCLUSIVE), so a frame
// wakes the event loop's thread blocked in epoll_wait, which runs the stack itself and returns
// what became ready; the request is answered on that thread with no hop through another one. Its
// epoll_wait sleeps no longer than the stack's next timer and runs it. One stack thread, started
// with the stack, waits for frames on the device (while no event loop watches it), a timer or a
// wake-up and runs the stack under the same lock; while loops watch the device it only looks in
// on a tick and runs the stack when no loop thread waits in or came back to epoll_wait (a loop
// busy elsewhere). Blocking calls never sleep holding the lock: they wait on the socket's
// descriptor like poll() does.
//
// Descriptors: every weft socket is backed by a kernel eventfd whose number the program sees, so
// weft sockets and kernel descriptors never collide and poll/select/epoll wait on both at once.
// The eventfd is readable while the socket has something the program may want (data, EOF, a
// connection to accept, an error, or room to write while someone waits to write), and is written
// again for each piece of news the stack reports while an edge-triggered epoll holds the socket,
// so that epoll sees every one (level-triggered waits see a readable eventfd anyway: no write).
// A read that empties the socket leaves the eventfd set; the next wait that finds nothing to
// report for the socket clears it (poll/select before sleeping, epoll_wait on a stale report), so
// a program reading to EAGAIN costs no eventfd syscalls per read.
//
// Fork: the child of a fork gets the descriptors (as eventfds) but not the stack, which lives in
// the parent's thread and memory: any call on an inherited weft socket fails with ENOTSUP and
// one log line, close() only closes the descriptor (the parent's connection is untouched), and new
// sockets that would need the stack fail (a child that execs is not the owner: the same).
#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "stack/clock.hpp"
#include "stack/dev/device.hpp"
#include "stack/dev/packet_device.hpp"
#include "stack/interface.hpp"
#include "stack/socket.hpp"

namespace weft::posix {

struct Sock {
  enum class Kind : uint8_t { tcp, udp };
  enum class St : uint8_t { fresh, bound, listening, connecting, connected };
  int fd = -1;  // one of `fds`: the eventfd the layer writes and reads for the socket's news
  // Every descriptor that names the socket: the first, and what dup/dup2/dup3/F_DUPFD made of it
  // (each a kernel dup of the same eventfd). The socket closes when the last one does.
  std::vector<int> fds;
  Kind kind = Kind::tcp;
  St st = St::fresh;
  stack::SockId id = 0;  // 0 until the stack has it (listen, connect, UDP bind)
  bool nonblock = false;
  bool efd_set = false;   // the eventfd is readable
  int et_regs = 0;        // epoll registrations with EPOLLET: only they need a write per piece of news
  int want_out = 0;       // registrations and waiters that want POLLOUT
  uint32_t bound_ip = 0;  // host order; 0: any
  uint16_t bound_port = 0;
  bool rd_shut = false;
  bool wr_shut = false;
  bool connect_reported = false;  // a non-blocking connect's outcome was read (SO_ERROR / a call)
  // Options the program set, reported back by getsockopt.
  bool reuseaddr = false, reuseport = false, keepalive = false, nodelay = false;
  int linger_on = 0, linger_s = 0;
  int sndbuf = 0, rcvbuf = 0;
  int keepidle = 7200, keepintvl = 75, keepcnt = 9;
  int64_t rcvtimeo_ns = 0, sndtimeo_ns = 0;  // SO_RCVTIMEO / SO_SNDTIMEO (0: block for ever)
  uint32_t udp_peer_ip = 0;
  uint16_t udp_peer_port = 0;
};

// Descriptors up to this number can be weft sockets (higher ones always pass to the kernel).
inline constexpr int kMaxFd = 1 << 16;
extern std::atomic<Sock*> g_socks[kMaxFd];

inline Sock* sock_of(int fd) {
  if (fd < 0 || fd >= kMaxFd) return nullptr;
  return g_socks[fd].load(std::memory_order_acquire);
}

// One log line on stderr ("weft-preload: ..."), raw write so it works at any time.
void log_line(const std::string& s);
// The same, only the first time for this key (a call name, an option).
void log_once(const std::string& key, const std::string& s);
bool verbose();

int to_errno(stack::SockErr e);

namespace tcp = stack::tcp;
namespace wire = stack::wire;

class Runtime {
 public:
  // The stack of this process: nullptr when this process has none (not the owner, a forked
  // child, or the device failed to open; why() says which).
  static Runtime* get();
  static const std::string& why();
  static bool forked();

  stack::Sockets& sk() { return *sk_; }
  stack::Interface& iface() { return *iface_; }
  const stack::Clock& clock() const { return clock_; }

  // The tag a program's epoll instance reports the device's frames with (watch_device).
  static constexpr uint64_t kDeviceTag = ~uint64_t{0};
  // Also lets the program's epoll instance `ep` wait for the device's frames (EPOLLIN |
  // EPOLLEXCLUSIVE, data kDeviceTag): a frame then wakes a program thread blocked in epoll_wait
  // rather than the stack thread, and that thread runs the stack itself (run_inline). False if the
  // kernel refused (errno set).
  bool watch_device(int ep);
  // The epoll instance that watch_device() gave the device was closed.
  void unwatch_device();
  // Takes the lock and runs the stack's receive, timer and transmit work on the calling thread.
  void run_inline();
  // A thread is about to sleep outside an event loop's epoll_wait: wakes the stack thread if a
  // timer this thread armed (as an event loop, see t_event_loop) is due before it wakes anyway.
  void before_block();
  // Under mu. Before a TCP send or receive: frames that came since the stack last ran are taken
  // in first (run to completion on the calling thread). An ACK that arrived while the program
  // worked releases what Nagle holds before the send queues more; a receive sees the newest data.
  // Costs a look at the ring when nothing came.
  void catch_up() { service(); }
  // When the stack's next timer is due (monotonic ns; INT64_MAX: none), as of the last call.
  int64_t deadline() const { return deadline_.load(std::memory_order_relaxed); }
  // How often a program thread ran the stack, and the stack thread ran it because the loops that
  // watch the device were busy elsewhere (for tests and the --verbose summary).
  uint64_t inline_runs() const { return inline_runs_.load(std::memory_order_relaxed); }
  uint64_t stack_thread_runs() const { return stack_thread_runs_.load(std::memory_order_relaxed); }
  // Every run of the stack by the stack thread (frames it was woken for, timers, stuck loops).
  uint64_t stack_thread_all() const { return stack_thread_all_.load(std::memory_order_relaxed); }
  // The frames the stack took in on the program's threads (a run in a wait, a catch-up before a
  // send or receive) and on the stack thread: where the receive work went, whatever the batching
  // (a slow program's run takes in a whole ring; for tests and the --verbose summary).
  uint64_t program_frames() const { return program_frames_.load(std::memory_order_relaxed); }
  uint64_t stack_thread_frames() const { return stack_thread_frames_.load(std::memory_order_relaxed); }
  // The device's sendmmsg calls (for tests and the --verbose summary; read at exit).
  uint64_t tx_batches() const { return pkt_->counters().tx_batches; }
  void release_device_claim() { pkt_->release_claim(); }  // in a fork's child (PacketDevice::release_claim)
  // An event loop's epoll_wait: came in (every call), and sleeps (true) or woke (false).
  void loop_entered() { loop_entries_.fetch_add(1, std::memory_order_relaxed); }
  void loop_sleeps(bool on) { loop_waiting_.fetch_add(on ? 1 : -1, std::memory_order_relaxed); }

  // Under mu. After a call that may have sent: the device's batch leaves, and the stack thread
  // wakes if the call moved the next timer before the one it sleeps for. On an event loop's
  // thread (t_event_loop) the batch waits instead until the thread waits again (flush_deferred):
  // the answers to every request one epoll_wait returned, and a response with the FIN close()
  // adds, leave in one sendmmsg.
  void after_call();
  // Before an event loop's thread sleeps (or polls): what its calls left in the device's batch
  // leaves. Takes the lock only when something was left.
  void flush_deferred();

  // Blocking calls and poll/select drive the device themselves (run to completion without an
  // event loop). One blocked thread at a time holds the device (try_drive: it adds the device to
  // its poll set and runs the stack when a frame or a timer wakes it); other blocked threads
  // wait on their sockets' descriptors as passengers, woken by what the driver's run reports.
  // The driver that leaves while passengers wait wakes the stack thread, which holds the device
  // until a thread drives it again.
  int device_fd() const { return iface_->device_fd(); }
  int device_aux_fd() const { return iface_->device_aux_fd(); }  // -1: none (Device::aux_fd)
  bool try_drive();  // false also when driving in waits is off (--drive-in-waits)
  void end_drive();
  void passenger(bool on) { passengers_.fetch_add(on ? 1 : -1); }
  // Under mu. What poll() would report for `s` now (POLLIN, POLLOUT, POLLHUP, POLLERR, POLLRDHUP).
  short poll_bits(const Sock& s);
  // Under mu. Sets or clears `s`'s eventfd by poll_bits (and writes it again on `news` when an
  // edge-triggered epoll holds `s`). With `clear` false a set eventfd stays set though `s` has
  // nothing to report (after a read: the next wait clears it, see stale-clearing in poll_calls).
  void refresh(Sock& s, bool news = false, bool clear = true);
  // Under mu. `s` now has a stack socket.
  void adopt(Sock& s, stack::SockId id);
  void forget(Sock& s);
  // Under mu. An orderly close: the connection finishes (its queued data, the FIN) in the
  // background; at exit the process waits for those (up to 10 s), as the kernel would carry on.
  void close_later(stack::SockId id);
  bool tcp_port_taken(uint16_t port) const;
  void note_port(uint16_t port, bool taken);
  uint32_t ip() const;  // host order
  bool stack_routes(uint32_t dst) const;
  // Waits (at exit) for the connections close() left to finish.
  void drain(int64_t max_ns);

 private:
  Runtime() = default;
  bool open(std::string& err);
  void thread_main();
  void service();
  void sweep_closing();

  std::unique_ptr<stack::Device> dev_;
  stack::PacketDevice* pkt_ = nullptr;  // dev_, for its counters
  stack::MonotonicClock clock_;
  std::unique_ptr<stack::Interface> iface_;
  std::unique_ptr<stack::Sockets> sk_;
  std::unordered_map<stack::SockId, Sock*> by_id_;
  std::vector<std::pair<stack::SockId, int64_t>> closing_;  // handle, give up at
  std::unordered_map<uint16_t, int> tcp_ports_;             // bound or listening, by this layer
  int wake_fd_ = -1;
  std::atomic<int64_t> sleeping_until_{0};
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> deadline_{INT64_MAX};
  std::atomic<int> watchers_{0};  // program epoll instances that watch the device
  std::atomic<uint64_t> inline_runs_{0};
  std::atomic<uint64_t> stack_thread_runs_{0};
  std::atomic<uint64_t> stack_thread_all_{0};
  std::atomic<uint64_t> program_frames_{0};
  std::atomic<uint64_t> stack_thread_frames_{0};
  std::atomic<uint64_t> loop_entries_{0};
  std::atomic<int> loop_waiting_{0};
  std::atomic<bool> tx_deferred_{false};  // an event loop left frames in the device's batch
  std::atomic<bool> driving_{false};      // a blocked thread has the device in its poll set
  bool drive_in_waits_ = false;           // --drive-in-waits
  std::atomic<int> passengers_{0};        // blocked threads waiting without the device
  std::vector<stack::SockEvent> events_ = std::vector<stack::SockEvent>(512);

  friend void init_runtime();
};

// This thread waits in an epoll instance that watches the device (an event loop): it runs the
// stack's timers itself when it waits next (its epoll_wait sleeps no longer than the next timer),
// so what it does never wakes the stack thread for a timer.
extern thread_local bool t_event_loop;
// This thread has driven the device in a blocking call or poll (it runs the timers when it blocks
// next, as an event loop does): what it does never wakes the stack thread for a timer.
extern thread_local bool t_driver;

// The layer's one lock: around the stack, and the socket table's fields (also in a process that
// has no stack, for sockets that may still go to the kernel).
std::mutex& layer_mutex();

// Makes a weft socket on a new eventfd; -1 with errno on failure. `ready`: the eventfd starts
// readable (an accepted connection whose request came with the handshake: no write(2) to set it).
int new_sock_fd(Sock::Kind kind, bool nonblock, bool cloexec, bool ready = false);
// Under the lock: descriptor `fd` of weft socket `s` is going away (close, or dup2 onto it). The
// socket closes with its last descriptor (its connection closes, an RST for SO_LINGER 0) and is
// deleted; otherwise only `fd` leaves it. The caller closes `fd` in the kernel.
void drop_sock_fd(Sock* s, int fd);
// Under the lock: the program's SO_KEEPALIVE and TCP_KEEP* on `s`'s connection, if it has one
// (at setsockopt, and when connect() or accept() gives it one).
void apply_keepalive(Runtime* rt, const Sock& s);
// A blocking call's wait, without the lock, until `fd` (a weft socket) may have `events`. The
// socket's SO_RCVTIMEO/SO_SNDTIMEO (`timeout_ns`, 0: none) bounds the whole call: `deadline` (0
// before the call's first wait) is set at the first wait and kept across the call's waits, so the
// caller looks at the socket again after each one and gives up (EAGAIN, or what it moved so far)
// on `timed_out`. `interrupted`: a signal (errno EINTR).
enum class Wait : uint8_t { again, timed_out, interrupted };
Wait wait_sock(int fd, short events, int64_t timeout_ns, int64_t& deadline);
int poll_mixed(pollfd* fds, nfds_t n, int64_t timeout_ns, const sigset_t* mask);
void init_runtime();

}  // namespace weft::posix
