#pragma once
// Pulsar's dynamic configuration: the broker keys that may change while brokers run, their
// overrides in the cluster's metadata store (kDynamicConfigPath, a JSON map of key to value
// as text, shared by every broker of the cluster and kept across restarts), and the
// configuration in force: the broker's own with the overrides applied.
//
// Only keys Magnetar applies at once are dynamic: the rate limits and inactive-topic
// defaults (applied to loaded topics through their policies) and brokerShutdownTimeoutMs
// (read when the broker stops). Other keys, Pulsar's dynamic ones included, are refused
// with Pulsar's "Can't update non-dynamic configuration".
//
// Threading: current() may be called from any thread; update() from one at a time.

#include <atomic>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "broker/config/broker_config.h"
#include "common/status.h"

namespace magnetar::broker {

inline constexpr std::string_view kDynamicConfigPath = "/admin/configuration";

class DynamicConfig {
 public:
  explicit DynamicConfig(BrokerConfig base);

  // The dynamic keys, sorted.
  static std::span<const std::string_view> keys();
  static bool is_dynamic(std::string_view key);

  // Whether `value` is valid for dynamic key `key` (its type and range): kInvalidArgument
  // naming both otherwise.
  Status check(std::string_view key, std::string_view value) const;

  // The overrides node's value (empty: none): the configuration in force becomes the base
  // with each valid override applied. Returns the overrides skipped (not dynamic, or an
  // invalid value), each with why.
  std::vector<std::string> update(std::string_view overrides_json);

  // The configuration in force.
  std::shared_ptr<const BrokerConfig> current() const { return current_.load(); }
  const BrokerConfig& base() const { return base_; }

 private:
  const BrokerConfig base_;
  std::atomic<std::shared_ptr<const BrokerConfig>> current_;
};

}  // namespace magnetar::broker
