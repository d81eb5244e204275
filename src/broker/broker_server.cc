#include "broker/broker_server.h"

#include <fmt/format.h>

#include <future>
#include <optional>
#include <variant>

#include "broker/admin/access_guard.h"
#include "broker/admin/admin_resources.h"
#include "broker/broker.h"
#include "broker/namespace/load_manager.h"
#include "broker/namespace/namespace_service.h"
#include "console/console.h"
#include "http/http_server.h"
#include "net/tls.h"

namespace magnetar::broker {

namespace {

// Runs `make()` on `executor` and blocks the calling thread (not an event loop) until done.
template <typename T, typename Make>
T block_on(Executor executor, Make make) {
  std::promise<T> done;
  asio::co_spawn(
      executor,
      [&done, make = std::move(make)]() mutable -> Task<void> { done.set_value(co_await make()); },
      asio::detached);
  return done.get_future().get();
}

}  // namespace

Result<std::unique_ptr<BrokerServer>> BrokerServer::start(BrokerConfig config,
                                                          metadata::MetadataStores stores,
                                                          bool load_manager) {
  std::unique_ptr<BrokerServer> s(new BrokerServer());
  s->stores_ = stores;
  log::Logger log("broker");
  http::ServerOptions web_options;
  web_options.address = config.bind_address;
  web_options.port = config.web_service_port;
  if (config.web_service_port_tls) {
    auto tls = net::TlsContext::create(net::TlsRole::kServer, config.tls.options());
    if (!tls.ok()) {
      return Status(tls.status().code(),
                    fmt::format("TLS for webServicePortTls: {}", tls.status().message()));
    }
    web_options.tls = *tls;
    web_options.tls_port = *config.web_service_port_tls;
    web_options.tls_handshake_timeout =
        std::chrono::milliseconds(config.tls.handshake_timeout_millis);
  }
  auto web = http::HttpServer::start(web_options, log);
  if (!web.ok()) return web.status();
  s->web_ = std::move(*web);
  config.web_service_port = s->web_->port();
  if (config.web_service_port_tls) config.web_service_port_tls = s->web_->tls_port();
  auto broker = Broker::start(config, stores);
  if (!broker.ok()) {
    s->web_->stop();
    return broker.status();
  }
  s->broker_ = std::move(*broker);
  Broker* b = s->broker_.get();
  if (load_manager) {
    LoadManagerOptions o;
    o.report_min_interval =
        std::chrono::milliseconds(config.load_balancer_report_update_min_interval_millis);
    o.report_max_interval = std::chrono::milliseconds(
        static_cast<int64_t>(config.load_balancer_report_update_max_interval_minutes * 60000));
    o.report_threshold_percentage = config.load_balancer_report_update_threshold_percentage;
    o.overloaded_threshold_percentage = config.load_balancer_broker_overloaded_threshold_percentage;
    o.split.enabled = config.load_balancer_auto_bundle_split_enabled;
    o.split.unload_split_bundles = config.load_balancer_auto_unload_split_bundles_enabled;
    o.split.maximum_bundles = config.load_balancer_namespace_maximum_bundles;
    o.split.max_topics = config.load_balancer_namespace_bundle_max_topics;
    o.split.max_sessions = config.load_balancer_namespace_bundle_max_sessions;
    o.split.max_msg_rate = config.load_balancer_namespace_bundle_max_msg_rate;
    o.split.max_bandwidth_mbytes = config.load_balancer_namespace_bundle_max_bandwidth_mbytes;
    s->load_ = std::make_unique<LoadManager>(b->namespaces(), o);
  }
  // /metrics is open unless authenticateMetricsEndpoint (then any authenticated role).
  http::MetricsGate metrics_gate;
  if (config.authenticate_metrics_endpoint && b->services().authentication != nullptr) {
    const Authentication* authentication = b->services().authentication;
    metrics_gate = [authentication](const http::Request& req) -> std::optional<http::Response> {
      auto caller = admin::authenticate_request(req, authentication);
      if (auto* refused = std::get_if<http::Response>(&caller)) return std::move(*refused);
      return std::nullopt;
    };
  }
  http::add_metrics_route(*s->web_, std::move(metrics_gate));
  AdminResourcesOptions admin;
  admin.cluster_name = config.cluster_name;
  admin.default_number_of_namespace_bundles = config.default_number_of_namespace_bundles;
  admin.allow_auto_update_schema = config.is_allow_auto_update_schema;
  add_admin_routes(*s->web_, stores, admin, b->services(), s->load_.get());
  // The web console's static files (open: they hold no data; its REST calls are checked).
  console::add_console_routes(*s->web_);
  if (s->load_) {
    LoadManager* load = s->load_.get();
    b->namespaces().set_load_manager(load);
    Status st = block_on<Status>(b->namespaces().executor(), [load]() { return load->start(); });
    if (!st.ok()) {
      s->stop();
      return Status(st.code(), fmt::format("registering the broker: {}", st.message()));
    }
  }
  return s;
}

BrokerServer::~BrokerServer() {
  stop();
}

int BrokerServer::port() const {
  return broker_->port();
}
int BrokerServer::web_port() const {
  return web_->port();
}
int BrokerServer::tls_port() const {
  return broker_->tls_port();
}
int BrokerServer::web_tls_port() const {
  return web_->tls_port();
}

void BrokerServer::stop() {
  if (stopped_) return;
  stopped_ = true;
  if (broker_) {
    NamespaceService* ns = &broker_->namespaces();
    block_on<bool>(ns->executor(), [ns]() -> Task<bool> {
      co_await ns->stop();
      co_return true;
    });
    if (load_) {
      LoadManager* load = load_.get();
      block_on<bool>(ns->executor(), [load]() -> Task<bool> {
        co_await load->stop();
        co_return true;
      });
    }
  }
  if (web_) web_->stop();
  if (broker_) broker_->stop();
}

}  // namespace magnetar::broker
