#include "controller/web_assets.hpp"

#include <span>

#include "controller/web_assets_table.hpp"

namespace weft::controller {

std::optional<WebAsset> find_web_asset(std::string_view path) {
  if (path == "/" || path.empty()) path = "/index.html";
  // Only the page and its assets are public; the table also cannot hold anything else,
  // but saying so here keeps a stray file in web/ from becoming a served URL by accident.
  if (path != "/index.html" && !path.starts_with("/assets/")) return std::nullopt;
  for (const auto& a : std::span(detail::kEmbeddedAssets, detail::kEmbeddedAssetCount)) {
    if (a.path == path) return WebAsset{a.body, a.content_type, a.etag};
  }
  return std::nullopt;
}

}  // namespace weft::controller
