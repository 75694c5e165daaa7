#pragma once
// POST /api/v1/register bodies -> Registration. One parser for both the HTTP handler and a restarted
// controller, which replays the bodies its store kept (so a field added to registration is
// persisted and restored without touching the stores).
#include <string_view>

#include "base/result.hpp"
#include "controller/mesh.hpp"

namespace weft::controller {

// Strict: every error names the field (docs/api.md "POST /api/v1/register").
Result<Registration> parse_registration(std::string_view body);

}  // namespace weft::controller
