#include "client/cluster_failover.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <nlohmann/json.hpp>

#include "client/connection.h"
#include "http/http_client.h"

namespace magnetar::client {

ClusterFailover::ClusterFailover(std::string primary, ClusterFailoverOptions options,
                                 std::chrono::milliseconds probe_timeout,
                                 std::function<Status(const std::string&)> switch_to,
                                 std::shared_ptr<Authentication> authentication)
    : primary_(std::move(primary)),
      options_(std::move(options)),
      probe_timeout_(probe_timeout),
      switch_to_(std::move(switch_to)),
      authentication_(std::move(authentication)),
      log_(log::Logger("client.failover")),
      current_(primary_) {}

ClusterFailover::~ClusterFailover() { stop(); }

void ClusterFailover::start() {
  thread_ = std::thread([this] { run(); });
}

void ClusterFailover::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

bool ClusterFailover::pause() {
  std::unique_lock lock(mu_);
  return !cv_.wait_for(lock, options_.check_interval, [this] { return stopping_; });
}

void ClusterFailover::run() {
  if (options_.discover_peer_clusters && options_.url_provider.empty()) {
    if (Status st = discover_peers(); !st.ok()) {
      log_.warn("cannot learn the peer clusters of {} yet: {}", primary_, st.to_string());
    }
  }
  while (pause()) {
    if (!options_.url_provider.empty()) {
      check_controlled();
    } else {
      check_automatic();
    }
  }
}

bool ClusterFailover::reachable(const std::string& service_url,
                                std::chrono::milliseconds timeout) {
  // The first broker of "pulsar[+ssl]://h1:p1,h2:p2".
  std::string first = service_url.substr(0, service_url.find(','));
  auto hp = parse_broker_url(first);
  if (!hp.ok()) return false;
  asio::io_context io;
  asio::ip::tcp::resolver resolver(io);
  asio::ip::tcp::socket socket(io);
  bool connected = false;
  resolver.async_resolve(hp->host, hp->port, [&](const boost::system::error_code& ec,
                                                  asio::ip::tcp::resolver::results_type r) {
    if (ec) return;
    asio::async_connect(socket, r, [&](const boost::system::error_code& e, const auto&) {
      connected = !e;
    });
  });
  io.run_for(timeout);
  return connected;
}

bool ClusterFailover::move_to(const std::string& url, const char* why) {
  Status st = switch_to_(url);
  if (!st.ok()) {
    log_.warn("cannot move from {} to {}: {}", current_, url, st.to_string());
    return false;
  }
  log_.info("moved from {} to {} ({})", current_, url, why);
  current_ = url;
  current_down_since_.reset();
  primary_up_since_.reset();
  return true;
}

std::vector<std::string> ClusterFailover::learned_secondaries() const {
  std::lock_guard lock(mu_);
  return learned_;
}

std::string ClusterFailover::discovery_base() const {
  std::string base = options_.discovery_web_service_url;
  if (base.empty()) {
    auto hp = parse_broker_url(primary_.substr(0, primary_.find(',')));
    if (!hp.ok()) return "";
    return fmt::format("http://{}:8080", hp->host);
  }
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base;
}

Status ClusterFailover::discover_peers() {
  const std::string base = discovery_base();
  if (base.empty()) return Status(Errc::kInvalidArgument, "no web service URL to ask");
  http::ClientOptions o;
  o.timeout = probe_timeout_;
  if (authentication_) {
    auto headers = authentication_->http_headers();
    if (!headers.ok()) return headers.status();
    o.default_headers = std::move(headers).value();
  }
  http::HttpClient http(o);
  const auto get = [&](const std::string& path) -> Result<nlohmann::json> {
    http::HttpRequest request;
    request.url = base + path;
    auto got = http.send_blocking(std::move(request));
    if (!got.ok()) return got.status();
    if (got->status != 200) {
      return Status(Errc::kIoError, fmt::format("GET {}{}: HTTP {}", base, path, got->status));
    }
    auto j = nlohmann::json::parse(got->body, nullptr, false);
    if (j.is_discarded()) {
      return Status(Errc::kIoError, fmt::format("GET {}{}: not JSON", base, path));
    }
    return j;
  };
  auto names = get("/admin/v2/clusters");
  if (!names.ok()) return names.status();
  if (!names->is_array()) return Status(Errc::kIoError, "the cluster list is not an array");
  std::map<std::string, nlohmann::json> clusters;
  for (const auto& n : *names) {
    if (!n.is_string()) continue;
    auto data = get("/admin/v2/clusters/" + n.get<std::string>());
    if (data.ok() && data->is_object()) clusters[n.get<std::string>()] = std::move(data).value();
  }
  const bool tls = primary_.starts_with("pulsar+ssl://");
  const char* url_key = tls ? "brokerServiceUrlTls" : "brokerServiceUrl";
  const auto url_of = [&](const nlohmann::json& data) {
    return data.contains(url_key) && data[url_key].is_string() ? data[url_key].get<std::string>()
                                                               : std::string();
  };
  // Which of them the primary is: the broker says, or the one registered with its URL.
  std::string self;
  if (auto runtime = get("/admin/v2/brokers/configuration/runtime");
      runtime.ok() && runtime->is_object() && runtime->contains("clusterName") &&
      (*runtime)["clusterName"].is_string()) {
    self = (*runtime)["clusterName"].get<std::string>();
  }
  if (!clusters.count(self)) {
    self.clear();
    for (const auto& [name, data] : clusters) {
      if (url_of(data) == primary_) self = name;
    }
  }
  if (self.empty()) {
    return Status(Errc::kNotFound,
                  fmt::format("{} names no cluster whose {} is {}", base, url_key, primary_));
  }
  std::vector<std::string> peers;
  const auto& listed = clusters[self].contains("peerClusterNames")
                           ? clusters[self]["peerClusterNames"]
                           : nlohmann::json();
  if (listed.is_array() && !listed.empty()) {
    for (const auto& p : listed) {
      if (p.is_string()) peers.push_back(p.get<std::string>());
    }
  } else {
    for (const auto& [name, data] : clusters) {
      if (name != self) peers.push_back(name);
    }
  }
  std::vector<std::string> urls;
  for (const auto& peer : peers) {
    auto it = clusters.find(peer);
    const std::string url = it == clusters.end() ? "" : url_of(it->second);
    if (url.empty() || url == primary_) {
      log_.warn("peer cluster {} of {} has no {}: not a failover target", peer, self, url_key);
      continue;
    }
    urls.push_back(url);
  }
  {
    std::lock_guard lock(mu_);
    if (urls != learned_) {
      log_.info("failover clusters of {} ({}): {}", self, primary_, fmt::join(urls, ", "));
    }
    learned_ = urls;
  }
  discovered_ = true;
  checks_since_discovery_ = 0;
  return Status::OK();
}

void ClusterFailover::check_automatic() {
  const auto now = Clock::now();
  const bool on_primary = current_ == primary_;
  const bool current_up = reachable(current_, probe_timeout_);
  if (current_up) {
    current_down_since_.reset();
  } else if (!current_down_since_) {
    current_down_since_ = now;
  }
  // Learns (or refreshes) the peers while the primary answers.
  if (options_.discover_peer_clusters && on_primary && current_up &&
      (!discovered_ || ++checks_since_discovery_ >= 100)) {
    if (Status st = discover_peers(); !st.ok()) {
      log_.warn("cannot learn the peer clusters of {}: {}", primary_, st.to_string());
    }
  }
  if (!on_primary) {
    const bool primary_up = reachable(primary_, probe_timeout_);
    if (!primary_up) {
      primary_up_since_.reset();
    } else if (!primary_up_since_) {
      primary_up_since_ = now;
    }
    if (primary_up_since_ && now - *primary_up_since_ >= options_.switch_back_delay) {
      move_to(primary_, "the primary is back");
      return;
    }
  }
  if (!current_down_since_ || now - *current_down_since_ < options_.failover_delay) return;
  // Down long enough: the primary first (when on a secondary and it answers), then the
  // secondaries in order.
  if (!on_primary && reachable(primary_, probe_timeout_)) {
    move_to(primary_, "the secondary is unreachable");
    return;
  }
  std::vector<std::string> secondaries = options_.secondary_service_urls;
  {
    std::lock_guard lock(mu_);
    for (const auto& url : learned_) {
      if (std::find(secondaries.begin(), secondaries.end(), url) == secondaries.end()) {
        secondaries.push_back(url);
      }
    }
  }
  for (const auto& s : secondaries) {
    if (s == current_ || !reachable(s, probe_timeout_)) continue;
    if (move_to(s, on_primary ? "the primary is unreachable" : "the secondary is unreachable")) {
      return;
    }
  }
}

void ClusterFailover::check_controlled() {
  http::ClientOptions o;
  o.timeout = probe_timeout_;
  o.default_headers = options_.url_provider_headers;
  http::HttpClient http(o);
  http::HttpRequest request;
  request.method = "GET";
  request.url = options_.url_provider;
  auto got = http.send_blocking(std::move(request));
  if (!got.ok() || got->status != 200) {
    log_.warn("the URL provider {} did not answer: {}", options_.url_provider,
              got.ok() ? fmt::format("HTTP {}", got->status) : got.status().to_string());
    return;
  }
  const auto j = nlohmann::json::parse(got->body, nullptr, false);
  if (!j.is_object() || !j.contains("serviceUrl") || !j["serviceUrl"].is_string()) {
    log_.warn("the URL provider {} answered no serviceUrl", options_.url_provider);
    return;
  }
  const std::string url = j["serviceUrl"].get<std::string>();
  if (!url.empty() && url != current_) move_to(url, "the URL provider says so");
}

}  // namespace magnetar::client
