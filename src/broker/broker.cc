#include "broker/broker.h"

#include <fmt/format.h>

#include <boost/asio/redirect_error.hpp>
#include <future>
#include <nlohmann/json.hpp>

#include "broker/broker_metrics.h"
#include "broker/connection.h"
#include "broker/namespace_service.h"
#include "broker/schema_registry.h"
#include "broker/topic.h"
#include "http/http_server.h"
#include "ledger/bookkeeper.h"
#include "mledger/managed_ledger.h"
#include "net/stream.h"
#include "net/tls.h"

namespace magnetar::broker {

namespace {

std::string policies_path(std::string_view ns) {
  return fmt::format("/admin/policies/{}", ns);
}

std::string partitioned_path(const protocol::TopicName& name) {
  return fmt::format("/admin/partitioned-topics/{}/{}/{}", name.namespace_name(),
                     protocol::to_string(name.domain()), name.encoded_local_name());
}

Status broker_error(Errc code, std::string message) {
  return Status(code, std::move(message));
}

// Opens, binds and listens; errors name the address and port.
Status listen_on(asio::ip::tcp::acceptor& acceptor, const asio::ip::address& address,
                 const std::string& bind_address, int port) {
  boost::system::error_code ec;
  asio::ip::tcp::endpoint endpoint(address, static_cast<uint16_t>(port));
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status(Errc::kUnavailable,
                  fmt::format("cannot listen on {}:{}: {}", bind_address, port, ec.message()));
  }
  return Status::OK();
}

}  // namespace

Broker::Broker(BrokerConfig config, metadata::MetadataStores stores)
    : config_(std::move(config)), stores_(std::move(stores)), log_(log::Logger("broker")) {}

Result<std::unique_ptr<Broker>> Broker::start(BrokerConfig config,
                                              metadata::MetadataStores stores) {
  std::unique_ptr<Broker> b(new Broker(std::move(config), std::move(stores)));
  int loops = b->config_.num_io_threads;
  if (loops <= 0) loops = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // One entry-cache budget for every loop's factory.
  auto cache = std::make_shared<mledger::EntryCacheManager>(
      b->config_.managed_ledger_factory.cache_size_bytes(),
      b->config_.managed_ledger_factory.cache_eviction_watermark);
  for (int i = 0; i < loops; ++i) {
    auto loop = std::make_unique<Loop>();
    loop->bk = std::make_unique<ledger::BookKeeper>(*b->stores_.cluster, loop->io.get_executor());
    loop->factory = std::make_unique<mledger::ManagedLedgerFactory>(
        *b->stores_.cluster, *loop->bk, b->config_.managed_ledger_factory, cache);
    b->loops_.push_back(std::move(loop));
  }
  boost::system::error_code ec;
  auto address = asio::ip::make_address(b->config_.bind_address, ec);
  if (ec) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("bindAddress '{}': {}", b->config_.bind_address, ec.message()));
  }
  // TLS files are checked before any port is bound: a bad one stops the start.
  if (b->config_.broker_service_port_tls) {
    auto tls = net::TlsContext::create(net::TlsRole::kServer, b->config_.tls_options());
    if (!tls.ok()) {
      return Status(tls.status().code(),
                    fmt::format("TLS for brokerServicePortTls: {}", tls.status().message()));
    }
    b->tls_ = *tls;
  }
  b->acceptor_ = std::make_unique<asio::ip::tcp::acceptor>(b->loops_.front()->io);
  MAGNETAR_TRY(
      listen_on(*b->acceptor_, address, b->config_.bind_address, b->config_.broker_service_port));
  b->port_ = b->acceptor_->local_endpoint().port();
  b->config_.broker_service_port = b->port_;
  if (b->tls_) {
    b->tls_acceptor_ = std::make_unique<asio::ip::tcp::acceptor>(b->loops_.front()->io);
    MAGNETAR_TRY(listen_on(*b->tls_acceptor_, address, b->config_.bind_address,
                           *b->config_.broker_service_port_tls));
    b->tls_port_ = b->tls_acceptor_->local_endpoint().port();
    b->config_.broker_service_port_tls = b->tls_port_;
  }
  b->schemas_ = std::make_unique<SchemaRegistry>(*b->stores_.cluster);
  BrokerUrls self;
  self.broker_url = b->config_.service_url();
  self.broker_url_tls = b->config_.service_url_tls();
  self.http_url = b->config_.web_service_url();
  self.http_url_tls = b->config_.web_service_url_tls();
  b->namespaces_ = std::make_unique<NamespaceService>(*b, std::move(self), nullptr);
  b->namespaces_->start();
  b->connections_gauge_ = active_connections_gauge(b->config_.cluster_name);
  Broker* raw = b.get();
  asio::ip::tcp::acceptor* plain = b->acceptor_.get();
  asio::co_spawn(
      b->loops_.front()->io, [raw, plain]() { return raw->accept_loop(plain, false); },
      asio::detached);
  if (b->tls_acceptor_) {
    asio::ip::tcp::acceptor* tls = b->tls_acceptor_.get();
    asio::co_spawn(
        b->loops_.front()->io, [raw, tls]() { return raw->accept_loop(tls, true); },
        asio::detached);
  }
  for (auto& loop : b->loops_) {
    Loop* l = loop.get();
    asio::co_spawn(
        l->io, [raw, l]() { return raw->maintenance_loop(l); }, asio::detached);
    l->thread = std::thread([l] {
      auto guard = asio::make_work_guard(l->io);
      l->io.run();
    });
  }
  b->log_.info("serving the Pulsar protocol on {}:{} (advertised as {}) with {} event loops",
               b->config_.bind_address, b->port_, b->config_.service_url(), loops);
  if (b->tls_) {
    b->log_.info("serving the Pulsar protocol over TLS on {}:{} (advertised as {}){}",
                 b->config_.bind_address, b->tls_port_, b->config_.service_url_tls(),
                 b->config_.tls_require_trusted_client_cert_on_connect
                     ? ", client certificates required"
                     : "");
  }
  return b;
}

Broker::~Broker() {
  stop();
}

void Broker::stop() {
  if (stopped_.exchange(true)) return;
  // 1. No new connections; every connection closes on its own loop.
  auto close_acceptors = [this] {
    boost::system::error_code ec;
    if (acceptor_) acceptor_->close(ec);
    if (tls_acceptor_) tls_acceptor_->close(ec);
  };
  if (loops_.front()->thread.joinable()) {
    std::promise<void> closed;
    asio::post(loops_.front()->io, [&] {
      close_acceptors();
      closed.set_value();
    });
    closed.get_future().wait();
  } else {
    close_acceptors();  // start() failed before the loops ran
  }
  std::vector<std::shared_ptr<Connection>> connections;
  {
    std::lock_guard lock(connections_mu_);
    for (auto& [raw, weak] : connections_) {
      if (auto c = weak.lock()) connections.push_back(c);
    }
  }
  for (auto& c : connections) c->close();
  // 2. Topics and factories, each on its loop.
  for (auto& loop : loops_) {
    Loop* l = loop.get();
    std::promise<void> done;
    asio::co_spawn(
        l->io,
        [l]() -> Task<void> {
          auto topics = l->topics;
          for (auto& [name, topic] : topics) co_await topic->close();
          l->topics.clear();
          (void)co_await l->factory->close();
          // Bookie requests still in flight (a dispatch read, say) fail now, while the loop
          // runs: their coroutines finish instead of waiting forever on a stopped loop
          // (holding the ledger that holds them).
          co_await l->bk->client().close();
          for (int i = 0; i < 3; ++i) co_await asio::post(l->io.get_executor(), asio::use_awaitable);
        },
        [&](std::exception_ptr) { done.set_value(); });
    if (l->thread.joinable()) done.get_future().wait();
  }
  // 3. The loops.
  for (auto& loop : loops_) {
    loop->io.stop();
    if (loop->thread.joinable()) loop->thread.join();
  }
  for (auto& loop : loops_) {
    loop->factory.reset();
    loop->bk.reset();
  }
  log_.info("stopped");
}

Task<void> Broker::accept_loop(asio::ip::tcp::acceptor* acceptor, bool tls) {
  while (!stopped_) {
    // Connections are spread over the loops.
    Loop& loop = *loops_[next_loop_++ % loops_.size()];
    boost::system::error_code ec;
    asio::ip::tcp::socket socket = co_await acceptor->async_accept(
        loop.io.get_executor(), asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      if (stopped_ || ec == asio::error::operation_aborted) co_return;
      log_.warn("accept failed: {}", ec.message());
      continue;
    }
    if (tls) {
      // The handshake runs on the connection's loop, so a slow or hostile client holds up
      // neither this loop nor the other connections.
      auto handshake = [this, socket = std::move(socket)]() mutable {
        return handshake_then_serve(std::move(socket));
      };
      asio::co_spawn(loop.io, std::move(handshake), asio::detached);
      continue;
    }
    auto cnx = std::make_shared<Connection>(*this, net::tcp_stream(std::move(socket)));
    asio::post(loop.io, [this, cnx] { serve(cnx); });
  }
}

void Broker::serve(std::shared_ptr<Connection> cnx) {
  {
    // stop() sets stopped_ before it takes the lock to close every connection: either it
    // sees this one, or this one sees stopped_ (and goes away unstarted).
    std::lock_guard lock(connections_mu_);
    if (stopped_) return;
    connections_[cnx.get()] = cnx;
  }
  cnx->start();
}

Task<void> Broker::handshake_then_serve(asio::ip::tcp::socket socket) {
  std::unique_ptr<net::Stream> stream = net::tls_stream(std::move(socket), tls_);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(config_.tls_handshake_timeout_millis);
  Status st = co_await stream->handshake("", deadline);
  if (!st.ok()) {
    log_.warn("dropping TLS client {}: {}", stream->remote(), st.message());
    co_return;
  }
  serve(std::make_shared<Connection>(*this, std::move(stream)));
}

void Broker::forget_connection(Connection* cnx) {
  std::lock_guard lock(connections_mu_);
  connections_.erase(cnx);
}

int64_t Broker::connection_count() const {
  std::lock_guard lock(connections_mu_);
  return static_cast<int64_t>(connections_.size());
}

Broker::Loop& Broker::loop_for(const std::string& topic) const {
  return *loops_[std::hash<std::string>{}(topic) % loops_.size()];
}

Executor Broker::topic_executor(const std::string& topic) {
  return loop_for(topic).io.get_executor();
}

// Message expiry (TTL) and backlog quotas, each at its configured period.
Task<void> Broker::maintenance_loop(Loop* loop) {
  using std::chrono::milliseconds;
  const auto ttl_period =
      milliseconds(static_cast<int64_t>(config_.message_expiry_check_interval_minutes * 60000));
  const auto quota_period =
      milliseconds(static_cast<int64_t>(config_.backlog_quota_check_interval_seconds * 1000));
  const auto tick =
      std::clamp(std::min(ttl_period, quota_period), milliseconds(10), milliseconds(1000));
  auto next_ttl = std::chrono::steady_clock::now() + ttl_period;
  auto next_quota = std::chrono::steady_clock::now() + quota_period;
  asio::steady_timer timer(loop->io);
  while (!stopped_) {
    timer.expires_after(tick);
    boost::system::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (stopped_) co_return;
    const auto now = std::chrono::steady_clock::now();
    const bool ttl_due = now >= next_ttl, quota_due = now >= next_quota;
    if (ttl_due) next_ttl = now + ttl_period;
    if (quota_due) next_quota = now + quota_period;
    for (auto& [name, topic] : loop->topics) topic->refresh_metrics();
    if (loop == loops_.front().get()) {
      connections_gauge_->set(static_cast<double>(connection_count()));
    }
    if (!ttl_due && !quota_due) continue;
    auto topics = loop->topics;
    for (auto& [name, topic] : topics) {
      if (ttl_due) co_await topic->expire_messages();
      if (quota_due) co_await topic->enforce_backlog_quota();
    }
  }
}

std::string Broker::next_producer_name() {
  return fmt::format("{}-{}-{}", config_.cluster_name, port_, producer_counter_.fetch_add(1));
}

std::shared_ptr<PersistentTopic> Broker::loaded_topic(const std::string& name) const {
  const Loop& loop = loop_for(name);
  auto it = loop.topics.find(name);
  return it == loop.topics.end() ? nullptr : it->second;
}

Task<Result<bool>> Broker::namespace_exists(std::string ns) {
  auto r = co_await stores_.configuration->exists(policies_path(ns));
  if (!r.ok()) co_return r.status();
  co_return *r;
}

Task<Result<std::shared_ptr<PersistentTopic>>> Broker::get_topic(protocol::TopicName name,
                                                                 bool create) {
  Loop* loop = &loop_for(name.to_string());
  // (co_spawn's result must be default-constructible: hence the optional.)
  using Loaded = Result<std::shared_ptr<PersistentTopic>>;
  auto load = [this, loop, name = std::move(name), create]() -> Task<std::optional<Loaded>> {
    co_return co_await load_topic(loop, name, create);
  };
  auto on_loop = asio::co_spawn(loop->io.get_executor(), std::move(load), asio::use_awaitable);
  std::optional<Loaded> loaded = co_await std::move(on_loop);
  co_return std::move(*loaded);
}

// On `loop`: the only place its topic map changes.
Task<Result<std::shared_ptr<PersistentTopic>>> Broker::load_topic(Loop* loop,
                                                                  protocol::TopicName name,
                                                                  bool create) {
  const std::string key = name.to_string();
  if (!name.is_persistent()) {
    co_return broker_error(Errc::kNotSupported, "non-persistent topics are not supported");
  }
  // One load at a time per topic; later callers wait for it.
  while (loop->loading.count(key)) {
    auto turn = await_callback<bool>([loop, key](std::function<void(bool)> done) {
      loop->loading[key].push_back(std::move(done));
    });
    (void)co_await std::move(turn);
  }
  if (auto t = loaded_topic(key)) co_return t;
  if (stopped_) co_return broker_error(Errc::kUnavailable, "broker is stopping");
  loop->loading[key];
  auto finish = [loop, key]() {
    auto waiters = std::move(loop->loading[key]);
    loop->loading.erase(key);
    for (auto& w : waiters) w(true);
  };
  const std::string policies_node = policies_path(name.namespace_name());
  auto ns = co_await stores_.configuration->get(policies_node);
  if (!ns.ok() || !ns->has_value()) {
    finish();
    co_return broker_error(
        Errc::kNotFound, ns.ok() ? fmt::format("namespace {} does not exist", name.namespace_name())
                                 : ns.status().message());
  }
  // Namespace policies that shape the topic (Pulsar's Policies JSON field names).
  mledger::ManagedLedgerConfig ml_config = config_.managed_ledger;
  bool deduplication = config_.broker_deduplication_enabled;
  PersistentTopic::Policies topic_policies;
  topic_policies.message_ttl_seconds = config_.ttl_duration_default_in_seconds;
  topic_policies.backlog_quota_bytes = config_.backlog_quota_default_limit_bytes;
  topic_policies.backlog_quota_policy = config_.backlog_quota_default_retention_policy;
  auto policies = nlohmann::json::parse((*ns)->value, nullptr, false);
  if (policies.is_object()) {
    if (policies.contains("message_ttl_in_seconds") &&
        policies["message_ttl_in_seconds"].is_number_integer()) {
      topic_policies.message_ttl_seconds = policies["message_ttl_in_seconds"].get<int64_t>();
    }
    const auto& quotas = policies.value("backlog_quota_map", nlohmann::json());
    if (quotas.is_object() && quotas.contains("destination_storage") &&
        quotas["destination_storage"].is_object()) {
      const auto& q = quotas["destination_storage"];
      topic_policies.backlog_quota_bytes =
          q.value("limitSize", q.value("limit", topic_policies.backlog_quota_bytes));
      topic_policies.backlog_quota_policy = q.value("policy", topic_policies.backlog_quota_policy);
    }
    if (policies.contains("deduplicationEnabled") &&
        policies["deduplicationEnabled"].is_boolean()) {
      deduplication = policies["deduplicationEnabled"].get<bool>();
    }
    const auto& retention = policies.value("retention_policies", nlohmann::json());
    if (retention.is_object()) {
      ml_config.retention_time_minutes = retention.value("retentionTimeInMinutes", 0.0);
      ml_config.retention_size_mb = retention.value("retentionSizeInMB", int64_t{0});
    }
  }
  Status owned = co_await namespaces_->check_ownership(name, (*ns)->value);
  if (!owned.ok()) {
    finish();
    co_return owned;
  }
  const std::string ml_name = name.persistence_name();
  if (!create) {
    const std::string ml_path = mledger::managed_ledger_path(ml_name);
    auto exists = co_await stores_.cluster->exists(ml_path);
    if (!exists.ok() || !*exists) {
      finish();
      co_return broker_error(Errc::kNotFound, fmt::format("topic {} not found", key));
    }
  }
  auto ml = co_await loop->factory->open(ml_name, ml_config);
  if (!ml.ok()) {
    finish();
    co_return ml.status();
  }
  auto topic = std::make_shared<PersistentTopic>(*this, loop->io.get_executor(), name, *ml);
  topic->set_policies(topic_policies);
  if (deduplication) {
    Status st = co_await topic->enable_deduplication();
    if (!st.ok()) {
      finish();
      co_return st;
    }
  }
  loop->topics[key] = topic;
  finish();
  // An unload of the bundle may have run while the topic loaded: it did not see the topic.
  NamespaceService* namespaces = namespaces_.get();
  auto bundles = NamespaceBundles::from_policies((*ns)->value, 4);
  const std::string ns_name = name.namespace_name();
  const BundleRange range =
      bundles.ok() ? bundles->bundle_of(topic_bundle_hash(key)) : BundleRange{};
  auto owns = [namespaces, ns_name, range]() -> Task<bool> {
    co_return namespaces->owns(ns_name, range);
  };
  auto still_owned = co_await run_on<bool>(namespaces->executor(), std::move(owns));
  if (!*still_owned) {
    if (loop->topics.count(key) && loop->topics[key] == topic) loop->topics.erase(key);
    co_await topic->close();
    co_return broker_error(Errc::kUnavailable,
                           fmt::format("the bundle of {} was unloaded while it loaded", key));
  }
  log_.info("loaded topic {}", key);
  co_return topic;
}

Task<int> Broker::close_topics(std::function<bool(const protocol::TopicName&)> which) {
  int closed = 0;
  for (auto& loop : loops_) {
    Loop* l = loop.get();
    auto work = [l, which]() -> Task<int> {
      std::vector<std::shared_ptr<PersistentTopic>> chosen;
      for (auto it = l->topics.begin(); it != l->topics.end();) {
        if (which(it->second->name())) {
          chosen.push_back(it->second);
          it = l->topics.erase(it);
        } else {
          ++it;
        }
      }
      for (auto& topic : chosen) co_await topic->close();
      co_return static_cast<int>(chosen.size());
    };
    auto n = co_await run_on<int>(l->io.get_executor(), std::move(work));
    closed += *n;
  }
  co_return closed;
}

Task<Status> Broker::delete_topic(protocol::TopicName name, bool force) {
  auto topic = co_await get_topic(name, false);
  if (!topic.ok()) co_return topic.status();
  Loop* loop = &loop_for(name.to_string());
  std::shared_ptr<PersistentTopic> t = *topic;
  const std::string key = name.to_string();
  auto work = [this, loop, t, key, force, ml_name = name.persistence_name()]() -> Task<Status> {
    if (!force && t->has_clients()) {
      co_return Status(Errc::kAlreadyExists, "Topic has active producers/subscriptions");
    }
    if (auto it = loop->topics.find(key); it != loop->topics.end() && it->second == t) {
      loop->topics.erase(it);
    }
    co_await t->close();
    Status st = co_await loop->factory->remove(ml_name, config_.managed_ledger);
    if (st.ok()) log_.info("deleted topic {}", key);
    co_return st;
  };
  auto st = co_await run_on<Status>(loop->io.get_executor(), std::move(work));
  co_return std::move(*st);
}

Task<std::vector<TopicLoad>> Broker::topic_loads() {
  std::vector<TopicLoad> out;
  for (auto& loop : loops_) {
    Loop* l = loop.get();
    auto work = [l]() -> Task<std::vector<TopicLoad>> {
      std::vector<TopicLoad> loads;
      for (const auto& [name, topic] : l->topics) {
        const auto c = topic->totals();
        loads.push_back(TopicLoad{topic->name(), c.msgs_in, c.bytes_in, c.msgs_out, c.bytes_out,
                                  c.producers, c.consumers});
      }
      co_return loads;
    };
    auto loads = co_await run_on<std::vector<TopicLoad>>(l->io.get_executor(), std::move(work));
    for (auto& t : *loads) out.push_back(std::move(t));
  }
  co_return out;
}

Task<bool> Broker::may_auto_create(protocol::TopicName name) {
  if (config_.allow_auto_topic_creation) co_return true;
  if (!name.is_partition()) co_return false;
  auto n = co_await partitions(name.partitioned_topic_name(), false);
  co_return n.ok() && name.partition_index() < *n;
}

Task<Result<int>> Broker::partitions(protocol::TopicName name, bool auto_create) {
  if (name.is_partition()) co_return 0;
  const std::string path = partitioned_path(name);
  auto got = co_await stores_.configuration->get(path);
  if (!got.ok()) co_return got.status();
  if (got->has_value()) {
    auto j = nlohmann::json::parse((*got)->value, nullptr, false);
    if (j.is_object() && j.contains("partitions") && j["partitions"].is_number_integer()) {
      co_return j["partitions"].get<int>();
    }
    co_return broker_error(Errc::kCorruption, fmt::format("bad partitioned metadata at {}", path));
  }
  if (!auto_create || !config_.allow_auto_topic_creation ||
      config_.allow_auto_topic_creation_type != "partitioned") {
    co_return 0;
  }
  auto ns = co_await namespace_exists(name.namespace_name());
  if (!ns.ok() || !*ns) co_return 0;
  // An existing non-partitioned topic stays non-partitioned.
  const std::string ml_path = mledger::managed_ledger_path(name.persistence_name());
  auto exists = co_await stores_.cluster->exists(ml_path);
  if (exists.ok() && *exists) co_return 0;
  const nlohmann::json meta = {{"partitions", config_.default_num_partitions}};
  metadata::PutOptions create;
  create.expected_version = -1;
  auto made = co_await stores_.configuration->put_recursive(path, meta.dump(), create);
  if (!made.ok() && !made.status().is(Errc::kBadVersion)) co_return made.status();
  co_return config_.default_num_partitions;
}

Task<Result<std::vector<std::string>>> Broker::topics_of_namespace(std::string ns) {
  const std::string path = fmt::format("/managed-ledgers/{}/persistent", ns);
  auto children = co_await stores_.cluster->children(path);
  if (!children.ok()) co_return children.status();
  std::vector<std::string> out;
  for (const auto& child : *children) {
    auto decoded = http::url_decode(child);
    out.push_back(fmt::format("persistent://{}/{}", ns, decoded ? *decoded : child));
  }
  co_return out;
}

}  // namespace magnetar::broker
