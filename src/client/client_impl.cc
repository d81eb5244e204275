#include "client/client_impl.h"

#include <fmt/format.h>

#include "client/cluster_failover.h"
#include "client/lookup_service.h"
#include "client/service_hosts.h"
#include "common/backoff.h"
#include "protocol/topic_name.h"

namespace magnetar::client {

namespace {

// The hosts of a pulsar:// or pulsar+ssl:// service URL (`tls`: which one).
Result<std::vector<std::string>> split_service_url(const std::string& service_url, bool tls) {
  auto parsed = parse_service_url(service_url);
  if (!parsed.ok()) return parsed.status();
  if (parsed->scheme != (tls ? "pulsar+ssl" : "pulsar")) {
    return Status(ClientError::kInvalidConfiguration,
                  fmt::format("service URL '{}' must start with {}", service_url,
                              tls ? "pulsar+ssl://" : "pulsar://"));
  }
  return std::move(parsed->hosts);
}

ServiceHosts::Options quarantine_options(const ClientOptions& o) {
  return ServiceHosts::Options{.initial = o.service_url_quarantine_initial,
                               .max = o.service_url_quarantine_max};
}

}  // namespace

Result<std::shared_ptr<ClientImpl>> ClientImpl::create(const std::string& service_url,
                                                       const ClientOptions& options) {
  if (options.io_threads < 1 || options.operation_timeout.count() <= 0) {
    return Status(ClientError::kInvalidConfiguration,
                  "io_threads and operation_timeout must be positive");
  }
  if (is_http_service_url(service_url) && options.cluster_failover.enabled()) {
    return Status(ClientError::kInvalidConfiguration,
                  "cluster failover needs a pulsar:// or pulsar+ssl:// service URL");
  }
  if (const auto& f = options.cluster_failover; f.discover_peer_clusters) {
    if (!f.url_provider.empty()) {
      return Status(ClientError::kInvalidConfiguration,
                    "discover_peer_clusters is for the automatic mode, not with url_provider");
    }
    if (!f.discovery_web_service_url.empty() && !is_http_service_url(f.discovery_web_service_url)) {
      return Status(ClientError::kInvalidConfiguration,
                    fmt::format("discovery_web_service_url '{}' is not an http:// or https:// URL",
                                f.discovery_web_service_url));
    }
  }
  if (is_http_service_url(service_url)) {
    // HTTP lookup; producers and consumers then connect to the brokerUrl it answers, or
    // over TLS to brokerUrlTls for https:// (as Pulsar's clients do).
    auto http = make_http_lookup(service_url, options);
    if (!http.ok()) return http.status();
    std::shared_ptr<net::TlsContext> tls;
    if (service_url.starts_with("https://")) {
      auto made = make_tls_context(options);  // reads the files now: errors show at once
      if (!made.ok()) return made.status();
      tls = *made;
    }
    std::shared_ptr<ClientImpl> c(new ClientImpl({}, options));
    c->tls_ = std::move(tls);
    c->lookup_ = std::move(http).value();
    return c;
  }
  // TLS for pulsar+ssl://: every connection of the client then uses it.
  const bool use_tls = service_url.starts_with("pulsar+ssl://");
  auto split = split_service_url(service_url, use_tls);
  if (!split.ok()) return split.status();
  std::vector<std::string> urls = std::move(split).value();
  for (const auto& secondary : options.cluster_failover.secondary_service_urls) {
    auto checked = split_service_url(secondary, use_tls);
    if (!checked.ok()) {
      return Status(ClientError::kInvalidConfiguration,
                    fmt::format("secondary service URL '{}': {} (and of the primary's scheme)",
                                secondary, checked.status().message()));
    }
  }
  std::shared_ptr<net::TlsContext> tls;
  if (use_tls) {
    auto made = make_tls_context(options);  // reads the files now: errors show at once
    if (!made.ok()) return made.status();
    tls = *made;
  }
  std::shared_ptr<ClientImpl> c(new ClientImpl(std::move(urls), options));
  c->service_url_ = service_url;
  c->tls_ = std::move(tls);
  c->lookup_ = make_binary_lookup(*c);
  if (options.cluster_failover.enabled()) {
    ClientImpl* raw = c.get();  // the failover thread ends in close(), before the client goes
    c->failover_ = std::make_unique<ClusterFailover>(
        service_url, options.cluster_failover, options.connection_timeout,
        [raw](const std::string& url) { return raw->switch_service_url(url); },
        options.authentication);
    c->failover_->start();
  }
  return c;
}

Status ClientImpl::switch_service_url(const std::string& url) {
  auto split = split_service_url(url, uses_tls());
  if (!split.ok()) return split.status();
  {
    auto hosts =
        std::make_shared<ServiceHosts>(std::move(split).value(), quarantine_options(options_));
    std::lock_guard lock(urls_mu_);
    service_url_ = url;
    hosts_ = std::move(hosts);
  }
  ++switches_;
  log_.with("service_url", url).info("moved to another cluster: reconnecting everything");
  for (auto& loop : loops_) {
    Loop* l = loop.get();
    asio::post(l->io, [l] {
      auto pool = std::move(l->pool);
      l->pool.clear();
      for (auto& [key, cnx] : pool) {
        cnx->close(Status(ClientError::kConnectError, "the client moved to another cluster"));
      }
    });
  }
  return Status::OK();
}

std::string ClientImpl::service_url() const {
  std::lock_guard lock(urls_mu_);
  return service_url_;
}

ClientImpl::ClientImpl(std::vector<std::string> urls, const ClientOptions& options)
    : hosts_(urls.empty()
                 ? nullptr
                 : std::make_shared<ServiceHosts>(std::move(urls), quarantine_options(options))),
      options_(options),
      log_(log::Logger("client")) {
  for (int i = 0; i < options_.io_threads; ++i) {
    loops_.push_back(std::make_unique<Loop>());
    start_loop(*loops_.back());
  }
  listener_ = std::make_unique<Loop>();
  start_loop(*listener_);
}

void ClientImpl::start_loop(Loop& loop) {
  loop.work.emplace(loop.io.get_executor());
  loop.thread = std::thread([&loop] {
    loop.io.run();
    loop.finished.set_value();
  });
}

ClientImpl::~ClientImpl() {
  if (failover_) failover_->stop();
  stop_loops(std::chrono::milliseconds(0));
}

void ClientImpl::stop_loops(std::chrono::milliseconds grace) {
  std::vector<Loop*> all;
  for (auto& l : loops_) all.push_back(l.get());
  if (listener_) all.push_back(listener_.get());
  for (Loop* l : all) l->work.reset();
  const auto until = std::chrono::steady_clock::now() + grace;
  for (Loop* l : all) {
    if (!l->thread.joinable() || l->thread.get_id() == std::this_thread::get_id()) continue;
    if (l->done.wait_until(until) != std::future_status::ready) l->io.stop();
  }
  for (Loop* l : all) {
    if (!l->thread.joinable()) continue;
    if (l->thread.get_id() == std::this_thread::get_id()) {
      l->thread.detach();  // the last reference went away on this loop itself
    } else {
      l->thread.join();
    }
  }
}

int ClientImpl::pick_loop() {
  return static_cast<int>(next_loop_.fetch_add(1) % loops_.size());
}

Task<Result<std::shared_ptr<ClientConnection>>> ClientImpl::get_connection(int loop,
                                                                           std::string logical,
                                                                           std::string physical,
                                                                           Deadline deadline) {
  auto self = shared_from_this();
  if (closed_) co_return Status(ClientError::kAlreadyClosed, "the client is closed");
  auto& pool = loops_[static_cast<size_t>(loop)]->pool;
  const auto key = std::make_pair(logical, physical);
  std::shared_ptr<ClientConnection> cnx;
  if (auto it = pool.find(key); it != pool.end() && !it->second->closed()) {
    cnx = it->second;
  } else {
    cnx = std::make_shared<ClientConnection>(loops_[static_cast<size_t>(loop)]->io, logical,
                                             physical, options_, tls_);
    pool[key] = cnx;
  }
  Status st = co_await cnx->connect(deadline);
  if (!st.ok()) {
    if (auto it = pool.find(key); it != pool.end() && it->second == cnx) pool.erase(it);
    co_return st;
  }
  co_return cnx;
}

Task<Result<std::shared_ptr<ClientConnection>>> ClientImpl::service_connection(int loop,
                                                                               Deadline deadline) {
  auto self = shared_from_this();
  std::shared_ptr<ServiceHosts> hosts;  // kept: a failover may swap hosts_ meanwhile
  {
    std::lock_guard lock(urls_mu_);
    hosts = hosts_;
  }
  if (!hosts) {  // an http:// client: lookups go over HTTP
    co_return Status(ClientError::kInvalidConfiguration, "no pulsar:// service URL");
  }
  // A host that cannot be reached is quarantined and the next one tried at once, each host
  // at most once per call, while the deadline allows.
  Status last;
  for (size_t attempt = 0; attempt < hosts->size() && Clock::now() < deadline; ++attempt) {
    const size_t index = hosts->next();
    const std::string& url = hosts->url(index);
    auto cnx = co_await get_connection(loop, url, url, deadline);
    if (cnx.ok()) {
      hosts->succeeded(index);
      co_return cnx;
    }
    if (closed_ || !cnx.status().retriable()) co_return cnx;
    last = cnx.status();
    const auto quarantine = hosts->failed(index);
    if (quarantine.count() > 0) {
      log_.with("host", url)
          .info("service host skipped for {} ms: {}", quarantine.count(), last.message());
    }
  }
  if (last.ok()) last = Status(ClientError::kTimeout, "no time left to reach a service host");
  co_return last;
}

Task<Result<BrokerAddress>> ClientImpl::lookup(int loop, std::string topic, Deadline deadline) {
  auto self = shared_from_this();
  co_return co_await lookup_->lookup(loop, std::move(topic), deadline);
}

Task<Result<int>> ClientImpl::partitioned_metadata(int loop, std::string topic, Deadline deadline) {
  auto self = shared_from_this();
  co_return co_await lookup_->partitioned_metadata(loop, std::move(topic), deadline);
}

Task<Result<int>> ClientImpl::partitions_with_retry(int loop, std::string topic,
                                                    Deadline deadline) {
  auto self = shared_from_this();
  Backoff::Options bo;
  bo.initial = options_.initial_backoff;
  bo.max = std::max(options_.max_backoff, options_.initial_backoff);
  Backoff backoff(bo);
  Event never;
  Status last;  // the most telling failure: a timeout (an attempt cut short by the deadline)
                // does not hide what the earlier attempts said (a refused TLS certificate)
  for (;;) {
    auto r = co_await partitioned_metadata(loop, topic, deadline);
    if (r.ok() || !r.status().retriable() || closed_) co_return r;
    if (last.ok() || !r.status().is(Errc::kTimeout)) last = r.status();
    const auto delay = backoff.next();
    if (Clock::now() + delay >= deadline) {
      co_return Status(ClientError::kTimeout,
                       fmt::format("could not look up {} within the operation timeout: {}", topic,
                                   last.to_string()));
    }
    co_await sleep_until(never, Clock::now() + delay);
  }
}

Task<Result<std::vector<std::string>>> ClientImpl::topics_of_namespace(int loop, std::string ns,
                                                                       Deadline deadline) {
  auto self = shared_from_this();
  co_return co_await lookup_->topics_of_namespace(loop, std::move(ns), deadline);
}

void ClientImpl::track(std::weak_ptr<Closeable> c) {
  std::lock_guard lock(mu_);
  std::erase_if(tracked_, [](const auto& w) { return w.expired(); });
  tracked_.push_back(std::move(c));
}

Status ClientImpl::close() {
  if (closed_.exchange(true)) return Status::OK();
  if (failover_) failover_->stop();
  std::vector<std::weak_ptr<Closeable>> tracked;
  {
    std::lock_guard lock(mu_);
    tracked = std::move(tracked_);
    tracked_.clear();
  }
  for (auto& w : tracked) {
    if (auto c = w.lock()) (void)c->close();
  }
  // Close the connections on their loops, then let the loops run dry.
  for (auto& l : loops_) {
    auto done = std::make_shared<std::promise<void>>();
    auto future = done->get_future();
    Loop* loop = l.get();
    asio::post(loop->io, [loop, done] {
      auto pool = std::move(loop->pool);
      loop->pool.clear();
      for (auto& [key, cnx] : pool)
        cnx->close(Status(ClientError::kAlreadyClosed, "client closed"));
      done->set_value();
    });
    if (loop->thread.get_id() != std::this_thread::get_id()) {
      future.wait_for(std::chrono::seconds(5));
    }
  }
  stop_loops(std::chrono::milliseconds(3000));
  log_.debug("client closed");
  return Status::OK();
}

}  // namespace magnetar::client
