#pragma once
// The controller process: config (with reload), store, mesh state, ingest, HTTP API, and the
// background chores (marking silent agents down, retention).
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/result.hpp"
#include "controller/config.hpp"
#include "controller/ingest.hpp"
#include "controller/mesh.hpp"
#include "controller/store.hpp"

namespace weft::net::http {
class Server;
class TlsServerContext;
}  // namespace weft::net::http

namespace weft::controller {

class HttpApi;
class ReplicaSync;
class RemoteWriter;
class RemoteWriteQueue;

class Controller {
 public:
  // Loads nothing yet; start() does the work so errors come back as a Status.
  Controller();
  ~Controller();
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // `config_path` is watched for changes; `cfg` is its parsed content.
  Status start(Config cfg);
  // Blocks until stop().
  void wait();
  void stop();
  // Asks a start() still waiting for its store to give up (safe from another thread, e.g. on
  // SIGTERM); after start() returns, stop() still has to be called.
  void request_stop();
  bool stop_requested();

  // Re-reads the config file, and the TLS certificate and key (new connections get them; open ones
  // keep theirs); a bad file keeps the old config or certificate (and says why in the log and result).
  Status reload();

  Mesh& mesh() { return *mesh_; }
  Ingest& ingest() { return *ingest_; }
  // The ports actually bound, in `listen` order (useful with port 0).
  std::vector<int> bound_ports() const { return ports_; }

 private:
  Status start_http(const Config& cfg);
  Result<std::unique_ptr<Store>> open_store_patiently(const Config& cfg);
  void chores();

  std::string config_path_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<Mesh> mesh_;
  std::unique_ptr<Ingest> ingest_;
  std::unique_ptr<HttpApi> api_;
  std::unique_ptr<net::http::Server> server_;
  std::shared_ptr<net::http::TlsServerContext> tls_;  // HTTPS: its files are read again on reload()
  std::unique_ptr<ReplicaSync> sync_;                 // a shared store's other controllers (replica_sync.hpp)
  std::unique_ptr<RemoteWriteQueue> remote_write_queue_;  // windows owed to the receiver
  std::unique_ptr<RemoteWriter> remote_write_;            // Prometheus remote write (remote_write.hpp)
  std::vector<std::thread> threads_;
  std::vector<int> ports_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::mutex reload_mu_;
  int64_t config_mtime_ns_ = 0;
  int64_t topology_mtime_ns_ = 0;  // of the config's topology_file: a change reloads the config too
};

}  // namespace weft::controller
