#pragma once
// What a magnetar-admin command runs against: the admin REST API at one URL, and the output
// streams. Calls block (HttpClient::send_blocking); the tool is single-threaded.
//
// Output follows pulsar-admin: lists one item per line, strings as they are, everything else
// as JSON laid out as Jackson's default pretty printer does (`"key" : value`, 2-space
// indent, arrays inline), nothing for a successful change. A failed call prints the
// server's reason (or "HTTP <code> <text>"), a blank line and "Reason: <reason>" to the error
// stream; the command then exits 1.
//
// The Session holds the bearer token only inside the HTTP client's default headers and never
// prints it.

#include <chrono>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "cli/client_conf.h"
#include "http/http_client.h"

namespace magnetar::cli {

using Json = nlohmann::ordered_json;

struct AdminSettings {
  std::string admin_url = "http://localhost:8080";  // without a trailing '/'
  // The credentials' headers (Authorization: Bearer ...); empty: none.
  std::map<std::string, std::string> headers;
  std::chrono::seconds timeout{30};
  TlsSettings tls;  // for https:// admin URLs
};

// Jackson's DefaultPrettyPrinter layout, without a trailing newline.
std::string pretty_json(const Json& j);

class Session {
 public:
  // `out`, `err` and `in` must outlive the session.
  Session(const AdminSettings& settings, std::ostream& out, std::ostream& err, std::istream& in);

  // One call of `method` on `path` ("/admin/v2/..." with any query), whatever its status;
  // prints nothing.
  Result<http::HttpResponse> send(std::string_view method, const std::string& path,
                                  std::string body = "");

  // One call of `method` on `path` ("/admin/v2/..." with any query); a non-empty body is sent
  // as application/json. Returns the response when it is 2xx; otherwise prints the failure
  // and returns nullopt.
  std::optional<http::HttpResponse> call(std::string_view method, const std::string& path,
                                         std::string body = "");

  // A change: prints nothing on success. Returns the exit code.
  int change(std::string_view method, const std::string& path, std::string body = "");
  // GET, then one line per element of the JSON list answered.
  int print_list(const std::string& path);
  // GET, then the value answered (an empty answer prints "null").
  int print_value(const std::string& path);

  // GET of a JSON object, printed as pulsar-admin prints a Java map: a line per key, the key,
  // four spaces and the value (lists as Java prints a collection: "[a, b]").
  int print_map(const std::string& path);

  // Prints one value as pulsar-admin prints an object: strings as they are, the rest as JSON.
  void print(const Json& value);
  // The body of a response as JSON (null when empty, the raw text as a string when not JSON).
  static Json parse(const http::HttpResponse& response);

  // A wrong argument found while running a command: the message and a blank line. Returns 1.
  int argument_error(std::string_view message);
  // Asks a yes/no question on the error stream, reads the answer from the input stream.
  bool confirm(std::string_view question);

  std::ostream& out() { return out_; }
  std::ostream& err() { return err_; }

 private:
  std::string base_url_;
  http::HttpClient client_;
  std::ostream& out_;
  std::ostream& err_;
  std::istream& in_;
};

}  // namespace magnetar::cli
