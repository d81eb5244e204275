// HTTP lookups (lookup_service.h) over the brokers' REST API, with http/http_client.h: one
// GET per call on the calling loop, redirects followed by the HTTP client, the answer's
// status and JSON turned into what the binary protocol would have answered.

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "client/lookup_service.h"
#include "client/service_hosts.h"
#include "common/version.h"
#include "http/http_client.h"
#include "http/http_server.h"
#include "protocol/topic_name.h"

namespace magnetar::client {

namespace {

using Json = nlohmann::json;

constexpr std::string_view kHttp = "http://";
constexpr std::string_view kHttps = "https://";

// A failure of the HTTP client (no complete answer) as the client library's error.
Status transport_failure(const Status& st) {
  const std::string text = fmt::format("HTTP lookup: {}", st.message());
  if (st.code().category() != http::client_category()) {
    return Status(ClientError::kConnectError, text);
  }
  switch (static_cast<http::ClientError>(st.code().value())) {
    case http::ClientError::kTimeout:
      return Status(ClientError::kTimeout, text);
    case http::ClientError::kResolveFailed:
    case http::ClientError::kConnectionRefused:
    case http::ClientError::kConnectionFailed:
    case http::ClientError::kTlsHandshakeFailed:
      return Status(ClientError::kConnectError, text);
    case http::ClientError::kTlsConfiguration:
      return Status(ClientError::kInvalidConfiguration, text);
    case http::ClientError::kTooManyRedirects:
      return Status(ClientError::kTooManyLookupRedirects, text);
    default:  // a bad redirect target, a malformed or oversized answer
      return Status(ClientError::kProtocolError, text);
  }
}

// A non-200 answer as the broker error the binary protocol would have carried (retriable
// for 5xx and 429, as Pulsar's HTTP lookup treats them).
Status answer_failure(const http::HttpResponse& r) {
  std::string reason;
  const Json body = Json::parse(r.body, nullptr, false);
  if (body.is_object() && body.contains("reason") && body["reason"].is_string()) {
    reason = body["reason"].get<std::string>();
  } else {
    reason = r.body.substr(0, 200);
  }
  const std::string text = fmt::format("HTTP {} from {}: {}", r.status, r.url, reason);
  ServerError e = ServerError::kUnknownError;
  if (r.status == 404) {
    e = ServerError::kTopicNotFound;
  } else if (r.status == 401) {
    e = ServerError::kAuthenticationError;
  } else if (r.status == 403) {
    e = ServerError::kAuthorizationError;
  } else if (r.status == 400 || r.status == 412) {
    e = ServerError::kInvalidTopicName;
  } else if (r.status == 429) {
    e = ServerError::kTooManyRequests;
  } else if (r.status >= 500) {
    e = ServerError::kServiceNotReady;
  }
  return server_error_status(static_cast<int>(e), text);
}

// "persistent/tenant/namespace/<local name, percent-encoded>", as the REST paths want it.
Result<std::string> topic_path(const std::string& topic) {
  auto name = protocol::TopicName::parse(topic);
  if (!name.ok()) return name.status();
  return fmt::format("{}/{}/{}", protocol::to_string(name->domain()), name->namespace_name(),
                     http::url_encode(name->local_name()));
}

class HttpLookup final : public LookupService {
 public:
  // `tls`: the service URL is https://, so lookups answer the brokers' TLS URLs.
  HttpLookup(std::vector<std::string> bases, const ClientOptions& options, bool tls)
      : hosts_(std::move(bases),
               ServiceHosts::Options{.initial = options.service_url_quarantine_initial,
                                     .max = options.service_url_quarantine_max}),
        operation_timeout_(options.operation_timeout),
        tls_(tls),
        authentication_(options.authentication),
        http_([&options] {
          http::ClientOptions o;
          o.timeout = options.operation_timeout;
          o.max_redirects = std::max(options.max_lookup_redirects, 0);
          o.user_agent = fmt::format("magnetar-client/{}", kVersion);
          o.tls_trust_certs_file_path = options.tls_trust_certs_file_path;
          o.tls_allow_insecure_connection = options.tls_allow_insecure_connection;
          o.tls_validate_hostname = options.tls_validate_hostname;
          o.tls_certificate_file_path = options.tls_certificate_file_path;
          o.tls_private_key_file_path = options.tls_private_key_file_path;
          if (options.authentication) {
            if (auto files = options.authentication->tls_files()) {
              o.tls_certificate_file_path = files->certificate_file;
              o.tls_private_key_file_path = files->private_key_file;
            }
          }
          return o;
        }()) {}

  Task<Result<BrokerAddress>> lookup(int loop, std::string topic, Deadline deadline) override;
  Task<Result<int>> partitioned_metadata(int loop, std::string topic, Deadline deadline) override;
  Task<Result<std::vector<std::string>>> topics_of_namespace(int loop, std::string ns,
                                                             Deadline deadline) override;

 private:
  // GET `target` (path and query) from the next service host, redirects followed; the JSON
  // body of a 200 answer. Bounded by `deadline` and the operation timeout. A host that
  // gives no answer (refused, reset, silent) is quarantined and the next one asked at once.
  Task<Result<Json>> get_json(std::string target, Deadline deadline);
  // One GET from one host (its answer, whatever its status).
  Task<Result<http::HttpResponse>> get(const std::string& base, const std::string& target,
                                       Deadline deadline);

  ServiceHosts hosts_;  // "http[s]://host:port", one per service host
  const log::Logger log_ = log::Logger("client.http_lookup");
  const std::chrono::milliseconds operation_timeout_;
  const bool tls_;  // https:// service URL: connect to brokerUrlTls (pulsar+ssl://)
  const std::shared_ptr<Authentication> authentication_;  // null: no credentials
  const http::HttpClient http_;
};

Task<Result<http::HttpResponse>> HttpLookup::get(const std::string& base, const std::string& target,
                                                 Deadline deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) {
    co_return Status(ClientError::kTimeout, fmt::format("HTTP lookup of {}: no time left", target));
  }
  http::HttpRequest request;
  request.method = "GET";
  request.url = base + target;
  request.timeout = std::min(left, operation_timeout_);
  if (authentication_) {
    auto headers = authentication_->http_headers();
    if (!headers.ok())
      co_return Status(ClientError::kAuthenticationError, headers.status().message());
    request.headers = std::move(*headers);
  }
  auto response = co_await http_.send(std::move(request));
  if (!response.ok()) co_return transport_failure(response.status());
  co_return std::move(response).value();
}

Task<Result<Json>> HttpLookup::get_json(std::string target, Deadline deadline) {
  Result<http::HttpResponse> response = Status(ClientError::kTimeout, "not asked yet");
  for (size_t attempt = 0; attempt < hosts_.size(); ++attempt) {
    const size_t index = hosts_.next();
    response = co_await get(hosts_.url(index), target, deadline);
    if (response.ok()) {
      hosts_.succeeded(index);  // an answer, even an error: the host is up
      break;
    }
    const Status& st = response.status();
    if (!st.is(Errc::kUnavailable) && !st.is(Errc::kTimeout)) break;  // not the host's fault
    const auto quarantine = hosts_.failed(index);
    if (quarantine.count() > 0) {
      log_.with("host", hosts_.url(index))
          .info("service host skipped for {} ms: {}", quarantine.count(), st.message());
    }
    if (Clock::now() >= deadline) break;
  }
  if (!response.ok()) co_return response.status();
  if (response->status != 200) co_return answer_failure(*response);
  Json body = Json::parse(response->body, nullptr, false);
  if (body.is_discarded()) {
    co_return Status(ClientError::kProtocolError,
                     fmt::format("HTTP lookup: {} answered something that is not JSON: {}",
                                 response->url, response->body.substr(0, 200)));
  }
  co_return body;
}

Task<Result<BrokerAddress>> HttpLookup::lookup(int, std::string topic, Deadline deadline) {
  auto path = topic_path(topic);
  if (!path.ok()) co_return path.status();
  std::string target = "/lookup/v2/topic/" + *path;
  auto answer = co_await get_json(std::move(target), deadline);
  if (!answer.ok()) co_return answer.status();
  const Json& j = *answer;
  // A TLS client goes on over TLS, as Pulsar's clients do with an https:// service URL.
  const char* field = tls_ ? "brokerUrlTls" : "brokerUrl";
  if (!j.is_object() || !j.contains(field) || !j[field].is_string() ||
      j[field].get<std::string>().empty()) {
    co_return Status(ClientError::kProtocolError,
                     fmt::format("HTTP lookup of {} named no {}{}: {}", topic, field,
                                 tls_ ? " (is brokerServicePortTls set there?)" : "", j.dump()));
  }
  const std::string url = j[field].get<std::string>();
  co_return BrokerAddress{url, url};
}

Task<Result<int>> HttpLookup::partitioned_metadata(int, std::string topic, Deadline deadline) {
  auto path = topic_path(topic);
  if (!path.ok()) co_return path.status();
  std::string target = fmt::format("/admin/v2/{}/partitions?checkAllowAutoCreation=true", *path);
  auto answer = co_await get_json(std::move(target), deadline);
  if (!answer.ok()) co_return answer.status();
  const Json& j = *answer;
  if (!j.is_object() || !j.contains("partitions") || !j["partitions"].is_number_integer()) {
    co_return Status(ClientError::kProtocolError,
                     fmt::format("partitioned metadata of {} over HTTP: {}", topic, j.dump()));
  }
  co_return j["partitions"].get<int>();
}

Task<Result<std::vector<std::string>>> HttpLookup::topics_of_namespace(int, std::string ns,
                                                                       Deadline deadline) {
  std::string target = fmt::format("/admin/v2/namespaces/{}/topics?mode=PERSISTENT", ns);
  auto answer = co_await get_json(std::move(target), deadline);
  if (!answer.ok()) co_return answer.status();
  const Json& j = *answer;
  std::vector<std::string> out;
  if (!j.is_array()) {
    co_return Status(ClientError::kProtocolError,
                     fmt::format("topics of {} over HTTP: {}", ns, j.dump()));
  }
  for (const auto& t : j) {
    if (t.is_string()) out.push_back(t.get<std::string>());
  }
  co_return out;
}

}  // namespace

bool is_http_service_url(std::string_view service_url) {
  return service_url.starts_with(kHttp) || service_url.starts_with(kHttps);
}

Result<std::unique_ptr<LookupService>> make_http_lookup(const std::string& service_url,
                                                        const ClientOptions& options) {
  auto parsed = parse_service_url(service_url);
  if (!parsed.ok()) return parsed.status();
  if (parsed->scheme != "http" && parsed->scheme != "https") {
    return Status(ClientError::kInvalidConfiguration,
                  fmt::format("service URL '{}' is not an http:// or https:// URL", service_url));
  }
  // "http://h1:p1,h2:p2/" -> {"http://h1:p1", "http://h2:p2"}; the same for https://. A
  // base path would be dropped by the lookups' absolute paths: refused.
  if (!parsed->path.empty() && parsed->path != "/") {
    return Status(
        ClientError::kInvalidConfiguration,
        fmt::format("service URL '{}': a path ('{}') is not supported", service_url, parsed->path));
  }
  for (const auto& base : parsed->hosts) {
    if (!http::parse_url(base).ok()) {
      return Status(ClientError::kInvalidConfiguration,
                    fmt::format("service URL '{}': '{}' is not host:port", service_url, base));
    }
  }
  const bool tls = parsed->scheme == "https";
  std::vector<std::string> bases = std::move(parsed->hosts);
  return std::unique_ptr<LookupService>(
      std::make_unique<HttpLookup>(std::move(bases), options, tls));
}

}  // namespace magnetar::client
