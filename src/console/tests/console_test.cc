// The console's file server: what it serves, with which headers, and what it refuses; the
// embedded files against web/ on disk; served by a real HttpServer through the HTTP client.

#include "console/console.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "console/assets.h"
#include "http/http_client.h"

namespace magnetar::console {
namespace {

http::Request get(std::string path) {
  http::Request r;
  r.method = "GET";
  r.target = path;
  r.path = std::move(path);
  return r;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(ConsoleTest, TheIndexIsServedAtTheFolderWithTypeCspAndCacheHeaders) {
  auto r = serve(get("/console/"));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "text/html; charset=utf-8");
  EXPECT_NE(r.body.find("<!doctype html>"), std::string::npos);
  EXPECT_EQ(r.headers["Content-Security-Policy"], kContentSecurityPolicy);
  EXPECT_EQ(r.headers["X-Content-Type-Options"], "nosniff");
  EXPECT_EQ(r.headers["Cache-Control"], "no-cache");
  EXPECT_FALSE(r.headers["ETag"].empty());
  EXPECT_EQ(serve(get("/console/index.html")).body, r.body);
}

TEST(ConsoleTest, TheBarePathRedirectsToTheFolder) {
  auto r = serve(get("/console"));
  EXPECT_EQ(r.status, 302);
  EXPECT_EQ(r.headers["Location"], "/console/");
}

TEST(ConsoleTest, EachKindOfFileHasItsContentType) {
  EXPECT_EQ(serve(get("/console/main.js")).content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(serve(get("/console/console.css")).content_type, "text/css; charset=utf-8");
  EXPECT_EQ(serve(get("/console/favicon.svg")).content_type, "image/svg+xml");
  EXPECT_EQ(content_type_of("x.bin"), "application/octet-stream");
}

TEST(ConsoleTest, OnlyKnownFilesAreServedNeverAPathOnDisk) {
  for (const char* path :
       {"/console/../../etc/passwd", "/console/%2e%2e/%2e%2e/etc/passwd", "/console/nope.js",
        "/console//main.js", "/console/./main.js", "/console/main.js/", "/console/MAIN.JS",
        "/console/web/main.js", "/consolex", "/console/\x01\xff", "/"}) {
    auto r = serve(get(path));
    EXPECT_EQ(r.status, 404) << path;
    EXPECT_EQ(r.headers["Content-Security-Policy"], kContentSecurityPolicy) << path;
  }
}

TEST(ConsoleTest, AMatchingIfNoneMatchIsAnswered304WithoutBody) {
  auto first = serve(get("/console/main.js"));
  ASSERT_EQ(first.status, 200);
  auto again = get("/console/main.js");
  again.headers["if-none-match"] = "\"other\", W/" + first.headers["ETag"];
  auto r = serve(again);
  EXPECT_EQ(r.status, 304);
  EXPECT_TRUE(r.body.empty());
  again.headers["if-none-match"] = "\"other\"";
  EXPECT_EQ(serve(again).status, 200);
}

// The build embeds every file of web/ byte for byte, and each asset has its own ETag.
TEST(ConsoleTest, EveryFileOfTheWebFolderIsEmbeddedAsItIs) {
  std::set<std::string> embedded, etags;
  for (const Asset& a : embedded_assets()) {
    embedded.insert(std::string(a.name));
    etags.insert(std::string(a.etag));
    EXPECT_EQ(std::string(a.data),
              read_file(std::filesystem::path(MAGNETAR_CONSOLE_WEB_DIR) / std::string(a.name)))
        << a.name;
  }
  EXPECT_EQ(etags.size(), embedded.size());
  std::set<std::string> on_disk;
  for (const auto& e : std::filesystem::directory_iterator(MAGNETAR_CONSOLE_WEB_DIR)) {
    on_disk.insert(e.path().filename().string());
  }
  EXPECT_EQ(embedded, on_disk) << "CMakeLists.txt's CONSOLE_ASSETS must list every file of web/";
}

// No file names an outside host: the only absolute URL allowed is the SVG namespace (a name,
// never fetched). The page's CSP would block any other, but it should not be there at all.
TEST(ConsoleTest, NoFileRefersToAnOutsideHost) {
  const std::regex url(R"(https?://[^\s"'`)]*|//[a-zA-Z0-9.-]+\.[a-z]{2,}/)");
  for (const Asset& a : embedded_assets()) {
    const std::string text(a.data);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), url);
         it != std::sregex_iterator(); ++it) {
      EXPECT_EQ(it->str(), "http://www.w3.org/2000/svg") << a.name;
    }
  }
}

TEST(ConsoleTest, ServedByAnHttpServerWithItsHeaders) {
  auto server = http::HttpServer::start({.address = "127.0.0.1", .port = 0}, log::Logger("test"));
  ASSERT_TRUE(server.ok());
  add_console_routes(**server);
  http::HttpClient client;
  const std::string base = "http://127.0.0.1:" + std::to_string((*server)->port());
  auto bare = client.send_blocking({.url = base + "/console"});
  ASSERT_TRUE(bare.ok()) << bare.status().to_string();
  EXPECT_EQ(bare->status, 200);
  EXPECT_EQ(bare->url, base + "/console/");  // after the redirect
  auto index = client.send_blocking({.url = base + "/console/"});
  ASSERT_TRUE(index.ok());
  EXPECT_EQ(index->status, 200);
  EXPECT_EQ(index->header("content-type"), "text/html; charset=utf-8");
  EXPECT_EQ(index->header("content-security-policy"), kContentSecurityPolicy);
  auto script = client.send_blocking(
      {.url = base + "/console/main.js", .headers = {{"If-None-Match", index->header("etag")}}});
  ASSERT_TRUE(script.ok());
  EXPECT_EQ(script->status, 200);  // another file's ETag
  auto missing = client.send_blocking({.url = base + "/console/../admin/v2/clusters"});
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->status, 404);
  auto post = client.send_blocking({.method = "POST", .url = base + "/console/"});
  ASSERT_TRUE(post.ok());
  EXPECT_EQ(post->status, 405);
  (*server)->stop();
}

}  // namespace
}  // namespace magnetar::console
