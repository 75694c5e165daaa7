#pragma once
// The dashboard's files (web/), embedded into the binary at build time by
// web/embed_assets.cmake, so `weft controller` serves its page with no files on disk.
#include <optional>
#include <string_view>

namespace weft::controller {

struct WebAsset {
  std::string_view body;          // the file's exact bytes; static storage, never freed
  std::string_view content_type;  // e.g. "text/javascript; charset=utf-8"
  std::string_view etag;          // quoted strong validator from the content hash, for If-None-Match
};

// Looks up a request path: "/" and "/index.html" give the page, "/assets/<file>" its scripts and
// styles. Anything else (including paths with "..", queries or unknown files) gives nullopt.
[[nodiscard]] std::optional<WebAsset> find_web_asset(std::string_view path);

}  // namespace weft::controller
