#pragma once
// Decoding and checking an agent's registration (POST /api/v1/register, docs/api.md). Every
// error message names the field, and the handler answers it with 400.
#include <string_view>

#include "agent/registration.hpp"
#include "base/result.hpp"

namespace weft::controller {

Result<agent::Registration> parse_registration(std::string_view body);

}  // namespace weft::controller
