#include "broker/config/dynamic_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>

#include "common/config.h"

namespace magnetar::broker {

namespace {

constexpr std::array<std::string_view, 14> kKeys = {
    "brokerDeleteInactiveTopicsEnabled",
    "brokerDeleteInactiveTopicsMaxInactiveDurationSeconds",
    "brokerDeleteInactiveTopicsMode",
    "brokerShutdownTimeoutMs",
    "dispatchThrottlingRatePerReplicatorInByte",
    "dispatchThrottlingRatePerReplicatorInMsg",
    "dispatchThrottlingRatePerSubscriptionInByte",
    "dispatchThrottlingRatePerSubscriptionInMsg",
    "dispatchThrottlingRatePerTopicInByte",
    "dispatchThrottlingRatePerTopicInMsg",
    "maxPublishRatePerTopicInBytes",
    "maxPublishRatePerTopicInMessages",
    "subscribeRatePeriodPerConsumerInSecond",
    "subscribeThrottlingRatePerConsumer",
};

}  // namespace

DynamicConfig::DynamicConfig(BrokerConfig base)
    : base_(std::move(base)), current_(std::make_shared<const BrokerConfig>(base_)) {}

std::span<const std::string_view> DynamicConfig::keys() { return kKeys; }

bool DynamicConfig::is_dynamic(std::string_view key) {
  return std::binary_search(kKeys.begin(), kKeys.end(), key);
}

Status DynamicConfig::check(std::string_view key, std::string_view value) const {
  BrokerConfig scratch = base_;
  ConfigSchema schema("broker");
  bind_broker_config(schema, &scratch);
  Status st = schema.apply_flag(key, value);
  if (st.ok() && key == "brokerDeleteInactiveTopicsMode" &&
      value != "delete_when_no_subscriptions" && value != "delete_when_subscriptions_caught_up") {
    st = Status(Errc::kInvalidArgument,
                "brokerDeleteInactiveTopicsMode must be delete_when_no_subscriptions or "
                "delete_when_subscriptions_caught_up");
  }
  if (st.ok()) return st;
  return Status(Errc::kInvalidArgument,
                fmt::format("Invalid value '{}' for {}: {}", value, key, st.message()));
}

std::vector<std::string> DynamicConfig::update(std::string_view overrides_json) {
  std::vector<std::string> skipped;
  auto next = std::make_shared<BrokerConfig>(base_);
  ConfigSchema schema("broker");
  bind_broker_config(schema, next.get());
  const auto overrides = overrides_json.empty()
                             ? nlohmann::json::object()
                             : nlohmann::json::parse(overrides_json, nullptr, false);
  if (!overrides.is_object()) {
    skipped.push_back(fmt::format("{} is not a JSON object: no override applies",
                                  kDynamicConfigPath));
  } else {
    for (const auto& [key, value] : overrides.items()) {
      const std::string text = value.is_string() ? value.get<std::string>() : value.dump();
      if (!is_dynamic(key)) {
        skipped.push_back(fmt::format("{}: not a dynamic key", key));
        continue;
      }
      if (Status st = check(key, text); !st.ok()) {
        skipped.push_back(st.message());
        continue;
      }
      (void)schema.apply_flag(key, text);
    }
  }
  current_.store(std::move(next));
  return skipped;
}

}  // namespace magnetar::broker
