#include "broker/broker.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <future>
#include <random>

#include "broker/namespace/namespace_service.h"
#include "broker/replication/replication_service.h"
#include "broker/service/authentication.h"
#include "broker/service/authorization.h"
#include "broker/service/bookie_placement.h"
#include "broker/service/metrics.h"
#include "broker/service/schema_registry.h"
#include "broker/service/topic_registry.h"
#include "broker/wire/connection.h"
#include "ledger/bookkeeper.h"
#include "ledger/topology_watcher.h"
#include "mledger/managed_ledger.h"
#include "net/listen.h"
#include "net/stream.h"
#include "net/tls.h"

namespace magnetar::broker {

Broker::Broker(BrokerConfig config, metadata::MetadataStores stores)
    : config_(std::move(config)), stores_(std::move(stores)), log_(log::Logger("broker")) {}

const DynamicConfig& Broker::dynamic_config() const { return topics_->dynamic_config(); }

Result<std::unique_ptr<Broker>> Broker::start(BrokerConfig config,
                                              metadata::MetadataStores stores) {
  // Ledger placement: the policy the keys ask for (checked before anything starts), over the
  // racks of /bookies as they are now; the watcher started below hands later changes to every
  // loop's policy.
  auto placement = placement_settings(config);
  if (!placement.ok()) return placement.status();
  auto dial_overrides = bookie_address_overrides(config.bookie_address_overrides);
  if (!dial_overrides.ok()) return dial_overrides.status();
  auto topology = run_sync<Result<ledger::BookieTopology>>(
      [store = stores.cluster.get()]() { return ledger::load_topology(*store); });
  if (topology.ok()) MAGNETAR_TRY(check_regions_known(config, *topology));
  std::unique_ptr<Broker> b(new Broker(std::move(config), std::move(stores)));
  if (!topology.ok()) {
    b->log_.warn("ledger placement starts without bookie racks: {} (read again on change)",
                 topology.status().to_string());
  }
  b->log_.info("ledger placement: {}{}", ledger::to_string(placement->kind),
               placement->kind == ledger::PlacementSettings::Kind::kRegionAware
                   ? fmt::format(" (reppMinimumRegionsForDurability={}, reppRegionsToWrite='{}', "
                                 "reppEnableValidation={}, "
                                 "bookkeeper_enforceMinNumFaultDomainsForWrite={})",
                                 placement->region.min_regions_for_durability,
                                 b->config_.repp_regions_to_write,
                                 placement->region.enforce, placement->region.acks_span_regions)
                   : "");
  std::random_device seeds;
  int loops = b->config_.num_io_threads;
  if (loops <= 0) loops = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // One entry-cache budget for every loop's factory.
  auto cache = std::make_shared<mledger::EntryCacheManager>(
      b->config_.managed_ledger_factory.cache_size_bytes(),
      b->config_.managed_ledger_factory.cache_eviction_watermark);
  for (int i = 0; i < loops; ++i) {
    auto loop = std::make_unique<Loop>();
    // One policy per loop: it is used (and updated) on that loop only.
    loop->placement = ledger::make_placement(
        *placement, topology.ok() ? *topology : ledger::BookieTopology{}, seeds());
    ledger::BookKeeperOptions bk_options;
    bk_options.placement = loop->placement;
    bk_options.bookie_client.dial_overrides = *dial_overrides;
    bk_options.bookie_client.local_bookies = b->config_.local_bookies;
    loop->bk = std::make_unique<ledger::BookKeeper>(*b->stores_.cluster, loop->io.get_executor(),
                                                    std::move(bk_options));
    loop->factory = std::make_unique<mledger::ManagedLedgerFactory>(
        *b->stores_.cluster, *loop->bk, b->config_.managed_ledger_factory, cache);
    b->loops_.push_back(std::move(loop));
  }
  if (b->config_.replication_start_at != "latest" &&
      b->config_.replication_start_at != "earliest") {
    return Status(Errc::kInvalidArgument,
                  fmt::format("replicationStartAt '{}': must be latest or earliest",
                              b->config_.replication_start_at));
  }
  if (b->config_.broker_delete_inactive_topics_mode != "delete_when_no_subscriptions" &&
      b->config_.broker_delete_inactive_topics_mode != "delete_when_subscriptions_caught_up") {
    return Status(Errc::kInvalidArgument,
                  fmt::format("brokerDeleteInactiveTopicsMode '{}': must be "
                              "delete_when_no_subscriptions or delete_when_subscriptions_caught_up",
                              b->config_.broker_delete_inactive_topics_mode));
  }
  // Authentication settings are checked before any port is bound, as the TLS files are.
  auto authentication = make_authentication(b->config_);
  if (!authentication.ok()) return authentication.status();
  b->authentication_ = std::move(*authentication);
  auto authorization =
      Authorization::create(b->config_, b->stores_.configuration.get(), b->executor());
  if (!authorization.ok()) return authorization.status();
  b->authorization_ = std::move(*authorization);
  // TLS files are checked before any port is bound: a bad one stops the start.
  if (b->config_.broker_service_port_tls) {
    auto tls = net::TlsContext::create(net::TlsRole::kServer, b->config_.tls.options());
    if (!tls.ok()) {
      return Status(tls.status().code(),
                    fmt::format("TLS for brokerServicePortTls: {}", tls.status().message()));
    }
    b->tls_ = *tls;
  }
  b->acceptor_ = std::make_unique<asio::ip::tcp::acceptor>(b->loops_.front()->io);
  MAGNETAR_TRY(
      net::listen_on(*b->acceptor_, b->config_.bind_address, b->config_.broker_service_port));
  b->port_ = b->acceptor_->local_endpoint().port();
  b->config_.broker_service_port = b->port_;
  if (b->tls_) {
    b->tls_acceptor_ = std::make_unique<asio::ip::tcp::acceptor>(b->loops_.front()->io);
    MAGNETAR_TRY(net::listen_on(*b->tls_acceptor_, b->config_.bind_address,
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
  b->namespaces_ = std::make_unique<NamespaceService>(b->executor(), b->stores_, b->config_,
                                                      b->gate_, std::move(self));
  std::vector<TopicRegistry::Loop> registry_loops;
  for (auto& loop : b->loops_) {
    registry_loops.push_back(TopicRegistry::Loop{loop->io.get_executor(), loop->factory.get()});
  }
  b->topics_ = std::make_unique<TopicRegistry>(std::move(registry_loops), b->stores_, b->config_,
                                               *b->namespaces_, b->gate_);
  b->replication_ =
      std::make_unique<ReplicationService>(b->config_, b->stores_, *b->topics_, b->gate_);
  b->topics_->set_replication(b->replication_.get());
  b->namespaces_->set_topics(b->topics_.get());
  b->namespaces_->start();
  Broker* raw = b.get();
  b->connection_context_ = std::make_unique<ConnectionContext>(
      ConnectionContext{b->config_, *b->topics_, *b->namespaces_, *b->schemas_, b->gate_,
                        [raw] { return raw->next_producer_name(); },
                        [raw](Connection* cnx) { raw->forget_connection(cnx); },
                        b->authentication_.get(), b->authorization_.get()});
  b->connections_gauge_ = active_connections_gauge(b->config_.cluster_name);
  b->connection_counters_ = connection_counters(b->config_.cluster_name);
  asio::ip::tcp::acceptor* plain = b->acceptor_.get();
  const Executor first = b->executor();
  spawn_in(b->gate_, first, [raw, plain]() { return raw->accept_loop(plain, false); });
  if (b->tls_acceptor_) {
    asio::ip::tcp::acceptor* tls = b->tls_acceptor_.get();
    spawn_in(b->gate_, first, [raw, tls]() { return raw->accept_loop(tls, true); });
  }
  b->gauge_timer_ = std::make_unique<asio::steady_timer>(b->loops_.front()->io);
  spawn_in(b->gate_, first, [raw]() { return raw->gauge_loop(); });
  b->topology_watcher_ = std::make_unique<ledger::TopologyWatcher>(
      *b->stores_.cluster, first, b->gate_,
      [raw](const ledger::BookieTopology& t) { raw->apply_topology(t); });
  ledger::TopologyWatcher* watcher = b->topology_watcher_.get();
  spawn_in(b->gate_, first, [watcher]() -> Task<void> { (void)co_await watcher->start(); });
  TopicRegistry* topics = b->topics_.get();
  ReplicationService* replication = b->replication_.get();
  for (size_t i = 0; i < b->loops_.size(); ++i) {
    Loop* l = b->loops_[i].get();
    spawn_in(b->gate_, l->io.get_executor(), [topics, i]() { return topics->maintain(i); });
    spawn_in(b->gate_, l->io.get_executor(),
             [replication, i]() { return replication->maintain(i); });
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
                 b->config_.tls.require_trusted_client_cert_on_connect
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
    if (gauge_timer_) gauge_timer_->cancel();
    if (topology_watcher_) topology_watcher_->stop();
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
  // 2. Replicators (their last acknowledgements reach the cursors), topics and factories,
  // each on its loop; then the clients to remote clusters.
  if (topics_) topics_->stop();
  if (replication_) replication_->stop();
  for (size_t i = 0; i < loops_.size(); ++i) {
    Loop* l = loops_[i].get();
    TopicRegistry* topics = topics_.get();
    ReplicationService* replication = replication_.get();
    std::promise<void> done;
    asio::co_spawn(
        l->io,
        [l, topics, replication, i]() -> Task<void> {
          if (replication) co_await replication->close_loop(i);
          if (topics) co_await topics->close_loop(i);
          (void)co_await l->factory->close();
          // Bookie requests still in flight (a dispatch read, say) fail now, while the loop
          // runs: their coroutines finish instead of waiting forever on a stopped loop
          // (holding the ledger that holds them).
          co_await l->bk->client().close();
        },
        [&](std::exception_ptr) { done.set_value(); });
    if (l->thread.joinable()) done.get_future().wait();
  }
  if (replication_) replication_->close_clients();
  // 3. Every coroutine of a connection, topic or the broker itself has ended (they were
  // told to: sockets, cursors and timers are closed) before the loops stop, so none is left
  // suspended holding what is torn down next.
  gate_.close();
  if (loops_.front()->thread.joinable() && !gate_.wait(std::chrono::seconds(10))) {
    log_.warn("stopping with {} tasks still running after 10 s", gate_.count());
  }
  // 4. The loops.
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
      spawn_in(gate_, loop.io.get_executor(), std::move(handshake));
      continue;
    }
    auto cnx =
        std::make_shared<Connection>(*connection_context_, net::tcp_stream(std::move(socket)));
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
  connection_counters_.created->inc();
  cnx->start();
}

Task<void> Broker::handshake_then_serve(asio::ip::tcp::socket socket) {
  std::unique_ptr<net::Stream> stream = net::tls_stream(std::move(socket), tls_);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(config_.tls.handshake_timeout_millis);
  Status st = co_await stream->handshake("", deadline);
  if (!st.ok()) {
    log_.warn("dropping TLS client {}: {}", stream->remote(), st.message());
    co_return;
  }
  serve(std::make_shared<Connection>(*connection_context_, std::move(stream)));
}

void Broker::forget_connection(Connection* cnx) {
  connection_counters_.closed->inc();
  std::lock_guard lock(connections_mu_);
  connections_.erase(cnx);
}

int64_t Broker::connection_count() const {
  std::lock_guard lock(connections_mu_);
  return static_cast<int64_t>(connections_.size());
}

void Broker::apply_topology(const ledger::BookieTopology& topology) {
  // Each policy is used on its own loop only: the update joins that loop's queue.
  for (auto& loop : loops_) {
    asio::post(loop->io,
               [policy = loop->placement, topology] { policy->update_topology(topology); });
  }
}

BrokerServices Broker::services() {
  return BrokerServices{config_,
                        stores_,
                        *topics_,
                        *namespaces_,
                        *schemas_,
                        gate_,
                        authentication_.get(),
                        authorization_.get()};
}

std::string Broker::next_producer_name() {
  return fmt::format("{}-{}-{}", config_.cluster_name, port_, producer_counter_.fetch_add(1));
}

Task<void> Broker::gauge_loop() {
  using std::chrono::milliseconds;
  const auto tick = std::clamp(milliseconds(static_cast<int64_t>(std::min(
                                   config_.message_expiry_check_interval_minutes * 60000,
                                   config_.backlog_quota_check_interval_seconds * 1000.0))),
                               milliseconds(10), milliseconds(1000));
  while (!stopped_) {
    gauge_timer_->expires_after(tick);
    boost::system::error_code ec;
    co_await gauge_timer_->async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (stopped_) co_return;
    connections_gauge_->set(static_cast<double>(connection_count()));
  }
}

}  // namespace magnetar::broker
