#include "cli/session.h"

#include <fmt/format.h>

#include <istream>
#include <ostream>

namespace magnetar::cli {

namespace {

void write_pretty(const Json& j, int depth, std::string& out) {
  if (j.is_object()) {
    if (j.empty()) {
      out += "{ }";
      return;
    }
    out += '{';
    bool first = true;
    for (const auto& item : j.items()) {
      out += first ? "\n" : ",\n";
      first = false;
      out.append(static_cast<size_t>(2 * (depth + 1)), ' ');
      out += Json(item.key()).dump(-1, ' ', false, Json::error_handler_t::replace);
      out += " : ";
      write_pretty(item.value(), depth + 1, out);
    }
    out += '\n';
    out.append(static_cast<size_t>(2 * depth), ' ');
    out += '}';
  } else if (j.is_array()) {
    if (j.empty()) {
      out += "[ ]";
      return;
    }
    out += "[ ";
    bool first = true;
    for (const Json& e : j) {
      if (!first) out += ", ";
      first = false;
      write_pretty(e, depth, out);  // arrays do not indent their elements
    }
    out += " ]";
  } else {
    out += j.dump(-1, ' ', false, Json::error_handler_t::replace);
  }
}

// The standard reason phrase of the statuses an admin call may meet.
std::string_view status_text(int status) {
  switch (status) {
    case 300:
      return "Multiple Choices";
    case 301:
      return "Moved Permanently";
    case 302:
      return "Found";
    case 307:
      return "Temporary Redirect";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 409:
      return "Conflict";
    case 412:
      return "Precondition Failed";
    case 413:
      return "Request Entity Too Large";
    case 415:
      return "Unsupported Media Type";
    case 429:
      return "Too Many Requests";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "";
  }
}

}  // namespace

std::string pretty_json(const Json& j) {
  std::string out;
  write_pretty(j, 0, out);
  return out;
}

Session::Session(const AdminSettings& settings, std::ostream& out, std::ostream& err,
                 std::istream& in)
    : base_url_(settings.admin_url),
      client_([&settings] {
        http::ClientOptions options;
        options.timeout = settings.timeout;
        options.user_agent = "magnetar-admin";
        options.tls_trust_certs_file_path = settings.tls.trust_certs_file;
        options.tls_allow_insecure_connection = settings.tls.allow_insecure;
        options.tls_validate_hostname = settings.tls.validate_hostname;
        options.tls_certificate_file_path = settings.tls.certificate_file;
        options.tls_private_key_file_path = settings.tls.key_file;
        for (const auto& [name, value] : settings.headers) options.default_headers[name] = value;
        return options;
      }()),
      out_(out),
      err_(err),
      in_(in) {
  while (!base_url_.empty() && base_url_.back() == '/') base_url_.pop_back();
}

Result<http::HttpResponse> Session::send(std::string_view method, const std::string& path,
                                         std::string body) {
  http::HttpRequest request;
  request.method = std::string(method);
  request.url = base_url_ + path;
  request.body = std::move(body);
  return client_.send_blocking(std::move(request));
}

std::optional<http::HttpResponse> Session::call(std::string_view method, const std::string& path,
                                                std::string body) {
  auto response = send(method, path, std::move(body));
  if (!response.ok()) {
    const Status& st = response.status();
    err_ << st.message() << "\n\n";
    if (st.is(Errc::kUnavailable) || st.is(Errc::kTimeout)) {
      err_ << "Error connecting to: " << base_url_ << "\n";
    }
    return std::nullopt;
  }
  const int status = response->status;
  if (status >= 200 && status < 300) return std::move(response).value();
  std::string reason;
  const Json j = parse(*response);
  if (j.is_object() && j.contains("reason") && j["reason"].is_string()) {
    reason = j["reason"].get<std::string>();
  }
  if (reason.empty()) {
    reason = fmt::format("HTTP {} {}", status, status_text(status));
    while (!reason.empty() && reason.back() == ' ') reason.pop_back();
  }
  err_ << reason << "\n\nReason: " << reason << "\n";
  return std::nullopt;
}

int Session::change(std::string_view method, const std::string& path, std::string body) {
  return call(method, path, std::move(body)) ? 0 : 1;
}

int Session::print_list(const std::string& path) {
  auto response = call("GET", path);
  if (!response) return 1;
  const Json j = parse(*response);
  if (j.is_array()) {
    for (const Json& e : j) print(e);
  } else if (!j.is_null()) {
    print(j);
  }
  return 0;
}

int Session::print_value(const std::string& path) {
  auto response = call("GET", path);
  if (!response) return 1;
  print(parse(*response));
  return 0;
}

int Session::print_map(const std::string& path) {
  auto response = call("GET", path);
  if (!response) return 1;
  const Json map = parse(*response);
  if (!map.is_object()) {
    print(map);
    return 0;
  }
  for (const auto& [key, value] : map.items()) {
    std::string text;
    if (value.is_array()) {
      text = "[";
      for (const Json& item : value) {
        if (text.size() > 1) text += ", ";
        text += item.is_string() ? item.get<std::string>() : item.dump();
      }
      text += "]";
    } else {
      text = value.is_string() ? value.get<std::string>() : value.dump();
    }
    out_ << key << "    " << text << "\n";
  }
  return 0;
}

void Session::print(const Json& value) {
  if (value.is_string()) {
    out_ << value.get<std::string>() << "\n";
  } else {
    out_ << pretty_json(value) << "\n";
  }
}

Json Session::parse(const http::HttpResponse& response) {
  if (response.body.find_first_not_of(" \t\r\n") == std::string::npos) return Json();
  Json j = Json::parse(response.body, nullptr, false);
  if (j.is_discarded()) return Json(response.body);
  return j;
}

int Session::argument_error(std::string_view message) {
  err_ << message << "\n\n";
  return 1;
}

bool Session::confirm(std::string_view question) {
  out_ << question << " (Y or N) " << std::flush;  // as pulsar-admin asks
  std::string answer;
  if (!std::getline(in_, answer)) return false;
  return answer == "y" || answer == "Y" || answer == "yes" || answer == "Yes";
}

}  // namespace magnetar::cli
