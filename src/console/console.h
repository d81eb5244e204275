#pragma once
// The web console: a single-page application served at /console/ by every broker and proxy
// (README.md). This side only serves its embedded static files; everything the page shows it
// reads in the browser from the admin REST API (/admin/v2/...), which authenticates and
// authorizes each call as usual. The files hold no data, so they are served to anyone.

#include <optional>
#include <string_view>

#include "http/http_server.h"

namespace magnetar::console {

// The path the console lives under, with its trailing '/'.
inline constexpr std::string_view kPrefix = "/console/";

// The Content-Security-Policy of every console answer: scripts, styles, images and fetches
// from this origin only, no frames, no forms, no plugins.
extern const char* const kContentSecurityPolicy;

// The Content-Type of an asset's name, by its extension.
std::string_view content_type_of(std::string_view name);

// The answer to a GET of `request.path`: "/console" is redirected to "/console/"; under
// "/console/" the index ("" or "index.html") or one embedded file, 304 when If-None-Match
// names its ETag; 404 for any other path (no file system is consulted).
http::Response serve(const http::Request& request);

// Registers GET /console and GET /console/* on `server`.
void add_console_routes(http::HttpServer& server);

}  // namespace magnetar::console
