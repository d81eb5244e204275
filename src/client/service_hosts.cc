#include "client/service_hosts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <charconv>

#include "magnetar/errors.h"

namespace magnetar::client {

namespace {

Status invalid(std::string text) {
  return Status(ClientError::kInvalidConfiguration, std::move(text));
}

}  // namespace

std::string Authority::host_port() const {
  if (host.find(':') != std::string::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

uint16_t default_port(std::string_view scheme) {
  if (scheme == "pulsar") return 6650;
  if (scheme == "pulsar+ssl") return 6651;
  if (scheme == "http") return 80;
  if (scheme == "https") return 443;
  return 0;
}

Result<Authority> parse_authority(std::string_view text, uint16_t default_port) {
  Authority a;
  std::string_view port;
  bool has_port = false;
  if (text.starts_with('[')) {
    const size_t close = text.find(']');
    if (close == std::string_view::npos) return invalid("unterminated IPv6 address");
    a.host = std::string(text.substr(1, close - 1));
    const std::string_view after = text.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return invalid(fmt::format("junk after the IPv6 address '{}'", text));
      port = after.substr(1);
      has_port = true;
    }
  } else if (std::count(text.begin(), text.end(), ':') > 1) {
    // An IPv6 literal without brackets: the last field is the port.
    const size_t colon = text.rfind(':');
    a.host = std::string(text.substr(0, colon));
    port = text.substr(colon + 1);
    has_port = true;
  } else {
    const size_t colon = text.find(':');
    a.host = std::string(text.substr(0, colon));
    if (colon != std::string_view::npos) {
      port = text.substr(colon + 1);
      has_port = true;
    }
  }
  if (a.host.empty()) return invalid("empty host");
  if (a.host.find_first_of(" \t\r\n/@?#[]") != std::string::npos) {
    return invalid(fmt::format("invalid hostname '{}'", a.host));
  }
  if (!has_port) {
    a.port = default_port;
    return a;
  }
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value == 0 ||
      value > 65535) {
    return invalid(fmt::format("invalid port '{}'", port));
  }
  a.port = static_cast<uint16_t>(value);
  return a;
}

Result<ServiceUrl> parse_service_url(std::string_view url) {
  const size_t sep = url.find("://");
  ServiceUrl out;
  if (sep != std::string_view::npos) out.scheme = std::string(url.substr(0, sep));
  const uint16_t port = default_port(out.scheme);
  if (port == 0) {
    return invalid(fmt::format(
        "service URL '{}' must start with pulsar://, pulsar+ssl://, http:// or https://", url));
  }
  std::string_view rest = url.substr(sep + 3);
  const size_t slash = rest.find('/');
  if (slash != std::string_view::npos) {
    out.path = std::string(rest.substr(slash));
    rest = rest.substr(0, slash);
  }
  if (rest.empty()) return invalid(fmt::format("service URL '{}' names no host", url));
  size_t start = 0;
  while (start <= rest.size()) {
    size_t comma = rest.find(',', start);
    if (comma == std::string_view::npos) comma = rest.size();
    auto a = parse_authority(rest.substr(start, comma - start), port);
    if (!a.ok()) {
      return invalid(fmt::format("service URL '{}': {} (host {})", url, a.status().message(),
                                 out.hosts.size() + 1));
    }
    out.hosts.push_back(fmt::format("{}://{}", out.scheme, a->host_port()));
    start = comma + 1;
  }
  return out;
}

ServiceHosts::ServiceHosts(std::vector<std::string> urls, Options options)
    : urls_(std::move(urls)), options_(options), health_(urls_.size()) {
  assert(!urls_.empty());
}

size_t ServiceHosts::next(TimePoint now) {
  std::lock_guard lock(mu_);
  const size_t n = urls_.size();
  for (size_t i = 0; i < n; ++i) {
    const size_t index = (next_ + i) % n;
    if (health_[index].quarantined_until <= now) {
      next_ = (index + 1) % n;
      return index;
    }
  }
  // Every host is quarantined: never fail without trying, so the one that failed longest ago.
  const auto oldest = std::min_element(
      health_.begin(), health_.end(),
      [](const Health& a, const Health& b) { return a.last_failure < b.last_failure; });
  return static_cast<size_t>(oldest - health_.begin());
}

std::chrono::milliseconds ServiceHosts::failed(size_t index, TimePoint now) {
  std::lock_guard lock(mu_);
  Health& h = health_[index];
  ++h.failures;
  h.last_failure = std::max(h.last_failure, now);
  if (options_.initial.count() <= 0 || h.quarantined_until > now) {
    return std::chrono::milliseconds(0);
  }
  h.backoff = h.backoff.count() == 0
                  ? options_.initial
                  : std::min(2 * h.backoff, std::max(options_.max, options_.initial));
  h.quarantined_until = now + h.backoff;
  return h.backoff;
}

void ServiceHosts::succeeded(size_t index) {
  std::lock_guard lock(mu_);
  Health& h = health_[index];
  h.backoff = std::chrono::milliseconds(0);
  h.quarantined_until = TimePoint{};
}

bool ServiceHosts::quarantined(size_t index, TimePoint now) const {
  std::lock_guard lock(mu_);
  return health_[index].quarantined_until > now;
}

int64_t ServiceHosts::failures(size_t index) const {
  std::lock_guard lock(mu_);
  return health_[index].failures;
}

}  // namespace magnetar::client
