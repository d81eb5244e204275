// /admin/v2/bookies: the bookies of this cluster and their racks, as Pulsar's Bookies resource
// answers them. The racks are the /bookies document of the cluster's (local) metadata store
// (ledger/rack_config.h), which every broker's ledger placement follows.
//
//   GET    /admin/v2/bookies/all                     {"bookies":[{"bookieId":"host:port"}]}
//   GET    /admin/v2/bookies/racks-info              {group: {bookie: {rack, hostname}}}
//   GET    /admin/v2/bookies/racks-info/{bookie}     {rack, hostname}; 404 when not placed
//   DELETE /admin/v2/bookies/racks-info/{bookie}     204; 404 when not placed
//   POST   /admin/v2/bookies/racks-info/{bookie}?group=G  body {rack, hostname}: 204; 412
//          without group, with a rack of the wrong shape for this broker's policy, a region
//          outside reppRegionsToWrite, or a field past the limits (control characters, size)
//
// Every route needs a super user, as in Pulsar. Changes are compare-and-set
// read-modify-writes of the one document, so concurrent calls never lose each other's.

#include <fmt/format.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "broker/admin/admin_routes.h"
#include "broker/admin/policies_json.h"
#include "broker/service/bookie_placement.h"
#include "common/logging.h"
#include "ledger/bookkeeper.h"
#include "ledger/rack_config.h"

namespace magnetar::broker::admin {

namespace {

using http::PathParams;
using http::Permission;
using http::Request;
using http::Response;

constexpr std::string_view kGroupMissing = "Bookie 'group' parameters is missing";
// Pulsar's answer to a rack whose shape the placement policy cannot read.
constexpr std::string_view kRackShape =
    "Bookie 'rack' parameter is invalid, When `RackawareEnsemblePlacementPolicy` is enabled, the "
    "rack name is not allowed to contain slash (`/`) except for the beginning and end of the "
    "rack name string. When `RegionawareEnsemblePlacementPolicy` is enabled, the rack name can "
    "only contain one slash (`/`) except for the beginning and end of the rack name string.";

std::string bookie_not_placed(std::string_view bookie) {
  return fmt::format("Bookie rack placement configuration not found: {}", bookie);
}

// Fields in Pulsar's order (BookieInfo: rack, then hostname), as its JSON has them.
using BookiesJson = nlohmann::ordered_json;

BookiesJson bookie_info_json(const ledger::BookieRackInfo& info) {
  BookiesJson out = BookiesJson::object();
  out["rack"] = info.rack;
  if (info.hostname) out["hostname"] = *info.hostname;
  return out;
}

Response ok_bookies_json(const BookiesJson& j) {
  return Response::json(200, j.dump(-1, ' ', false, BookiesJson::error_handler_t::replace));
}

// A store failure, or a /bookies document that does not parse (500, saying why).
Response rack_store_error(const Status& st) {
  if (st.is(Errc::kCorruption)) return error(500, st.message());
  return store_error(st);
}

class Bookies {
 public:
  explicit Bookies(std::shared_ptr<const BrokerContext> ctx) : ctx_(std::move(ctx)) {}

  Task<Response> all_bookies();
  Task<Response> racks();
  Task<Response> bookie_rack(std::string bookie);
  Task<Response> delete_bookie_rack(std::string bookie);
  Task<Response> set_bookie_rack(std::string bookie, const Request& req);

 private:
  metadata::MetadataStore& store() const { return *ctx_->services.stores.cluster; }
  const BrokerConfig& config() const { return ctx_->services.config; }
  // 412 when `rack` does not suit this broker's placement; nullopt when it does.
  std::optional<Response> check_rack(const std::string& rack) const;

  const std::shared_ptr<const BrokerContext> ctx_;
  log::Logger log_{"admin"};
};

Task<Response> Bookies::all_bookies() {
  auto bookies = co_await ledger::registered_bookies(store());
  if (!bookies.ok()) co_return store_error(bookies.status());
  Json list = Json::array();
  for (const std::string& id : *bookies) list.push_back(Json{{"bookieId", id}});
  co_return ok_json(Json{{"bookies", std::move(list)}});
}

Task<Response> Bookies::racks() {
  auto stored = co_await ledger::load_rack_configuration(store());
  if (!stored.ok()) co_return rack_store_error(stored.status());
  BookiesJson out = BookiesJson::object();
  for (const auto& [group, bookies] : stored->config.groups()) {
    BookiesJson members = BookiesJson::object();
    for (const auto& [bookie, info] : bookies) members[bookie] = bookie_info_json(info);
    out[group] = std::move(members);
  }
  co_return ok_bookies_json(out);
}

Task<Response> Bookies::bookie_rack(std::string bookie) {
  auto stored = co_await ledger::load_rack_configuration(store());
  if (!stored.ok()) co_return rack_store_error(stored.status());
  const ledger::BookieRackInfo* info = stored->config.find(bookie);
  if (info == nullptr) co_return error(404, bookie_not_placed(bookie));
  co_return ok_bookies_json(bookie_info_json(*info));
}

Task<Response> Bookies::delete_bookie_rack(std::string bookie) {
  bool found = true;
  auto updated =
      co_await ledger::update_rack_configuration(store(), [&](ledger::RackConfiguration& racks) {
        found = racks.remove(bookie);
        return found ? Status::OK() : Status(Errc::kNotFound, bookie_not_placed(bookie));
      });
  if (!found) co_return error(404, bookie_not_placed(bookie));
  if (!updated.ok()) co_return rack_store_error(updated.status());
  log_.info("removed bookie {} from the rack configuration", bookie);
  co_return no_content();
}

std::optional<Response> Bookies::check_rack(const std::string& rack) const {
  if (!rack_shape_fits(config(), rack)) return error(412, kRackShape);
  if (!config().bookkeeper_client_regionaware_policy_enabled) return std::nullopt;
  auto listed = regions_to_write(config().repp_regions_to_write);
  if (!listed.ok() || listed->empty()) return std::nullopt;
  ledger::BookieTopology probe;
  probe.location["bookie"] = ledger::normalize_rack(rack);
  const std::string region = probe.region_of("bookie");
  if (listed->count(region) != 0) return std::nullopt;
  return error(412, fmt::format("Bookie 'rack' parameter is invalid: region '{}' is not one of "
                                "reppRegionsToWrite ({}) of this broker",
                                region, config().repp_regions_to_write));
}

Task<Response> Bookies::set_bookie_rack(std::string bookie, const Request& req) {
  auto group = req.query.find("group");
  if (group == req.query.end() || group->second.empty()) co_return error(412, kGroupMissing);
  auto body = parse_body(req);
  if (auto* r = std::get_if<Response>(&body)) co_return std::move(*r);
  const Json& j = std::get<0>(body);
  if (!j.is_object()) {
    co_return error(400, R"(The body must be a bookie's rack information: {"rack": ..., )"
                         R"("hostname": ...})");
  }
  ledger::BookieRackInfo info;
  for (const char* field : {"rack", "hostname"}) {
    auto it = j.find(field);
    if (it == j.end() || it->is_null()) continue;
    if (!it->is_string()) co_return error(400, fmt::format("'{}' must be a string", field));
    if (std::string_view(field) == "rack") {
      info.rack = it->get<std::string>();
    } else {
      info.hostname = it->get<std::string>();
    }
  }
  if (auto refused = check_rack(info.rack)) co_return std::move(*refused);
  Status valid = ledger::validate_rack_entry(group->second, bookie, info);
  if (!valid.ok()) {
    co_return error(412, fmt::format("Bookie rack placement is invalid: {}", valid.message()));
  }
  const std::string group_name = group->second;
  auto updated = co_await ledger::update_rack_configuration(
      store(),
      [&](ledger::RackConfiguration& racks) { return racks.update(group_name, bookie, info); });
  if (!updated.ok()) {
    if (updated.status().is(Errc::kInvalidArgument)) {
      co_return error(
          412, fmt::format("Bookie rack placement is invalid: {}", updated.status().message()));
    }
    co_return rack_store_error(updated.status());
  }
  log_.info("bookie {} placed on rack '{}' in group {}", bookie, ledger::normalize_rack(info.rack),
            group_name);
  co_return no_content();
}

}  // namespace

void add_bookies(http::Router& router, std::shared_ptr<const BrokerContext> ctx) {
  auto self = std::make_shared<Bookies>(std::move(ctx));
  const Permission super = Permission::super_user();
  const std::string one = "/admin/v2/bookies/racks-info/{bookie}";
  // The request and its parameters outlive each returned task (the router awaits it).
  router.add("GET", "/admin/v2/bookies/all", super,
             [self](const Request&, const PathParams&) { return self->all_bookies(); });
  router.add("GET", "/admin/v2/bookies/racks-info", super,
             [self](const Request&, const PathParams&) { return self->racks(); });
  router.add("GET", one, super, [self](const Request&, const PathParams& p) {
    return self->bookie_rack(p.at("bookie"));
  });
  router.add("DELETE", one, super, [self](const Request&, const PathParams& p) {
    return self->delete_bookie_rack(p.at("bookie"));
  });
  router.add("POST", one, super, [self](const Request& req, const PathParams& p) {
    return self->set_bookie_rack(p.at("bookie"), req);
  });
}

Prefix bookies_prefix() {
  return templates_prefix("/admin/v2/bookies/", {"GET", "POST", "DELETE"});
}

}  // namespace magnetar::broker::admin
