#include "broker/broker.h"

#include <fmt/format.h>

#include <boost/asio/redirect_error.hpp>
#include <future>
#include <nlohmann/json.hpp>

#include "broker/broker_metrics.h"
#include "broker/connection.h"
#include "broker/schema_registry.h"
#include "broker/topic.h"
#include "http/http_server.h"
#include "ledger/bookkeeper.h"
#include "mledger/managed_ledger.h"

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

}  // namespace

Broker::Broker(BrokerConfig config, metadata::MetadataStores stores)
    : config_(std::move(config)), stores_(std::move(stores)), log_(log::Logger("broker")) {}

Result<std::unique_ptr<Broker>> Broker::start(BrokerConfig config,
                                              metadata::MetadataStores stores) {
  std::unique_ptr<Broker> b(new Broker(std::move(config), std::move(stores)));
  boost::system::error_code ec;
  auto address = asio::ip::make_address(b->config_.bind_address, ec);
  if (ec) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("bindAddress '{}': {}", b->config_.bind_address, ec.message()));
  }
  asio::ip::tcp::endpoint endpoint(address, static_cast<uint16_t>(b->config_.broker_service_port));
  b->acceptor_ = std::make_unique<asio::ip::tcp::acceptor>(b->io_);
  b->acceptor_->open(endpoint.protocol(), ec);
  if (!ec) b->acceptor_->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) b->acceptor_->bind(endpoint, ec);
  if (!ec) b->acceptor_->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status(Errc::kUnavailable,
                  fmt::format("cannot listen on {}:{}: {}", b->config_.bind_address,
                              b->config_.broker_service_port, ec.message()));
  }
  b->port_ = b->acceptor_->local_endpoint().port();
  b->config_.broker_service_port = b->port_;
  b->bk_ = std::make_unique<ledger::BookKeeper>(*b->stores_.cluster, b->io_.get_executor());
  b->factory_ = std::make_unique<mledger::ManagedLedgerFactory>(*b->stores_.cluster, *b->bk_,
                                                                b->config_.managed_ledger_factory);
  b->schemas_ = std::make_unique<SchemaRegistry>(*b->stores_.cluster);
  b->connections_gauge_ = active_connections_gauge(b->config_.cluster_name);
  Broker* raw = b.get();
  asio::co_spawn(
      b->io_, [raw]() { return raw->accept_loop(); }, asio::detached);
  asio::co_spawn(
      b->io_, [raw]() { return raw->maintenance_loop(); }, asio::detached);
  b->thread_ = std::thread([raw] {
    auto guard = asio::make_work_guard(raw->io_);
    raw->io_.run();
  });
  b->log_.info("serving the Pulsar protocol on {}:{} (advertised as {})", b->config_.bind_address,
               b->port_, b->config_.service_url());
  return b;
}

Broker::~Broker() {
  stop();
}

void Broker::stop() {
  if (stopped_.exchange(true)) return;
  std::promise<void> done;
  asio::co_spawn(
      io_,
      [this]() -> Task<void> {
        boost::system::error_code ec;
        if (acceptor_) acceptor_->close(ec);
        auto connections = connections_;
        for (auto& [raw, weak] : connections) {
          if (auto c = weak.lock()) c->close();
        }
        auto topics = topics_;
        for (auto& [name, topic] : topics) co_await topic->close();
        topics_.clear();
        (void)co_await factory_->close();
      },
      [&](std::exception_ptr) { done.set_value(); });
  if (thread_.joinable()) {
    done.get_future().wait();
    io_.stop();
    thread_.join();
  }
  factory_.reset();
  bk_.reset();
  log_.info("stopped");
}

Task<void> Broker::accept_loop() {
  while (!stopped_) {
    boost::system::error_code ec;
    asio::ip::tcp::socket socket =
        co_await acceptor_->async_accept(asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      if (stopped_ || ec == asio::error::operation_aborted) co_return;
      log_.warn("accept failed: {}", ec.message());
      continue;
    }
    auto cnx = std::make_shared<Connection>(*this, std::move(socket));
    connections_[cnx.get()] = cnx;
    cnx->start();
  }
}

void Broker::forget_connection(Connection* cnx) {
  connections_.erase(cnx);
}

// Message expiry (TTL) and backlog quotas, each at its configured period.
Task<void> Broker::maintenance_loop() {
  using std::chrono::milliseconds;
  const auto ttl_period =
      milliseconds(static_cast<int64_t>(config_.message_expiry_check_interval_minutes * 60000));
  const auto quota_period =
      milliseconds(static_cast<int64_t>(config_.backlog_quota_check_interval_seconds * 1000));
  const auto tick =
      std::clamp(std::min(ttl_period, quota_period), milliseconds(10), milliseconds(1000));
  auto next_ttl = std::chrono::steady_clock::now() + ttl_period;
  auto next_quota = std::chrono::steady_clock::now() + quota_period;
  asio::steady_timer timer(io_);
  while (!stopped_) {
    timer.expires_after(tick);
    boost::system::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (stopped_) co_return;
    const auto now = std::chrono::steady_clock::now();
    const bool ttl_due = now >= next_ttl, quota_due = now >= next_quota;
    if (ttl_due) next_ttl = now + ttl_period;
    if (quota_due) next_quota = now + quota_period;
    for (auto& [name, topic] : topics_) topic->refresh_metrics();
    connections_gauge_->set(static_cast<double>(connections_.size()));
    if (!ttl_due && !quota_due) continue;
    auto topics = topics_;
    for (auto& [name, topic] : topics) {
      if (ttl_due) co_await topic->expire_messages();
      if (quota_due) co_await topic->enforce_backlog_quota();
    }
  }
}

std::string Broker::next_producer_name() {
  return fmt::format("{}-{}-{}", config_.cluster_name, port_, producer_counter_++);
}

std::shared_ptr<PersistentTopic> Broker::loaded_topic(const std::string& name) const {
  auto it = topics_.find(name);
  return it == topics_.end() ? nullptr : it->second;
}

Task<Result<bool>> Broker::namespace_exists(std::string ns) {
  auto r = co_await stores_.configuration->exists(policies_path(ns));
  if (!r.ok()) co_return r.status();
  co_return *r;
}

Task<Result<std::shared_ptr<PersistentTopic>>> Broker::get_topic(protocol::TopicName name,
                                                                 bool create) {
  const std::string key = name.to_string();
  if (!name.is_persistent()) {
    co_return broker_error(Errc::kNotSupported, "non-persistent topics are not supported");
  }
  // One load at a time per topic; later callers wait for it.
  while (loading_.count(key)) {
    auto turn = await_callback<bool>(
        [this, key](std::function<void(bool)> done) { loading_[key].push_back(std::move(done)); });
    (void)co_await std::move(turn);
  }
  if (auto t = loaded_topic(key)) co_return t;
  if (stopped_) co_return broker_error(Errc::kUnavailable, "broker is stopping");
  loading_[key];
  auto finish = [this, key]() {
    auto waiters = std::move(loading_[key]);
    loading_.erase(key);
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
  const std::string ml_name = name.persistence_name();
  if (!create || !config_.allow_auto_topic_creation) {
    const std::string ml_path = mledger::managed_ledger_path(ml_name);
    auto exists = co_await stores_.cluster->exists(ml_path);
    if (!exists.ok() || !*exists) {
      finish();
      co_return broker_error(Errc::kNotFound, fmt::format("topic {} not found", key));
    }
  }
  auto ml = co_await factory_->open(ml_name, ml_config);
  if (!ml.ok()) {
    finish();
    co_return ml.status();
  }
  auto topic = std::make_shared<PersistentTopic>(*this, name, *ml);
  topic->set_policies(topic_policies);
  if (deduplication) {
    Status st = co_await topic->enable_deduplication();
    if (!st.ok()) {
      finish();
      co_return st;
    }
  }
  topics_[key] = topic;
  finish();
  log_.info("loaded topic {}", key);
  co_return topic;
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

nlohmann::json Broker::topic_stats(const std::string& name) const {
  auto topic = loaded_topic(name);
  return topic ? topic->stats() : nlohmann::json();
}

nlohmann::json Broker::all_topic_stats() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, topic] : topics_) j[name] = topic->stats();
  return j;
}

}  // namespace magnetar::broker
