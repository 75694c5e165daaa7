#pragma once
// Shell-style glob match of a host name (only * and ? are special): group members in the config.
// On its own so the blame and metrics code (tests compile them without the config parser) can use it.
#include <string_view>

namespace weft::controller {

bool glob_match(std::string_view pattern, std::string_view name);

}  // namespace weft::controller
