#include "broker/config/store_paths.h"

#include <fmt/format.h>

namespace magnetar::broker {

std::string cluster_path(std::string_view cluster) {
  return fmt::format("/admin/clusters/{}", cluster);
}

std::string namespace_policies_path(std::string_view ns) {
  return fmt::format("/admin/policies/{}", ns);
}

std::string partitioned_topic_path(const protocol::TopicName& topic) {
  return fmt::format("/admin/partitioned-topics/{}/{}/{}", topic.namespace_name(),
                     protocol::to_string(topic.domain()), topic.encoded_local_name());
}

std::string partitioned_topics_dir(std::string_view ns) {
  return fmt::format("/admin/partitioned-topics/{}/persistent", ns);
}

}  // namespace magnetar::broker
