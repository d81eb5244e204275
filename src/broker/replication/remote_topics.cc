#include "broker/replication/remote_topics.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "broker/replication/remote_clusters.h"
#include "broker/service/topic_registry.h"

namespace magnetar::broker {

namespace {

// What a remote's error answer says: its {"reason": ...}, else the status line.
std::string reason_of(const http::HttpResponse& r) {
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_object() && j.contains("reason") && j["reason"].is_string()) {
    return fmt::format("{} {}", r.status, j["reason"].get<std::string>());
  }
  return fmt::format("HTTP {}", r.status);
}

Status answer_error(const std::string& cluster, const std::string& what,
                    const http::HttpResponse& r) {
  const Errc code = r.status >= 500                        ? Errc::kUnavailable
                    : r.status == 401 || r.status == 403 ? Errc::kPermissionDenied
                                                           : Errc::kInvalidArgument;
  return Status(code, fmt::format("cluster {}: {}: {}", cluster, what, reason_of(r)));
}

}  // namespace

Task<Status> RemoteTopics::ensure(std::string cluster, protocol::TopicName topic, bool grow) {
  const protocol::TopicName base = topic.partitioned_topic_name();
  auto local = co_await topics_.partitions(base, false);
  if (!local.ok()) co_return local.status();
  auto endpoint = co_await remotes_.endpoint(cluster);
  if (!endpoint.ok()) co_return endpoint.status();
  if (endpoint->web_service_url.empty()) {
    co_return Status(Errc::kInvalidArgument,
                     fmt::format("cluster {}: its ClusterData has no serviceUrl, so the topic's "
                                 "shape there cannot be checked",
                                 cluster));
  }
  const http::HttpClient web(endpoint->web_options);
  std::string root = endpoint->web_service_url;
  while (!root.empty() && root.back() == '/') root.pop_back();
  root += "/admin/v2/";
  const std::string partitions_url = root + base.rest_path() + "/partitions";

  // The remote's partition count of the base name (0: not partitioned, or nothing there).
  auto remote_partitions = [&]() -> Task<Result<int>> {
    http::HttpRequest get;
    get.url = partitions_url;
    auto r = co_await web.send(std::move(get));
    if (!r.ok()) {
      co_return Status(Errc::kUnavailable,
                       fmt::format("cluster {}: {}", cluster, r.status().to_string()));
    }
    if (r->status == 404) co_return 0;
    if (r->status != 200) co_return answer_error(cluster, "reading the partitions", *r);
    auto j = nlohmann::json::parse(r->body, nullptr, false);
    if (!j.is_object() || !j.contains("partitions") || !j["partitions"].is_number_integer()) {
      co_return Status(Errc::kCorruption,
                       fmt::format("cluster {}: the partitions answer is not {{\"partitions\": "
                                   "N}}: {}",
                                   cluster, r->body.substr(0, 200)));
    }
    co_return j["partitions"].get<int>();
  };
  // PUT `url` with `body`; 409 (it exists already) is as good as 204.
  auto create = [&](std::string url, std::string body, const char* what) -> Task<Status> {
    http::HttpRequest put;
    put.method = "PUT";
    put.url = std::move(url);
    put.body = std::move(body);
    auto r = co_await web.send(std::move(put));
    if (!r.ok()) {
      co_return Status(Errc::kUnavailable,
                       fmt::format("cluster {}: {}", cluster, r.status().to_string()));
    }
    if (r->status / 100 == 2 || r->status == 409) co_return Status::OK();
    co_return answer_error(cluster, what, *r);
  };

  auto remote = co_await remote_partitions();
  if (!remote.ok()) co_return remote.status();
  if (*local == 0) {
    if (*remote > 0) {
      co_return Status(Errc::kInvalidArgument,
                       fmt::format("Topic type is not matched between local and remote cluster: "
                                   "{} is not partitioned here and has {} partitions in {}",
                                   base.to_string(), *remote, cluster));
    }
    std::string topic_url = root + topic.rest_path();
    std::string empty;
    co_return co_await create(std::move(topic_url), std::move(empty), "creating the topic");
  }
  if (*remote == 0) {
    std::string count = fmt::format("{}", *local);
    Status made = co_await create(partitions_url, std::move(count),
                                  "creating the partitioned topic");
    if (!made.ok()) co_return made;
    remote = co_await remote_partitions();
    if (!remote.ok()) co_return remote.status();
  }
  if (grow && *remote < *local) {
    // The topic grew here (update-partitioned-topic): the remote grows too, as Pulsar forwards
    // partition updates of replicated topics. Never shrunk: a remote with more is a mismatch.
    http::HttpRequest grow;
    grow.method = "POST";
    grow.url = partitions_url + "?updateLocalTopicOnly=true";
    grow.body = fmt::format("{}", *local);
    auto r = co_await web.send(std::move(grow));
    if (!r.ok()) {
      co_return Status(Errc::kUnavailable,
                       fmt::format("cluster {}: {}", cluster, r.status().to_string()));
    }
    if (r->status / 100 != 2 && r->status != 409) {
      co_return answer_error(cluster, "adding partitions", *r);
    }
    remote = co_await remote_partitions();
    if (!remote.ok()) co_return remote.status();
  }
  if (*remote != *local) {
    co_return Status(Errc::kInvalidArgument,
                     fmt::format("The number of topic partitions is inconsistent between local "
                                 "and remote clusters: {} has {} here and {} in {}",
                                 base.to_string(), *local, *remote, cluster));
  }
  co_return Status::OK();
}

}  // namespace magnetar::broker
