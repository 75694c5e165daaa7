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

namespace httplib {
class Server;
}

namespace weft::controller {

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

  // Re-reads the config file; a bad file keeps the old config (and says why in the log and result).
  Status reload();

  Mesh& mesh() { return *mesh_; }
  Ingest& ingest() { return *ingest_; }
  // The ports actually bound, in `listen` order (useful with port 0).
  std::vector<int> bound_ports() const { return ports_; }

 private:
  Status start_http(const Config& cfg);       // http_api.cpp
  void install_routes(httplib::Server& srv);  // http_api.cpp
  void chores();

  std::string config_path_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<Mesh> mesh_;
  std::unique_ptr<Ingest> ingest_;
  std::vector<std::unique_ptr<httplib::Server>> servers_;
  std::vector<std::thread> threads_;
  std::vector<int> ports_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::mutex reload_mu_;
  int64_t config_mtime_ns_ = 0;
};

}  // namespace weft::controller
