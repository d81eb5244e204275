#pragma once
// The proxy's HTTP side (reference §6.5): /admin/* and /lookup/* forwarded to a broker's web
// service (brokerWebServiceURL[TLS], else the next registered broker), redirects between
// brokers followed by the proxy itself with the body and credentials replayed, so clients
// never see them; the client's Authorization header is passed on and, when the proxy
// authenticated the client, X-Original-Principal names its role. /metrics (the proxy's own),
// /status.html and /proxy-stats/connections are answered by the proxy.

#include <functional>
#include <memory>
#include <string>

#include "http/http_client.h"

namespace magnetar::auth {
class Authentication;
}
namespace magnetar::http {
class HttpServer;
}

namespace magnetar::proxy {

class BrokerDiscovery;
struct ProxyConfig;

struct HttpForwardContext {
  const ProxyConfig& config;
  BrokerDiscovery& discovery;
  const auth::Authentication* authentication = nullptr;  // null: authentication off
  // Requests to brokers: timeout httpProxyTimeout, TLS towards brokers.
  http::HttpClient client;
  // JSON of the open client connections, for /proxy-stats/connections.
  std::function<std::string()> connections_json;
};

// Adds the proxy's routes to `server`; `context` must outlive it.
void add_proxy_routes(http::HttpServer& server, HttpForwardContext& context);

}  // namespace magnetar::proxy
