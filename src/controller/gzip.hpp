#pragma once
// gzip for large API answers (the dashboard's mesh). Level 1: at a few hundred MB/s it costs less
// than it saves even on loopback, where Brotli at its maximum quality took 19 s for a 6 MB mesh.
#include <string>
#include <string_view>

#include "base/result.hpp"

namespace weft::controller {

Result<std::string> gzip_compress(std::string_view data, int level = 1);

// True when an Accept-Encoding header value allows gzip (a q=0 refuses it).
bool accepts_gzip(std::string_view accept_encoding);

}  // namespace weft::controller
