#include "client/cluster_failover.h"

#include <fmt/format.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <nlohmann/json.hpp>

#include "client/connection.h"
#include "http/http_client.h"

namespace magnetar::client {

ClusterFailover::ClusterFailover(std::string primary, ClusterFailoverOptions options,
                                 std::chrono::milliseconds probe_timeout,
                                 std::function<Status(const std::string&)> switch_to)
    : primary_(std::move(primary)),
      options_(std::move(options)),
      probe_timeout_(probe_timeout),
      switch_to_(std::move(switch_to)),
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

void ClusterFailover::check_automatic() {
  const auto now = Clock::now();
  const bool on_primary = current_ == primary_;
  const bool current_up = reachable(current_, probe_timeout_);
  if (current_up) {
    current_down_since_.reset();
  } else if (!current_down_since_) {
    current_down_since_ = now;
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
  for (const auto& s : options_.secondary_service_urls) {
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
