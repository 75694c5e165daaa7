#include "controller/gzip.hpp"

#include <zlib.h>

#include <algorithm>
#include <cctype>

namespace weft::controller {

Result<std::string> gzip_compress(std::string_view data, int level) {
  z_stream z{};
  // windowBits 15 + 16: a gzip header and trailer rather than a bare zlib stream.
  if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return fail("gzip: deflateInit2 failed");
  std::string out(deflateBound(&z, static_cast<uLong>(data.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  const uLong written = z.total_out;
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return fail("gzip: deflate failed ({})", rc);
  out.resize(written);
  return out;
}

bool accepts_gzip(std::string_view v) {
  size_t pos = 0;
  while (pos < v.size()) {
    size_t end = v.find(',', pos);
    if (end == std::string_view::npos) end = v.size();
    std::string_view item = v.substr(pos, end - pos);
    pos = end + 1;
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    std::string_view coding = item.substr(0, item.find(';'));
    while (!coding.empty() && coding.back() == ' ') coding.remove_suffix(1);
    std::string lower(coding);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    if (lower != "gzip" && lower != "*") continue;
    // "gzip;q=0" refuses it.
    if (auto q = item.find("q="); q != std::string_view::npos) {
      std::string_view qv = item.substr(q + 2);
      if (qv.starts_with("0") && qv.find_first_not_of("0.") == std::string_view::npos) return false;
    }
    return true;
  }
  return false;
}

}  // namespace weft::controller
