#pragma once
// The probers produce windows in the agent <-> controller format (proto/window_stats.hpp). These
// using-declarations let probe code (and the CLI commands built on it) keep saying
// probe::WindowStats / probe::Protocol: one type, defined once in src/proto.
#include "proto/window_stats.hpp"

namespace weft::probe {

using proto::FlowStats;
using proto::LatencySummary;
using proto::Protocol;
using proto::TimestampSource;
using proto::to_string;
using proto::WindowStats;

}  // namespace weft::probe
