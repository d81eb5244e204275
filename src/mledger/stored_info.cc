#include "mledger/stored_info.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "common/units.h"
#include "mledger/errors.h"
#include "mledger/managed_ledger.h"
#include "proto/managed_ledger.pb.h"

namespace magnetar::mledger {

namespace {

namespace wire = magnetar::mledger_wire;
using Json = nlohmann::json;

Json position_json(int64_t ledger_id, int64_t entry_id) {
  return {{"ledgerId", ledger_id}, {"entryId", entry_id}};
}

// What every node's entry starts with: its version and dates.
Json node_json(const metadata::Stat& stat) {
  return {{"version", stat.version},
          {"creationDate", format_iso_time(stat.creation_time_ms, true)},
          {"modificationDate", format_iso_time(stat.modification_time_ms, true)}};
}

}  // namespace

Task<Result<Json>> stored_ledger_info(metadata::MetadataStore& store, std::string name) {
  const std::string path = managed_ledger_path(name);
  auto got = co_await store.get(path);
  if (!got.ok()) co_return got.status();
  if (!got->has_value()) {
    co_return Status(Errc::kNotFound, fmt::format("managed ledger {} does not exist", name));
  }
  wire::ManagedLedgerInfo info;
  if (!info.ParseFromString((*got)->value)) {
    co_return Status(Error::kCorruptMetadata, fmt::format("managed ledger {}: node does not parse", name));
  }
  Json out = node_json((*got)->stat);
  Json ledgers = Json::array();
  for (const auto& li : info.ledgerinfo()) {
    ledgers.push_back({{"ledgerId", li.ledgerid()},
                       {"entries", li.entries()},
                       {"size", li.size()},
                       {"timestamp", li.timestamp()},
                       {"isOffloaded", false}});
  }
  out["ledgers"] = std::move(ledgers);
  if (info.has_terminatedposition()) {
    out["terminatedPosition"] = position_json(info.terminatedposition().ledgerid(),
                                              info.terminatedposition().entryid());
  }
  auto names = co_await store.children(path);
  if (!names.ok()) co_return names.status();
  Json cursors = Json::object();
  for (const std::string& cursor : *names) {
    auto node = co_await store.get(metadata::join_path(path, cursor));
    if (!node.ok()) co_return node.status();
    if (!node->has_value()) continue;  // deleted meanwhile
    wire::ManagedCursorInfo ci;
    if (!ci.ParseFromString((*node)->value)) {
      co_return Status(Error::kCorruptMetadata,
                       fmt::format("cursor {} of {}: node does not parse", cursor, name));
    }
    Json c = node_json((*node)->stat);
    c["cursorsLedgerId"] = ci.cursorsledgerid();
    c["markDelete"] = position_json(ci.markdeleteledgerid(), ci.markdeleteentryid());
    Json ranges = Json::array();
    for (const auto& r : ci.individualdeletedmessages()) {
      ranges.push_back(
          {{"from", position_json(r.lowerendpoint().ledgerid(), r.lowerendpoint().entryid())},
           {"to", position_json(r.upperendpoint().ledgerid(), r.upperendpoint().entryid())}});
    }
    c["individualDeletedMessages"] = std::move(ranges);
    Json properties = Json::object();
    for (const auto& p : ci.properties()) properties[p.name()] = p.value();
    c["properties"] = std::move(properties);
    cursors[cursor] = std::move(c);
  }
  out["cursors"] = std::move(cursors);
  if (info.properties_size() > 0) {
    Json properties = Json::object();
    for (const auto& p : info.properties()) properties[p.key()] = p.value();
    out["properties"] = std::move(properties);
  }
  co_return out;
}

Task<Result<bool>> create_stored_ledger(metadata::MetadataStore& store, std::string name) {
  metadata::PutOptions create;
  create.expected_version = -1;
  std::string empty;  // an empty ManagedLedgerInfo
  auto made = co_await store.put_recursive(managed_ledger_path(name), std::move(empty), create);
  if (made.ok()) co_return true;
  if (made.status().is(Errc::kBadVersion)) co_return false;  // it exists
  co_return made.status();
}

}  // namespace magnetar::mledger
