#pragma once
// The ingest path: decode a report, validate all of it, sort out duplicates, make the new windows
// durable in the store, then update the in-memory mesh. A request is taken entirely or not at all.
#include <cstdint>
#include <string>
#include <string_view>

#include "controller/flows.hpp"
#include "controller/mesh.hpp"
#include "controller/remote_write_queue.hpp"
#include "controller/report_policy.hpp"
#include "controller/store.hpp"
#include "proto/report.hpp"

namespace weft::controller {

struct IngestReply {
  int status = 200;  // HTTP status
  std::string body;  // JSON
};

// Checks what the numbers mean; decoding already checked the encoding. `now_ns` is the controller's
// clock: windows may not end in the future (beyond a clock-skew allowance) nor before retention.
Status validate_report(const proto::Report& r, const Config& cfg, int64_t now_ns);
class Ingest {
 public:
  Ingest(Mesh& mesh, Store& store) : mesh_(mesh), store_(store), flows_(mesh), policy_(mesh) {}

  // `content_type` picks the decoder (binary or JSON). `bound_agent`: the agent the request's
  // credential names ("" for a shared token or none): the report must be that agent's, and its
  // size is bounded by that agent's pinglist before it is decoded (report_policy.hpp). Thread-safe.
  IngestReply handle(std::string_view content_type, std::string_view body, int64_t now_ns,
                     std::string_view bound_agent = {});
  // An already decoded report (the benchmark and tests use it to skip HTTP).
  IngestReply handle_report(const proto::Report& r, int64_t now_ns, std::string_view bound_agent = {});
  ReportPolicy& policy() { return policy_; }
  // Where accepted windows go for Prometheus remote write (null: nowhere). Set before requests come.
  void set_remote_write_queue(RemoteWriteQueue* q) { remote_write_ = q; }
  // The per-flow state the accepted reports fed (flows.hpp): fault localisation's observations.
  const FlowTable& flows() const { return flows_; }

 private:
  IngestReply reject(int status, const std::string& message);
  Mesh& mesh_;
  Store& store_;
  FlowTable flows_;
  ReportPolicy policy_;
  RemoteWriteQueue* remote_write_ = nullptr;
};

// {"error": message} with JSON escaping.
std::string error_json(std::string_view message);

}  // namespace weft::controller
