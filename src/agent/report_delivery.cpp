#include "agent/report_delivery.hpp"

#include "base/log.hpp"
#include "proto/report_reply.hpp"

namespace weft::agent {

ReportDelivery::Outcome ReportDelivery::deliver(const std::string& agent, uint64_t pinglist_version,
                                                const std::function<proto::Health()>& health) {
  Outcome out;
  for (int sent = 0; sent < 500 && !state_.is_stopping(); ++sent) {
    auto batch = outbox_.front();
    proto::Report rep;
    rep.agent = agent;
    rep.seq = batch ? batch->seq : ++seq_;
    rep.health = health();
    rep.alarms = state_.pending_alarms();
    rep.paths = state_.pending_paths();
    if (batch)
      rep.windows = std::move(batch->windows);
    else if (sent > 0)
      return out;  // a heartbeat only when nothing else went out this tick
    auto res = client_.post("/api/v1/report", proto::encode_binary(rep), proto::kBinaryContentType);
    const int status = res.status;
    // The batch stays queued for the next replica.
    if ((status == 0 || status == 503) && client_.next_replica()) out.must_register = true;
    if (status == 409) {  // the controller forgot us (restart): register and resend
      out.must_register = true;
      return out;
    }
    if (status != 200) {
      report_failures++;
      // A wrong token, an overloaded or restarting controller, a body limit are the controller's
      // to fix, so the batch stays at the head of the outbox (which spools and is bounded) and is
      // sent again. Only a batch the controller calls malformed, five times running, is set aside
      // (kept on disk, counted), since it would otherwise block every batch behind it for good.
      const bool malformed = status == 400 || status == 415 || status == 422;
      if (malformed && batch && ++content_refusals_ >= kContentRefusalsBeforeSetAside) {
        content_refusals_ = 0;
        std::string kept = outbox_.set_aside(batch->seq);
        log().error("report: batch {} ({} windows) refused as malformed (HTTP {}: {}); {}", rep.seq,
                    rep.windows.size(), status, res.body.substr(0, 300),
                    kept.empty() ? "no spool directory: dropped" : "kept in " + kept);
        return out;
      }
      if (report_failures % 10 == 1)
        log().warn("report: {} ({}); keeping {} windows in the outbox and retrying",
                   status ? fmt::format("refused with HTTP {}", status) : "controller unreachable",
                   status ? res.body.substr(0, 300) : res.error, outbox_.pending_windows());
      return out;
    }
    content_refusals_ = 0;
    reports_sent++;
    state_.forget_alarms(rep.alarms.size());
    state_.forget_paths(rep.paths.size());
    if (batch) {
      windows_delivered += rep.windows.size();
      outbox_.pop(batch->seq);
    }
    if (auto reply = proto::decode_report_reply(res.body);
        reply && reply->pinglist_version != pinglist_version)
      out.pinglist_changed = true;
    if (!batch) return out;
  }
  return out;
}

}  // namespace weft::agent
