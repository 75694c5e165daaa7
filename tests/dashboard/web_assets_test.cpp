#include "controller/web_assets.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

namespace weft::controller {
namespace {

namespace fs = std::filesystem;
const fs::path kWebDir = WEFT_WEB_DIR;  // the source web/ directory the binary was built from

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(WebAssets, EveryFileIsEmbeddedByteForByte) {
  size_t files = 0;
  for (const auto& e : fs::recursive_directory_iterator(kWebDir / "assets")) {
    if (!e.is_regular_file()) continue;
    const std::string url = "/" + fs::relative(e.path(), kWebDir).generic_string();
    const auto a = find_web_asset(url);
    ASSERT_TRUE(a.has_value()) << url;
    EXPECT_EQ(a->body, read_file(e.path())) << url;
    files++;
  }
  EXPECT_GE(files, 3u);
  const auto index = find_web_asset("/index.html");
  ASSERT_TRUE(index.has_value());
  EXPECT_EQ(index->body, read_file(kWebDir / "index.html"));
}

TEST(WebAssets, RootIsThePageWithContentTypes) {
  const auto root = find_web_asset("/");
  ASSERT_TRUE(root.has_value());
  EXPECT_EQ(root->content_type, "text/html; charset=utf-8");
  EXPECT_NE(root->body.find("<canvas id=\"heatmap\""), std::string_view::npos);
  EXPECT_EQ(find_web_asset("/assets/app.js")->content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(find_web_asset("/assets/style.css")->content_type, "text/css; charset=utf-8");
  EXPECT_TRUE(root->etag.starts_with("\"") && root->etag.ends_with("\"") && root->etag.size() > 8);
  EXPECT_NE(root->etag, find_web_asset("/assets/app.js")->etag);
}

TEST(WebAssets, UnknownAndTraversalPathsAreNotFound) {
  for (const char* p :
       {"/nope", "/assets/nope.js", "/assets/../index.html", "/../web/index.html", "/CMakeLists.txt",
        "/embed_assets.cmake", "/assets/", "/index.html?x=1", "//index.html", "assets/app.js"}) {
    EXPECT_FALSE(find_web_asset(p).has_value()) << p;
  }
}

// Everything the page loads must be served too: no CDN, no file the binary lacks.
TEST(WebAssets, EveryReferenceResolves) {
  const std::regex html_ref(R"re((?:src|href)="(/[^"]*)")re");
  const std::regex js_import(R"re(from\s+"\./([^"]+)")re");
  const std::string_view page = find_web_asset("/")->body;
  size_t refs = 0;
  for (std::cregex_iterator it(page.begin(), page.end(), html_ref), end; it != end; ++it) {
    EXPECT_TRUE(find_web_asset((*it)[1].str()).has_value()) << (*it)[1];
    refs++;
  }
  EXPECT_GE(refs, 2u);
  EXPECT_EQ(page.find("http://"), std::string_view::npos) << "the page must not load from elsewhere";
  EXPECT_EQ(page.find("https://"), std::string_view::npos);
  for (const auto& e : fs::directory_iterator(kWebDir / "assets")) {
    if (e.path().extension() != ".js") continue;
    const std::string js(find_web_asset("/assets/" + e.path().filename().string())->body);
    for (std::sregex_iterator it(js.begin(), js.end(), js_import), end; it != end; ++it) {
      EXPECT_TRUE(find_web_asset("/assets/" + (*it)[1].str()).has_value())
          << e.path() << " imports " << (*it)[1];
    }
  }
}

}  // namespace
}  // namespace weft::controller
