#include "broker/config/store_paths.h"

#include <fmt/format.h>

namespace magnetar::broker {

std::string cluster_path(std::string_view cluster) {
  return fmt::format("/admin/clusters/{}", cluster);
}

std::string tenant_path(std::string_view tenant) {
  return fmt::format("/admin/policies/{}", tenant);
}

std::string namespace_policies_path(std::string_view ns) {
  return fmt::format("/admin/policies/{}", ns);
}

std::string partitioned_topic_path(const protocol::TopicName& topic) {
  return fmt::format("/admin/partitioned-topics/{}/{}/{}", topic.namespace_name(),
                     protocol::to_string(topic.domain()), topic.encoded_local_name());
}

std::string partitioned_topics_dir(std::string_view ns, protocol::TopicDomain domain) {
  return fmt::format("/admin/partitioned-topics/{}/{}", ns, protocol::to_string(domain));
}

std::string topic_policies_dir(std::string_view ns, bool global) {
  return fmt::format("/admin/{}topic-policies/{}", global ? "" : "local-", ns);
}

std::string topic_policies_path(const protocol::TopicName& topic, bool global) {
  const protocol::TopicName base = topic.partitioned_topic_name();
  return fmt::format("{}/{}/{}", topic_policies_dir(topic.namespace_name(), global),
                     protocol::to_string(base.domain()), base.encoded_local_name());
}

}  // namespace magnetar::broker
