#pragma once
// The table that web/embed_assets.cmake generates; only web_assets.cpp reads it.
#include <cstddef>
#include <string_view>

namespace weft::controller::detail {

struct EmbeddedAsset {
  std::string_view path;  // "/index.html", "/assets/app.js", ... (sorted by path)
  std::string_view content_type;
  std::string_view body;
  std::string_view etag;
};

extern const EmbeddedAsset kEmbeddedAssets[];
extern const std::size_t kEmbeddedAssetCount;

}  // namespace weft::controller::detail
