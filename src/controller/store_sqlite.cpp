// The embedded store: history in SQLite.
//
// Why one row per (report, source) with the windows packed in a blob: a controller must take in a
// million windows a second on two cores; a row per window would cost a B-tree insert per window.
// The blob is the wire format's window list (proto/report.hpp), ~50 bytes per window.
//
// Group commit: append() queues its batch and waits; one writer thread commits everything queued
// in one transaction (WAL, synchronous=NORMAL: a committed transaction survives a crash of the
// process). So concurrent requests share one fsync-free commit and each returns only once its
// rows are committed — the ingest never acknowledges what a restart could lose.
//
// Checkpoints off the commit path: SQLite's automatic checkpoint runs inside the COMMIT that crosses
// the WAL's threshold, and a checkpoint writes the WAL's pages into the database file and waits
// for both on the disk (two fdatasyncs of up to tens of MB). Every request waiting for that commit
// waited for the disk too: the serial part that held a disk-backed ingest to half the rate of one on
// tmpfs. Here a checkpointer thread with its own connection copies the WAL in the background
// (PASSIVE: it never blocks the writer) once it holds kCheckpointFrames pages. Under a write load
// that never pauses, a background checkpoint cannot catch up with the writer, and the WAL restarts
// from its beginning only when one has: so at kMaxWalFrames the writer checkpoints itself, as
// SQLite would (bounded WAL, the disk's pace as back-pressure).
#include <pthread.h>
#include <sqlite3.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "base/log.hpp"
#include "controller/store.hpp"
#include "proto/report.hpp"

namespace weft::controller {
namespace {

class Stmt {
 public:
  Stmt() = default;
  Stmt(sqlite3* db, const char* sql) { ok_ = sqlite3_prepare_v2(db, sql, -1, &s_, nullptr) == SQLITE_OK; }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(Stmt&& o) noexcept {
    std::swap(s_, o.s_);
    std::swap(ok_, o.ok_);
    return *this;
  }
  sqlite3_stmt* get() { return s_; }
  bool ok() const { return ok_; }

 private:
  sqlite3_stmt* s_ = nullptr;
  bool ok_ = false;
};

class SqliteStore final : public Store {
 public:
  ~SqliteStore() override {
    {
      std::lock_guard lk(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    {
      std::lock_guard lk(ck_mu_);
      ck_stopping_ = true;
    }
    ck_cv_.notify_all();
    if (writer_.joinable()) writer_.join();
    if (checkpointer_.joinable()) checkpointer_.join();
    if (cdb_) sqlite3_close(cdb_);
    // Every prepared statement must be finalized first: sqlite3_close refuses (SQLITE_BUSY) and
    // leaves the connection open while one is alive.
    insert_ = Stmt();
    upsert_agent_ = Stmt();
    delete_agent_ = Stmt();
    if (db_) sqlite3_close(db_);
    if (rdb_) sqlite3_close(rdb_);
  }

  Status open(const std::string& path) {
    path_ = path;
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        nullptr) != SQLITE_OK)
      return fail("sqlite store {}: {}", path, db_ ? sqlite3_errmsg(db_) : "out of memory");
    // 64 KiB pages (only takes effect on a new file): a report's blob (~15-30 KB for 300 targets)
    // fits in one page instead of a chain of overflow pages.
    const char* ddl =
        "PRAGMA page_size=65536;"
        "PRAGMA journal_mode=WAL;"
        "PRAGMA synchronous=NORMAL;"
        "PRAGMA busy_timeout=5000;"
        "CREATE TABLE IF NOT EXISTS batches("
        "  id INTEGER PRIMARY KEY,"
        "  src TEXT NOT NULL,"
        "  min_start INTEGER NOT NULL,"
        "  max_start INTEGER NOT NULL,"
        "  max_end INTEGER NOT NULL,"
        "  received INTEGER NOT NULL,"
        "  n INTEGER NOT NULL,"
        "  data BLOB NOT NULL);"
        "CREATE INDEX IF NOT EXISTS batches_src ON batches(src, max_start);"
        "CREATE INDEX IF NOT EXISTS batches_end ON batches(max_end);"
        // The agents' registrations as received (replayed through the register parser at start).
        "CREATE TABLE IF NOT EXISTS agents("
        "  name TEXT PRIMARY KEY,"
        "  registration BLOB NOT NULL,"
        "  received INTEGER NOT NULL);";
    if (auto st = exec(db_, ddl); !st) return st;
    insert_ = Stmt(
        db_, "INSERT INTO batches(src,min_start,max_start,max_end,received,n,data) VALUES(?,?,?,?,?,?,?)");
    if (!insert_.ok()) return fail("sqlite store {}: prepare insert: {}", path, sqlite3_errmsg(db_));
    upsert_agent_ = Stmt(db_, "INSERT OR REPLACE INTO agents(name,registration,received) VALUES(?,?,?)");
    delete_agent_ = Stmt(db_, "DELETE FROM agents WHERE name = ?");
    if (!upsert_agent_.ok())
      return fail("sqlite store {}: prepare agent insert: {}", path, sqlite3_errmsg(db_));
    // Readers get their own connection: WAL lets them read while the writer commits.
    if (sqlite3_open_v2(path.c_str(), &rdb_, SQLITE_OPEN_READONLY | SQLITE_OPEN_FULLMUTEX, nullptr) !=
        SQLITE_OK)
      return fail("sqlite store {}: open reader: {}", path, rdb_ ? sqlite3_errmsg(rdb_) : "out of memory");
    sqlite3_busy_timeout(rdb_, 5000);
    if (sqlite3_open_v2(path.c_str(), &cdb_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr) !=
        SQLITE_OK)
      return fail("sqlite store {}: open checkpointer: {}", path,
                  cdb_ ? sqlite3_errmsg(cdb_) : "out of memory");
    // A connection learns that the file is in WAL mode (and opens the WAL) on its first read; a
    // checkpoint asked of it before that does nothing.
    if (auto st = exec(cdb_, "SELECT count(*) FROM sqlite_master"); !st)
      return fail("sqlite store {}: checkpointer: {}", path, st.error().message);
    // Replaces the automatic checkpoint (sqlite3_wal_autocheckpoint installs a hook of its own).
    sqlite3_wal_hook(db_, &SqliteStore::on_wal_commit, this);
    writer_ = std::thread([this] {
      pthread_setname_np(pthread_self(), "sqlite-writer");  // top -H, perf: which thread waits
      write_loop();
    });
    checkpointer_ = std::thread([this] {
      pthread_setname_np(pthread_self(), "sqlite-ckpt");
      checkpoint_loop();
    });
    return {};
  }

  Status append(const std::string& src, std::span<const proto::WindowStats> windows, int64_t received_ns,
                std::string_view encoded) override {
    if (windows.empty()) return {};
    auto job = std::make_shared<Job>();
    job->src = src;
    job->received = received_ns;
    job->n = windows.size();
    job->min_start = INT64_MAX;
    job->max_start = INT64_MIN;
    job->max_end = INT64_MIN;
    for (const auto& w : windows) {
      job->min_start = std::min(job->min_start, w.start_unix_ns);
      job->max_start = std::max(job->max_start, w.start_unix_ns);
      job->max_end = std::max(job->max_end, w.end_unix_ns);
    }
    // The agent's own bytes, not even copied: submit() returns only after the commit, and the
    // caller's body outlives that. Otherwise (some windows were duplicates) encode the rest.
    if (encoded.empty()) {
      proto::append_window_list(job->blob, windows);
      encoded = job->blob;
    }
    job->data = encoded;
    return submit(job);
  }

  Status save_registration(const std::string& name, std::string_view registration,
                           int64_t received_ns) override {
    auto job = std::make_shared<Job>();
    job->kind = Job::Kind::registration;
    job->src = name;
    job->received = received_ns;
    job->data = registration;  // outlives the commit: submit() waits for it
    return submit(job);
  }

  Status remove_registration(const std::string& name) override {
    auto job = std::make_shared<Job>();
    job->kind = Job::Kind::unregistration;
    job->src = name;
    return submit(job);
  }

  Status load_registrations(const RegistrationFn& fn) override {
    std::lock_guard lk(read_mu_);
    Stmt q(rdb_, "SELECT registration, received FROM agents ORDER BY name");
    if (!q.ok()) return fail("sqlite load agents: {}", sqlite3_errmsg(rdb_));
    int rc;
    while ((rc = sqlite3_step(q.get())) == SQLITE_ROW) {
      auto* p = static_cast<const char*>(sqlite3_column_blob(q.get(), 0));
      int n = sqlite3_column_bytes(q.get(), 0);
      fn(std::string_view(p ? p : "", static_cast<size_t>(n)), sqlite3_column_int64(q.get(), 1));
    }
    if (rc != SQLITE_DONE) return fail("sqlite load agents: {}", sqlite3_errmsg(rdb_));
    return {};
  }

  Result<std::vector<proto::WindowStats>> history(proto::Protocol protocol, const std::string& src,
                                                  const std::string& dst, int64_t since_ns, int64_t until_ns,
                                                  size_t limit) override {
    std::lock_guard lk(read_mu_);
    Stmt q(rdb_,
           "SELECT data FROM batches WHERE src=? AND max_start>=? AND min_start<? ORDER BY min_start, id");
    if (!q.ok()) return fail("sqlite history: {}", sqlite3_errmsg(rdb_));
    sqlite3_bind_text(q.get(), 1, src.data(), static_cast<int>(src.size()), SQLITE_TRANSIENT);
    sqlite3_bind_int64(q.get(), 2, since_ns);
    sqlite3_bind_int64(q.get(), 3, until_ns);
    std::vector<proto::WindowStats> out;
    int rc;
    while ((rc = sqlite3_step(q.get())) == SQLITE_ROW) {
      auto* p = static_cast<const char*>(sqlite3_column_blob(q.get(), 0));
      int n = sqlite3_column_bytes(q.get(), 0);
      auto ws = proto::decode_window_list(std::string_view(p, static_cast<size_t>(n)));
      if (!ws) return fail("sqlite history: corrupt row: {}", ws.error().message);
      for (auto& w : *ws)
        if (w.protocol == protocol && w.target == dst && w.start_unix_ns >= since_ns &&
            w.start_unix_ns < until_ns)
          out.push_back(std::move(w));
    }
    if (rc != SQLITE_DONE) return fail("sqlite history: {}", sqlite3_errmsg(rdb_));
    std::stable_sort(out.begin(), out.end(),
                     [](const auto& a, const auto& b) { return a.start_unix_ns < b.start_unix_ns; });
    if (out.size() > limit) out.erase(out.begin(), out.end() - static_cast<ptrdiff_t>(limit));  // keep newest
    return out;
  }

  Status load_recent(int64_t since_ns, const RestoreFn& fn) override {
    std::lock_guard lk(read_mu_);
    Stmt q(rdb_, "SELECT src, received, data FROM batches WHERE max_start>=? ORDER BY id");
    if (!q.ok()) return fail("sqlite load: {}", sqlite3_errmsg(rdb_));
    sqlite3_bind_int64(q.get(), 1, since_ns);
    int rc;
    while ((rc = sqlite3_step(q.get())) == SQLITE_ROW) {
      std::string src(reinterpret_cast<const char*>(sqlite3_column_text(q.get(), 0)));
      int64_t received = sqlite3_column_int64(q.get(), 1);
      auto* p = static_cast<const char*>(sqlite3_column_blob(q.get(), 2));
      int n = sqlite3_column_bytes(q.get(), 2);
      auto ws = proto::decode_window_list(std::string_view(p, static_cast<size_t>(n)));
      if (!ws) return fail("sqlite load: corrupt row: {}", ws.error().message);
      fn(src, *ws, received);
    }
    if (rc != SQLITE_DONE) return fail("sqlite load: {}", sqlite3_errmsg(rdb_));
    return {};
  }

  Status apply_retention(int64_t before_ns) override {
    // Through the writer thread's connection, serialised with commits.
    std::unique_lock lk(mu_);
    retention_before_ = before_ns;
    cv_.notify_all();
    return {};
  }

  StoreInfo info() const override {
    std::lock_guard lk(mu_);
    return {"sqlite", path_, last_error_.empty(), last_error_};
  }

 private:
  struct Job {
    enum class Kind : uint8_t { batch, registration, unregistration } kind = Kind::batch;
    std::string src;  // the reporting agent, or the registered one
    int64_t received = 0, min_start = 0, max_start = 0, max_end = 0;
    size_t n = 0;
    std::string blob;               // the encoded windows when the caller had none
    std::string_view data;          // what is written: the caller's bytes or `blob`
    std::string error;              // written before `done`
    std::atomic<bool> done{false};  // its own futex: a commit wakes only the requests it committed
  };

  // Queues a write for the writer thread and waits until its transaction has committed.
  Status submit(const std::shared_ptr<Job>& job) {
    {
      std::lock_guard lk(mu_);
      if (stopping_) return fail("sqlite store is closing");
      queue_.push_back(job);
    }
    cv_.notify_all();
    job->done.wait(false, std::memory_order_acquire);
    if (!job->error.empty()) return fail("sqlite store {}: {}", path_, job->error);
    return {};
  }

  static Status exec(sqlite3* db, const char* sql) {
    char* err = nullptr;
    if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
      std::string m = err ? err : "unknown error";
      sqlite3_free(err);
      return fail("sqlite: {}", m);
    }
    return {};
  }

  std::string commit(std::deque<std::shared_ptr<Job>>& jobs) {
    if (auto st = exec(db_, "BEGIN"); !st) return st.error().message;
    for (auto& j : jobs) {
      if (j->kind == Job::Kind::unregistration) {
        sqlite3_stmt* s = delete_agent_.get();
        sqlite3_reset(s);
        sqlite3_bind_text(s, 1, j->src.data(), static_cast<int>(j->src.size()), SQLITE_STATIC);
        if (sqlite3_step(s) != SQLITE_DONE) {
          std::string e = sqlite3_errmsg(db_);
          sqlite3_reset(s);
          (void)exec(db_, "ROLLBACK");
          return e;
        }
        sqlite3_reset(s);
        continue;
      }
      if (j->kind == Job::Kind::registration) {
        sqlite3_stmt* s = upsert_agent_.get();
        sqlite3_reset(s);
        sqlite3_bind_text(s, 1, j->src.data(), static_cast<int>(j->src.size()), SQLITE_STATIC);
        sqlite3_bind_blob(s, 2, j->data.data(), static_cast<int>(j->data.size()), SQLITE_STATIC);
        sqlite3_bind_int64(s, 3, j->received);
        if (sqlite3_step(s) != SQLITE_DONE) {
          std::string e = sqlite3_errmsg(db_);
          sqlite3_reset(s);
          (void)exec(db_, "ROLLBACK");
          return e;
        }
        sqlite3_reset(s);
        continue;
      }
      sqlite3_stmt* s = insert_.get();
      sqlite3_reset(s);
      sqlite3_bind_text(s, 1, j->src.data(), static_cast<int>(j->src.size()), SQLITE_STATIC);
      sqlite3_bind_int64(s, 2, j->min_start);
      sqlite3_bind_int64(s, 3, j->max_start);
      sqlite3_bind_int64(s, 4, j->max_end);
      sqlite3_bind_int64(s, 5, j->received);
      sqlite3_bind_int64(s, 6, static_cast<int64_t>(j->n));
      sqlite3_bind_blob(s, 7, j->data.data(), static_cast<int>(j->data.size()), SQLITE_STATIC);
      if (sqlite3_step(s) != SQLITE_DONE) {
        std::string e = sqlite3_errmsg(db_);
        sqlite3_reset(s);
        (void)exec(db_, "ROLLBACK");
        return e;
      }
    }
    sqlite3_reset(insert_.get());
    if (auto st = exec(db_, "COMMIT"); !st) {
      (void)exec(db_, "ROLLBACK");
      return st.error().message;
    }
    return {};
  }

  // After every commit, on the writer thread, with the WAL's size in pages.
  static int on_wal_commit(void* self, sqlite3* db, const char* schema, int frames) {
    auto* store = static_cast<SqliteStore*>(self);
    if (frames >= kMaxWalFrames) {
      // PASSIVE: if the background checkpoint is running this one returns SQLITE_BUSY at once and
      // the next commit tries again; otherwise the whole WAL is copied and the next transaction
      // starts it over.
      int wal_pages = 0, copied = 0;
      const int rc = sqlite3_wal_checkpoint_v2(db, schema, SQLITE_CHECKPOINT_PASSIVE, &wal_pages, &copied);
      if (rc != SQLITE_OK && rc != SQLITE_BUSY) log().warn("sqlite checkpoint: {}", sqlite3_errmsg(db));
      store->checkpoints_in_commit_.fetch_add(1, std::memory_order_relaxed);
    } else if (frames >= kCheckpointFrames) {
      std::lock_guard lk(store->ck_mu_);
      store->ck_wanted_ = true;
      store->ck_cv_.notify_one();
    }
    return SQLITE_OK;
  }

  void checkpoint_loop() {
    std::unique_lock lk(ck_mu_);
    while (true) {
      ck_cv_.wait(lk, [&] { return ck_stopping_ || ck_wanted_; });
      if (ck_stopping_) break;
      ck_wanted_ = false;
      lk.unlock();
      int wal_pages = 0, copied = 0;
      const int rc = sqlite3_wal_checkpoint_v2(cdb_, nullptr, SQLITE_CHECKPOINT_PASSIVE, &wal_pages, &copied);
      if (rc != SQLITE_OK && rc != SQLITE_BUSY) log().warn("sqlite checkpoint: {}", sqlite3_errmsg(cdb_));
      lk.lock();
    }
  }

  void write_loop() {
    std::unique_lock lk(mu_);
    while (true) {
      cv_.wait(lk, [&] { return stopping_ || !queue_.empty() || retention_before_ != 0; });
      if (!queue_.empty()) {
        std::deque<std::shared_ptr<Job>> jobs;
        jobs.swap(queue_);
        lk.unlock();
        std::string err = commit(jobs);
        lk.lock();
        if (!err.empty()) log().error("sqlite store {}: commit failed: {}", path_, err);
        last_error_ = err;
        lk.unlock();
        for (auto& j : jobs) {
          j->error = err;
          j->done.store(true, std::memory_order_release);
          j->done.notify_one();
        }
        lk.lock();
        continue;
      }
      if (retention_before_ != 0) {
        int64_t before = retention_before_;
        retention_before_ = 0;
        lk.unlock();
        Stmt del(db_, "DELETE FROM batches WHERE max_end<?");
        if (del.ok()) {
          sqlite3_bind_int64(del.get(), 1, before);
          if (sqlite3_step(del.get()) != SQLITE_DONE)
            log().warn("sqlite retention: {}", sqlite3_errmsg(db_));
          else if (int n = sqlite3_changes(db_); n > 0)
            log().info("sqlite retention: deleted {} old batches", n);
        }
        lk.lock();
        continue;
      }
      if (stopping_) break;
    }
  }

  // WAL pages (64 KiB each) at which the checkpointer is woken (the automatic checkpoint's 1000
  // pages were 64 MB at this page size) and at which the writer checkpoints itself.
  static constexpr int kCheckpointFrames = 256;
  static constexpr int kMaxWalFrames = 4096;

  std::string path_;
  sqlite3* db_ = nullptr;   // writer thread only (after open)
  sqlite3* cdb_ = nullptr;  // checkpointer thread only (after open)
  sqlite3* rdb_ = nullptr;  // readers, under read_mu_
  Stmt insert_, upsert_agent_, delete_agent_;
  std::mutex read_mu_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  int64_t retention_before_ = 0;
  bool stopping_ = false;
  std::string last_error_;
  std::thread writer_;
  std::mutex ck_mu_;
  std::condition_variable ck_cv_;
  bool ck_wanted_ = false, ck_stopping_ = false;
  std::atomic<uint64_t> checkpoints_in_commit_{0};  // kMaxWalFrames reached: the writer checkpointed
  std::thread checkpointer_;
};

}  // namespace

Result<std::unique_ptr<Store>> open_sqlite_store(const std::string& path) {
  auto s = std::make_unique<SqliteStore>();
  if (auto st = s->open(path); !st) return std::unexpected(st.error());
  return std::unique_ptr<Store>(std::move(s));
}

Result<std::unique_ptr<Store>> open_store(const std::string& spec, const redis::TlsFiles& tls) {
  if (spec.starts_with("sqlite:")) return open_sqlite_store(spec.substr(7));
  if (spec.starts_with("redis://") || spec.starts_with("rediss://") || spec.starts_with("redis+unix://") ||
      spec.starts_with("redis-cluster://") || spec.starts_with("rediss-cluster://"))
    return open_redis_store(spec, tls);
  return fail(
      "unknown store '{}' (expected sqlite:PATH, redis[s]://HOST:PORT, redis+unix:///PATH or "
      "redis[s]-cluster://HOST:PORT[,HOST:PORT...])",
      spec);
}

}  // namespace weft::controller
