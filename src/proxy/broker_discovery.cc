#include "proxy/broker_discovery.h"

#include <fmt/format.h>

#include <boost/asio/redirect_error.hpp>
#include <nlohmann/json.hpp>

#include "proxy/target_guard.h"

namespace magnetar::proxy {

namespace {

constexpr const char* kBrokersPath = "/loadbalance/brokers";

// "pulsar://host:port[/]" -> host:port, "" when it does not parse.
std::string authority_of(const std::string& url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return "";
  auto t = parse_target(std::string_view(url).substr(scheme + 3));
  return t.ok() ? t->to_string() : "";
}

}  // namespace

Status no_active_broker() {
  return Status(Errc::kUnavailable, "No active broker is available");
}

BrokerDiscovery::BrokerDiscovery(Executor executor, Options options, Gate& gate)
    : executor_(std::move(executor)),
      options_(std::move(options)),
      gate_(gate),
      log_(log::Logger("proxy.discovery")) {
  if (!options_.store) {
    const size_t n = std::max(options_.service_urls.size(), options_.web_urls.size());
    for (size_t i = 0; i < n; ++i) {
      BrokerUrls b;
      if (i < options_.service_urls.size()) {
        (options_.tls ? b.service_url_tls : b.service_url) = options_.service_urls[i];
      }
      if (i < options_.web_urls.size()) {
        (options_.tls ? b.web_url_tls : b.web_url) = options_.web_urls[i];
      }
      brokers_.push_back(std::move(b));
    }
  }
}

BrokerDiscovery::~BrokerDiscovery() { stop(); }

Task<Status> BrokerDiscovery::start() {
  if (!options_.store) co_return Status::OK();
  wakeup_ = std::make_shared<asio::steady_timer>(executor_);
  std::weak_ptr<asio::steady_timer> weak = wakeup_;
  listener_ = options_.store->add_listener(executor_, [this, weak](const metadata::Notification& n) {
    if (!n.path.starts_with(kBrokersPath)) return;
    dirty_ = true;
    if (auto w = weak.lock()) w->cancel();
  });
  Status st = co_await refresh();
  if (!st.ok()) co_return st;
  spawn_in(gate_, executor_, [this]() { return follow(); });
  co_return Status::OK();
}

void BrokerDiscovery::stop() {
  if (stopped_.exchange(true)) return;
  if (options_.store && listener_ != 0) options_.store->remove_listener(listener_);
  if (wakeup_) {
    auto timer = wakeup_;
    asio::post(executor_, [timer] { timer->cancel(); });
  }
}

Task<void> BrokerDiscovery::follow() {
  auto timer = wakeup_;
  while (!stopped_) {
    if (!dirty_.exchange(false)) {
      timer->expires_after(options_.refresh_interval);
      boost::system::error_code ec;
      co_await timer->async_wait(asio::redirect_error(asio::use_awaitable, ec));
      if (stopped_) co_return;
      dirty_ = false;
    }
    Status st = co_await refresh();
    if (!st.ok()) log_.warn("reading the registered brokers: {}", st.message());
  }
}

Task<Status> BrokerDiscovery::refresh() {
  auto names = co_await options_.store->children(kBrokersPath);
  if (!names.ok()) co_return names.status();
  std::vector<BrokerUrls> found;
  for (const std::string& name : *names) {
    auto got = co_await options_.store->get(fmt::format("{}/{}", kBrokersPath, name));
    if (!got.ok() || !*got) continue;  // gone meanwhile, or unreadable: skipped this round
    auto json = nlohmann::json::parse((*got)->value, nullptr, false);
    if (!json.is_object()) {
      log_.warn("broker registration {} is not JSON: skipped", name);
      continue;
    }
    BrokerUrls b;
    auto text = [&json](const char* key) {
      auto it = json.find(key);
      return it != json.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    b.service_url = text("pulsarServiceUrl");
    b.service_url_tls = text("pulsarServiceUrlTls");
    b.web_url = text("webServiceUrl");
    b.web_url_tls = text("webServiceUrlTls");
    found.push_back(std::move(b));
  }
  std::lock_guard lock(mu_);
  if (found.size() != brokers_.size()) {
    log_.info("{} broker(s) registered", found.size());
  }
  brokers_ = std::move(found);
  co_return Status::OK();
}

Result<std::string> BrokerDiscovery::next(bool web) {
  std::lock_guard lock(mu_);
  const size_t n = brokers_.size();
  for (size_t tried = 0; tried < n; ++tried) {
    const BrokerUrls& b = brokers_[next_.fetch_add(1) % n];
    const std::string& url = web ? (options_.tls ? b.web_url_tls : b.web_url)
                                 : (options_.tls ? b.service_url_tls : b.service_url);
    if (!url.empty()) return url;
  }
  return no_active_broker();
}

Result<std::string> BrokerDiscovery::next_service_url() { return next(false); }

Result<std::string> BrokerDiscovery::next_web_url() { return next(true); }

bool BrokerDiscovery::is_active_broker(const Target& target) const {
  const std::string wanted = target.to_string();
  std::lock_guard lock(mu_);
  for (const BrokerUrls& b : brokers_) {
    if (authority_of(b.service_url) == wanted || authority_of(b.service_url_tls) == wanted) {
      return true;
    }
  }
  return false;
}

std::vector<BrokerUrls> BrokerDiscovery::brokers() const {
  std::lock_guard lock(mu_);
  return brokers_;
}

}  // namespace magnetar::proxy
