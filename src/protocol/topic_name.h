#pragma once
// Topic names as Pulsar clients write them, parsed and validated the way Pulsar's broker
// does (TopicName / NamespaceName / NamedEntity in pulsar-common).
//
// Accepted forms, all normalised to the canonical `domain://...` string:
//   persistent://tenant/namespace/topic            the current ("v2") form
//   non-persistent://tenant/namespace/topic
//   persistent://tenant/cluster/namespace/topic    legacy form with a cluster
//   tenant/namespace/topic                         short form, persistent
//   topic                                          persistent://public/default/topic
//
// Grammar of the full form: the domain is everything before the first "://" (matched
// ignoring case); the rest splits at its first three '/'. Three parts make a v2 name;
// four make a legacy name whose topic part keeps any further '/' (so
// "persistent://a/b/c/d" is legacy: cluster b, namespace c). Tenant, cluster and namespace
// are non-empty and use only [A-Za-z0-9_=:.-]. The topic part (the "local name") may hold
// any characters, must be non-empty, and must be valid UTF-8.
//
// A local name ending in "-partition-N", with N a canonical decimal int32 (no sign, no
// leading zero), names partition N of the topic without that suffix.
//
// TopicName is an immutable value; copies are independent.

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace magnetar::protocol {

enum class TopicDomain { kPersistent, kNonPersistent };

// "persistent" or "non-persistent".
std::string_view to_string(TopicDomain domain) noexcept;

class TopicName {
 public:
  static constexpr std::string_view kPartitionSuffix = "-partition-";

  // Fails with Error::kInvalidTopicName and a message quoting `name`.
  static Result<TopicName> parse(std::string_view name);

  TopicDomain domain() const noexcept { return domain_; }
  bool is_persistent() const noexcept { return domain_ == TopicDomain::kPersistent; }
  const std::string& tenant() const noexcept { return tenant_; }
  // Empty unless this is a legacy name.
  const std::string& cluster() const noexcept { return cluster_; }
  bool is_legacy() const noexcept { return !cluster_.empty(); }
  const std::string& namespace_portion() const noexcept { return namespace_; }
  // "tenant/namespace", or "tenant/cluster/namespace" for a legacy name.
  std::string namespace_name() const;
  const std::string& local_name() const noexcept { return local_; }
  // The canonical full name, e.g. "persistent://public/default/orders".
  const std::string& to_string() const noexcept { return full_; }

  // N when the local name ends in "-partition-N", else -1.
  int partition_index() const noexcept { return partition_index_; }
  bool is_partition() const noexcept { return partition_index_ >= 0; }
  // This name with "-partition-<index>" appended; this name itself when it already is that
  // partition. Like Pulsar, a partition of a partition just gains a second suffix.
  // Precondition: index >= 0.
  TopicName partition(int index) const;
  // The topic this partition belongs to (the name without its suffix); this name itself
  // when it is not a partition.
  TopicName partitioned_topic_name() const;

  // The local name in application/x-www-form-urlencoded form, as Java's URLEncoder writes it
  // with UTF-8: [A-Za-z0-9.*_-] stay, ' ' becomes '+', every other byte becomes %XX
  // (upper-case hex).
  std::string encoded_local_name() const;
  // Managed-ledger name: "tenant/namespace/<domain>/<encoded local name>"; legacy names
  // put the cluster after the tenant.
  std::string persistence_name() const;
  // Admin REST path: "<domain>/tenant/namespace/<encoded local name>"; legacy names put
  // the cluster after the tenant.
  std::string rest_path() const;

  // The canonical string determines every part, so it alone decides equality.
  friend bool operator==(const TopicName& a, const TopicName& b) noexcept {
    return a.full_ == b.full_;
  }

 private:
  // Parts must already be valid; computes the canonical string and partition index.
  TopicName(TopicDomain domain, std::string tenant, std::string cluster, std::string ns,
            std::string local);

  TopicDomain domain_;
  std::string tenant_;
  std::string cluster_;
  std::string namespace_;
  std::string local_;
  std::string full_;
  int partition_index_ = -1;
};

// The inverse of TopicName::encoded_local_name(): '+' is ' ', %XX a byte (either case);
// nullopt on a malformed escape. For managed-ledger and REST path names.
std::optional<std::string> decode_local_name(std::string_view encoded);

}  // namespace magnetar::protocol

template <>
struct std::hash<magnetar::protocol::TopicName> {
  size_t operator()(const magnetar::protocol::TopicName& t) const noexcept {
    return std::hash<std::string>{}(t.to_string());
  }
};
