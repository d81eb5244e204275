#pragma once
// The web console's static files, compiled into the binary: embed_assets.cmake turns each file
// of web/ named in CMakeLists.txt into a byte array of the generated console_assets.cc, with
// its ETag (the first 16 hex digits of the file's SHA-256). Nothing is read from disk at run
// time, so a server serves exactly these files and nothing else.

#include <cstddef>
#include <span>
#include <string_view>

namespace magnetar::console {

struct Asset {
  std::string_view name;  // path under /console/, e.g. "index.html", "chart.js"
  std::string_view etag;  // quoted, e.g. "\"3f2a...\""
  std::string_view data;  // the file's bytes (static storage)
};

// Every embedded file, in the order CMakeLists.txt lists them (defined in the generated file).
std::span<const Asset> embedded_assets();

}  // namespace magnetar::console
