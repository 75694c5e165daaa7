#pragma once
// The remote-write queue on disk, so a controller killed (SIGKILL, the OOM killer, a crash) still
// pushes, once restarted, every window it accepted and the receiver had not acknowledged
// (docs/controller.md, "Remote write through a crash").
//
// One append-only file. A 32-byte header: magic "WEFTRWSP", format version, then the logical
// offset of the first frame after the header (`base`) and "acknowledged up to" (`acked`, logical),
// the two under a CRC-32C. Then one frame per queued window: magic, payload length, CRC-32C of the
// payload, payload (protocol, src, dst, end, counts, RTT quantiles: what QueuedWindow holds).
// Offsets are logical (they keep growing across truncations and compactions, so a window's
// position never changes); a file offset is `base` + (offset in the file - header).
//
// Cost: the ingest encodes a report's windows outside any lock and writes them with one pwrite()
// per report, no fsync; the writer thread saves `acked` (one 20-byte pwrite) after each batch
// the receiver took, calls fdatasync() once per push round, truncates the file when everything
// is pushed, and rewrites the owed tail into a fresh file when the dead head outgrows both the
// compaction threshold and the tail (a receiver down for long, the oldest dropped past the bound).
//
// Reading it back is strict about what it trusts: a torn last frame (killed mid-write) is cut off,
// a frame whose CRC or content is wrong is skipped (the reader resynchronises on the next frame's
// magic), an `acked` past the end or a header whose CRC fails makes the whole file owed again
// (resent samples are identical: the receiver keeps one), and a file of another format is moved
// aside (PATH.unreadable) rather than read or overwritten. Each says so in one log line.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/fd.hpp"
#include "base/result.hpp"
#include "controller/remote_write_queue.hpp"

namespace weft::controller {

// What reading a spool found besides the windows it owes.
struct SpoolScan {
  std::vector<QueuedWindow> windows;  // owed, oldest first, each with its spool_pos
  uint64_t valid_end = 0;             // file offset after the last good frame (a torn tail starts here)
  uint64_t torn_bytes = 0;            // cut off at the end (an incomplete or unreadable last frame)
  uint64_t corrupt_frames = 0;        // skipped in the middle (bad CRC or content)
  uint64_t corrupt_bytes = 0;
};

class RemoteWriteSpool {
 public:
  static constexpr uint32_t kVersion = 1;
  static constexpr size_t kHeaderBytes = 32;
  static constexpr size_t kFrameHeaderBytes = 12;
  static constexpr uint32_t kMaxPayload = 1u << 20;
  // Rewrite the owed tail when the acknowledged head is larger than this and than the tail.
  static constexpr uint64_t kCompactBytes = 64ull << 20;

  struct Opened;
  // Opens (or creates) the spool at `path`, takes an exclusive lock on it (a second controller on
  // the same file fails here), and reads what it still owes. Damage is logged and repaired; an
  // error means the file cannot be used at all (directory not writable, locked, I/O error).
  static Result<Opened> open(const std::string& path);

  // The frames' and the header's checksum: CRC-32C.
  static uint32_t checksum(std::string_view data);
  // Frames of `ws` appended to `out`; each window's spool_pos becomes its frame's offset in `out`.
  static void encode(std::span<QueuedWindow> ws, std::string& out);
  // The frames of the file bytes `data` (which start at file offset `at`, header excluded), with
  // logical positions from `base`: what open() does after the header.
  static SpoolScan scan(std::string_view data, uint64_t at, uint64_t base);

  // Writes `frames` (from encode()) at the end with one pwrite(): the logical offset they start
  // at (add it to the windows' spool_pos).
  Result<uint64_t> append(std::string_view frames);
  // Everything before logical offset `owed` is done (acknowledged, rejected or dropped): saved in
  // the header; the file is truncated when nothing is owed, compacted when the head is large.
  Status acknowledge_until(uint64_t owed);
  // fdatasync(): what was appended survives a power cut too.
  Status sync();

  uint64_t end() const { return base_ + (size_ - kHeaderBytes); }  // logical offset of the next frame
  uint64_t acked() const { return acked_; }
  uint64_t file_bytes() const { return size_; }
  const std::string& path() const { return path_; }
  void set_compact_bytes(uint64_t n) { compact_bytes_ = n; }

 private:
  RemoteWriteSpool(std::string path, Fd fd) : path_(std::move(path)), fd_(std::move(fd)) {}
  Status write_header();
  Status compact(uint64_t owed);

  std::string path_;
  Fd fd_;
  uint64_t base_ = 0, acked_ = 0;
  uint64_t size_ = kHeaderBytes;  // file size (where the next frame goes)
  uint64_t compact_bytes_ = kCompactBytes;
};

struct RemoteWriteSpool::Opened {
  std::unique_ptr<RemoteWriteSpool> spool;
  SpoolScan scan;  // the windows it still owes
};

}  // namespace weft::controller
