// /admin/v2/broker-stats: what this broker serves, as Pulsar's BrokerStats answers it.
//
//   GET /admin/v2/broker-stats/topics       {"<tenant>/<ns>": {"<bundle>": {"persistent":
//                                             {"<topic>": stats}}}} of the topics loaded here
//   GET /admin/v2/broker-stats/load-report  this broker's last load report (404 without a
//                                           load manager)
//   GET /admin/v2/broker-stats/metrics      [] (Pulsar's JMX-style metrics are not kept;
//                                           /metrics has them in Prometheus form)
//   GET /admin/v2/broker-stats/mbeans       [] (no JVM, no beans)
//   GET /admin/v2/broker-stats/allocator-stats/default the process heap as Pulsar's
//                                                      AllocatorStats (404 for other names)
//
// Every route needs a super user, as in Pulsar.

#include <fmt/format.h>
#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "broker/admin/admin_routes.h"
#include "broker/namespace/load_manager.h"
#include "broker/namespace/namespace_service.h"
#include "broker/service/topic_registry.h"

namespace magnetar::broker::admin {

namespace {

using http::PathParams;
using http::Permission;
using http::Request;
using http::Response;
using http::Action;

Task<Response> topics_stats(BrokerServices broker) {
  auto loaded = co_await broker.topics.loaded_topic_stats();
  Json out = Json::object();
  for (auto& [name, stats] : loaded) {
    auto bundle = co_await broker.namespaces.bundle_of(name);
    const std::string range = bundle.ok() ? bundle->name() : "unknown";
    out[name.namespace_name()][range]["persistent"][name.to_string()] =
        Json::parse(stats, nullptr, false);
  }
  co_return ok_json(out);
}

Task<Response> load_report(LoadManager* load) {
  if (load == nullptr) co_return error(404, "No load report: this broker runs no load manager");
  auto report = co_await load->own_report();
  if (!report.ok()) co_return broker_error(report.status());
  if (!report->has_value()) co_return error(404, "No load report yet");
  co_return Response::json(200, **report);
}

}  // namespace

Prefix broker_stats_prefix() {
  Prefix prefix;
  prefix.path = "/admin/v2/broker-stats/";
  prefix.methods = {"GET"};
  prefix.malformed = error(400, "Malformed URL");
  return prefix;
}

namespace {

// Pulsar's AllocatorStats of its default (Netty) allocator, for the allocator Magnetar has:
// the process heap (glibc malloc). Its arenas are counted; there is no direct memory apart
// from the heap, and no thread caches of Netty's kinds.
Json heap_allocator_stats() {
  const struct mallinfo2 info = mallinfo2();
  int64_t arenas = 0;
  char* xml = nullptr;
  size_t xml_size = 0;
  if (FILE* f = open_memstream(&xml, &xml_size)) {
    const bool ok = malloc_info(0, f) == 0;
    std::fclose(f);
    if (ok && xml != nullptr) {
      for (std::string_view rest(xml, xml_size); !rest.empty();) {
        const size_t at = rest.find("<heap nr=");
        if (at == std::string_view::npos) break;
        ++arenas;
        rest.remove_prefix(at + 1);
      }
    }
    std::free(xml);
  }
  return {{"numDirectArenas", 0},
          {"numHeapArenas", arenas},
          {"numThreadLocalCaches", 0},
          {"normalCacheSize", 0},
          {"smallCacheSize", 0},
          {"usedDirectMemory", 0},
          {"usedHeapMemory", static_cast<int64_t>(info.uordblks + info.hblkhd)},
          {"directArenas", Json::array()},
          {"heapArenas", Json::array()}};
}

}  // namespace

void add_broker_stats(http::Router& router, std::shared_ptr<const BrokerContext> ctx) {
  const std::string root = "/admin/v2/broker-stats";
  const Permission super = Permission::super_user();
  router.add("GET", root + "/topics", super, [ctx](const Request&, const PathParams&) {
    return topics_stats(ctx->services);
  });
  router.add("GET", root + "/load-report", super,
             [ctx](const Request&, const PathParams&) { return load_report(ctx->load); });
  for (const char* empty : {"/metrics", "/mbeans"}) {
    router.add("GET", root + empty, super,
               [](const Request&, const PathParams&) -> Task<Response> {
                 co_return ok_json(Json::array());
               });
  }
  router.add("GET", root + "/allocator-stats/{allocator}", super,
             [](const Request&, const PathParams& p) -> Task<Response> {
               if (p.at("allocator") != "default") {
                 co_return error(404, "Allocator name not found");
               }
               co_return ok_json(heap_allocator_stats());
             });
}

}  // namespace magnetar::broker::admin
