#include "proxy/proxy_server.h"

#include <fmt/format.h>

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <future>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "auth/authentication.h"
#include "client/connection.h"
#include "common/gate.h"
#include "common/logging.h"
#include "console/console.h"
#include "http/http_server.h"
#include "magnetar/authentication.h"
#include "net/listen.h"
#include "net/stream.h"
#include "net/tls.h"
#include "proxy/broker_discovery.h"
#include "proxy/http_forward.h"
#include "proxy/proxy_connection.h"
#include "proxy/target_guard.h"

namespace magnetar::proxy {

namespace {

// "pulsar://h1:6650,h2:6650/" -> {"pulsar://h1:6650", "pulsar://h2:6650"}.
std::vector<std::string> split_hosts(const std::string& url) {
  std::vector<std::string> out;
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return out;
  const std::string scheme = url.substr(0, scheme_end + 3);
  std::string rest = url.substr(scheme_end + 3);
  const size_t path = rest.find('/');
  if (path != std::string::npos) rest.resize(path);
  size_t start = 0;
  while (start <= rest.size()) {
    size_t comma = rest.find(',', start);
    if (comma == std::string::npos) comma = rest.size();
    if (comma > start) out.push_back(scheme + rest.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

}  // namespace

class ProxyServer::Impl {
 public:
  explicit Impl(ProxyConfig config) : config_(std::move(config)), log_(log::Logger("proxy")) {}
  ~Impl() { stop(); }

  Status start(std::shared_ptr<metadata::MetadataStore> store);
  void stop();
  int64_t connections() const { return open_.load(); }

  ProxyConfig config_;
  log::Logger log_;
  int port_ = 0, tls_port_ = 0;
  std::unique_ptr<http::HttpServer> web_;

 private:
  struct Loop {
    asio::io_context io;
    std::thread thread;
  };
  Task<void> accept_loop(asio::ip::tcp::acceptor* acceptor, bool tls);
  std::string connections_json() const;

  Gate gate_;
  std::vector<std::unique_ptr<Loop>> loops_;
  std::atomic<uint64_t> next_loop_{0};
  std::unique_ptr<auth::Authentication> authentication_;
  std::unique_ptr<TargetGuard> guard_;
  std::unique_ptr<BrokerDiscovery> discovery_;
  std::unique_ptr<ProxyContext> context_;
  std::unique_ptr<HttpForwardContext> http_;
  std::shared_ptr<net::TlsContext> server_tls_;
  std::unique_ptr<asio::ip::tcp::acceptor> acceptor_, tls_acceptor_;
  std::atomic<int64_t> open_{0};
  std::atomic<bool> stopped_{false};
  mutable std::mutex connections_mu_;
  std::map<ProxyConnection*, std::weak_ptr<ProxyConnection>> connections_;
};

Status ProxyServer::Impl::start(std::shared_ptr<metadata::MetadataStore> store) {
  MAGNETAR_TRY(config_.validate());
  if (!config_.static_discovery() && !store) {
    return Status(Errc::kInvalidArgument, "metadataStoreUrl: no metadata store to find brokers in");
  }
  auto authentication = auth::Authentication::create(config_.authentication);
  if (!authentication.ok()) return authentication.status();
  authentication_ = std::move(*authentication);
  auto guard = TargetGuard::create(config_.broker_proxy_allowed_host_names,
                                   config_.broker_proxy_allowed_ip_addresses,
                                   config_.broker_proxy_allowed_target_ports);
  if (!guard.ok()) return guard.status();
  guard_ = std::make_unique<TargetGuard>(std::move(*guard));
  // The proxy's own side towards brokers.
  client::ClientOptions broker_client;
  broker_client.connection_timeout = std::chrono::milliseconds(config_.broker_proxy_connect_timeout_ms);
  broker_client.operation_timeout = std::chrono::seconds(30);
  broker_client.keep_alive_interval = std::chrono::seconds(config_.keep_alive_interval_seconds);
  broker_client.tls_trust_certs_file_path = config_.broker_client_trust_certs_file_path;
  broker_client.tls_allow_insecure_connection = config_.broker_client_tls_allow_insecure;
  broker_client.tls_validate_hostname = config_.tls_hostname_verification_enabled;
  broker_client.tls_certificate_file_path = config_.broker_client_certificate_file_path;
  broker_client.tls_private_key_file_path = config_.broker_client_key_file_path;
  if (!config_.broker_client_authentication_plugin.empty()) {
    auto a = client::create_authentication(config_.broker_client_authentication_plugin,
                                           config_.broker_client_authentication_parameters);
    if (!a.ok()) {
      return Status(Errc::kInvalidArgument,
                    fmt::format("brokerClientAuthenticationPlugin: {}", a.status().message()));
    }
    broker_client.authentication = *a;
  }
  std::shared_ptr<net::TlsContext> broker_tls;
  if (config_.tls_enabled_with_broker) {
    auto made = client::make_tls_context(broker_client);
    if (!made.ok()) {
      return Status(Errc::kInvalidArgument,
                    fmt::format("TLS towards brokers (brokerClientTrustCertsFilePath, "
                                "brokerClientCertificateFilePath): {}",
                                made.status().message()));
    }
    broker_tls = *made;
  }
  if (config_.service_port_tls || config_.web_service_port_tls) {
    auto made = net::TlsContext::create(net::TlsRole::kServer, config_.tls.options());
    if (!made.ok()) {
      return Status(made.status().code(), fmt::format("TLS for servicePortTls/webServicePortTls: {}",
                                                      made.status().message()));
    }
    server_tls_ = *made;
  }
  const int n = config_.num_io_threads > 0
                    ? config_.num_io_threads
                    : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 0; i < n; ++i) loops_.push_back(std::make_unique<Loop>());
  Executor first = loops_.front()->io.get_executor();
  BrokerDiscovery::Options d;
  d.tls = config_.tls_enabled_with_broker;
  if (config_.static_discovery()) {
    d.service_urls = split_hosts(d.tls ? config_.broker_service_url_tls : config_.broker_service_url);
    d.web_urls = split_hosts(d.tls ? config_.broker_web_service_url_tls
                                   : config_.broker_web_service_url);
  } else {
    d.store = store;
  }
  discovery_ = std::make_unique<BrokerDiscovery>(first, std::move(d), gate_);
  context_.reset(new ProxyContext{config_, *discovery_, *guard_, authentication_.get(),
                                  std::move(broker_client), broker_tls,
                                  proxy_metrics(config_.cluster_name), gate_});
  // Ports: binary (and TLS), then the web port.
  acceptor_ = std::make_unique<asio::ip::tcp::acceptor>(loops_.front()->io);
  MAGNETAR_TRY(net::listen_on(*acceptor_, config_.bind_address, config_.service_port));
  port_ = acceptor_->local_endpoint().port();
  if (config_.service_port_tls) {
    tls_acceptor_ = std::make_unique<asio::ip::tcp::acceptor>(loops_.front()->io);
    MAGNETAR_TRY(net::listen_on(*tls_acceptor_, config_.bind_address, *config_.service_port_tls));
    tls_port_ = tls_acceptor_->local_endpoint().port();
  }
  http::ServerOptions web;
  web.address = config_.bind_address;
  web.port = config_.web_service_port;
  web.max_body_bytes = static_cast<size_t>(config_.http_input_max_replay_buffer_size) + 1;
  if (config_.web_service_port_tls) {
    web.tls = server_tls_;
    web.tls_port = *config_.web_service_port_tls;
    web.tls_handshake_timeout = std::chrono::milliseconds(config_.tls.handshake_timeout_millis);
  }
  auto started = http::HttpServer::start(web, log_);
  if (!started.ok()) return started.status();
  web_ = std::move(*started);
  http::ClientOptions http_client;
  http_client.timeout = std::chrono::milliseconds(config_.http_proxy_timeout);
  http_client.max_redirects = 10;
  http_client.tls_trust_certs_file_path = config_.broker_client_trust_certs_file_path;
  http_client.tls_allow_insecure_connection = config_.broker_client_tls_allow_insecure;
  http_client.tls_validate_hostname = config_.tls_hostname_verification_enabled;
  http_client.tls_certificate_file_path = config_.broker_client_certificate_file_path;
  http_client.tls_private_key_file_path = config_.broker_client_key_file_path;
  http_client.user_agent = "magnetar-proxy";
  http_.reset(new HttpForwardContext{config_, *discovery_, authentication_.get(),
                                     http::HttpClient(http_client),
                                     [this] { return connections_json(); }});
  add_proxy_routes(*web_, *http_);
  // The web console is served by the proxy itself (the same embedded files as the brokers');
  // its /admin/ calls are forwarded like any other.
  console::add_console_routes(*web_);
  // The loops run; discovery reads the brokers once before clients are let in.
  for (auto& loop : loops_) {
    Loop* l = loop.get();
    l->thread = std::thread([l] {
      auto work = asio::make_work_guard(l->io);
      l->io.run();
    });
  }
  std::promise<Status> discovered;
  BrokerDiscovery* discovery = discovery_.get();
  asio::co_spawn(
      first,
      [&discovered, discovery]() -> Task<void> { discovered.set_value(co_await discovery->start()); },
      asio::detached);
  Status st = discovered.get_future().get();
  if (!st.ok()) {
    return Status(st.code(), fmt::format("reading the registered brokers: {}", st.message()));
  }
  asio::ip::tcp::acceptor* plain = acceptor_.get();
  spawn_in(gate_, first, [this, plain]() { return accept_loop(plain, false); });
  if (tls_acceptor_) {
    asio::ip::tcp::acceptor* tls = tls_acceptor_.get();
    spawn_in(gate_, first, [this, tls]() { return accept_loop(tls, true); });
  }
  log_.info("proxy serving the Pulsar protocol on {}:{}{}, HTTP on {}:{}{}; brokers {}",
            config_.bind_address, port_, tls_port_ ? fmt::format(" (TLS {})", tls_port_) : "",
            config_.bind_address, web_->port(),
            web_->tls_port() ? fmt::format(" (HTTPS {})", web_->tls_port()) : "",
            config_.static_discovery() ? "named in proxy.conf" : "from the metadata store");
  return Status::OK();
}

Task<void> ProxyServer::Impl::accept_loop(asio::ip::tcp::acceptor* acceptor, bool tls) {
  while (!stopped_) {
    Loop& loop = *loops_[next_loop_++ % loops_.size()];
    boost::system::error_code ec;
    asio::ip::tcp::socket socket = co_await acceptor->async_accept(
        loop.io.get_executor(), asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      if (stopped_ || ec == asio::error::operation_aborted) co_return;
      log_.warn("accept failed: {}", ec.message());
      continue;
    }
    if (open_.load() >= config_.max_concurrent_inbound_connections) {
      // Beyond the limit: closed at once, as Pulsar's proxy does.
      context_->metrics.rejected_connections->inc();
      socket.close(ec);
      continue;
    }
    open_.fetch_add(1);
    context_->metrics.new_connections->inc();
    context_->metrics.active_connections->inc();
    std::unique_ptr<net::Stream> stream =
        tls ? net::tls_stream(std::move(socket), server_tls_) : net::tcp_stream(std::move(socket));
    auto cnx = std::make_shared<ProxyConnection>(*context_, loop.io, std::move(stream), nullptr);
    ProxyConnection* raw = cnx.get();
    {
      std::lock_guard lock(connections_mu_);
      connections_[raw] = cnx;
    }
    auto serve = [this, cnx]() -> Task<void> {
      co_await cnx->serve();
      {
        std::lock_guard lock(connections_mu_);
        connections_.erase(cnx.get());
      }
      open_.fetch_sub(1);
      context_->metrics.active_connections->dec();
    };
    if (!spawn_in(gate_, loop.io.get_executor(), std::move(serve))) {
      std::lock_guard lock(connections_mu_);
      connections_.erase(raw);
      open_.fetch_sub(1);
      context_->metrics.active_connections->dec();
    }
  }
}

std::string ProxyServer::Impl::connections_json() const {
  nlohmann::json out = nlohmann::json::array();
  std::lock_guard lock(connections_mu_);
  for (const auto& [raw, weak] : connections_) {
    if (auto c = weak.lock()) out.push_back({{"remoteAddress", c->remote()}});
  }
  return out.dump();
}

void ProxyServer::Impl::stop() {
  if (stopped_.exchange(true)) return;
  if (web_) web_->stop();
  if (loops_.empty()) return;
  const bool running = loops_.front()->thread.joinable();
  auto close_all = [this] {
    boost::system::error_code ec;
    if (acceptor_) acceptor_->close(ec);
    if (tls_acceptor_) tls_acceptor_->close(ec);
    if (discovery_) discovery_->stop();
  };
  if (running) {
    std::promise<void> closed;
    asio::post(loops_.front()->io, [&] {
      close_all();
      closed.set_value();
    });
    closed.get_future().wait();
  } else {
    close_all();
  }
  std::vector<std::shared_ptr<ProxyConnection>> open;
  {
    std::lock_guard lock(connections_mu_);
    for (auto& [raw, weak] : connections_) {
      if (auto c = weak.lock()) open.push_back(c);
    }
  }
  for (auto& c : open) {
    std::promise<void> done;
    // On the connection's own loop: its state is touched only there.
    asio::post(c->executor(), [&done, c] {
      c->close();
      done.set_value();
    });
    done.get_future().wait();
  }
  gate_.close();
  if (running && !gate_.wait(std::chrono::seconds(10))) {
    log_.warn("stopping with {} tasks still running after 10 s", gate_.count());
  }
  for (auto& loop : loops_) {
    loop->io.stop();
    if (loop->thread.joinable()) loop->thread.join();
  }
}

ProxyServer::ProxyServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ProxyServer::~ProxyServer() { stop(); }

Result<std::unique_ptr<ProxyServer>> ProxyServer::start(
    ProxyConfig config, std::shared_ptr<metadata::MetadataStore> store) {
  auto impl = std::make_unique<Impl>(std::move(config));
  Status st = impl->start(std::move(store));
  if (!st.ok()) return st;
  return std::unique_ptr<ProxyServer>(new ProxyServer(std::move(impl)));
}

void ProxyServer::stop() {
  if (impl_) impl_->stop();
}

int ProxyServer::port() const { return impl_->port_; }
int ProxyServer::tls_port() const { return impl_->tls_port_; }
int ProxyServer::web_port() const { return impl_->web_->port(); }
int ProxyServer::web_tls_port() const { return impl_->web_->tls_port(); }
int64_t ProxyServer::connections() const { return impl_->connections(); }

}  // namespace magnetar::proxy
