#pragma once
// Where the bookies are: Pulsar's BookiesRackConfiguration, the JSON document at /bookies in
// the cluster's (local) metadata store. Operators write it through the admin REST API
// (/admin/v2/bookies/racks-info); every ledger client reads it and follows its changes
// (topology_watcher.h) to place ensembles by rack and region (placement.h).
//
// Grammar of the node's value (Pulsar writes and reads the same):
//
//   document := { group* }                          groups sorted by name
//   group    := "<group>" : { bookie* }             e.g. "default"; never empty
//   bookie   := "<bookieId>" : { "rack" : "<location>" [, "hostname" : "<host>"] }
//   bookieId := host:port, as registered under /ledgers/available
//   location := "/rack" | "/region/rack"            "" or "/": the default rack
//
// A bookie appears in at most one group. Limits, checked on parse and on update: names and
// values up to kMaxRackFieldLength bytes, no control characters, bookie ids and groups
// non-empty, bookie ids without '/', at most kMaxRackBookies bookies. Racks are normalized: a
// missing leading '/' is added and trailing ones dropped ("rack1" -> "/rack1", "/eu/r1/" ->
// "/eu/r1"), as Pulsar's rack mapping reads them; deeper paths than /region/rack are refused.

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/asio.h"
#include "common/status.h"
#include "ledger/placement.h"
#include "metadata/metadata_store.h"

namespace magnetar::ledger {

inline constexpr std::string_view kBookiesRackPath = "/bookies";
inline constexpr std::string_view kDefaultBookieGroup = "default";
inline constexpr size_t kMaxRackFieldLength = 256;
inline constexpr size_t kMaxRackBookies = 10000;

// Pulsar's BookieInfo.
struct BookieRackInfo {
  std::string rack;                     // normalized location; "" when the writer gave none
  std::optional<std::string> hostname;  // absent when the writer gave none

  bool operator==(const BookieRackInfo&) const = default;
};

// "rack1" -> "/rack1", "/eu/r1/" -> "/eu/r1", "/" and "" unchanged. No other check.
std::string normalize_rack(std::string_view rack);

class RackConfiguration {
 public:
  using Group = std::map<std::string, BookieRackInfo>;  // bookie id -> info

  // Parses a /bookies value ("" or whitespace: empty). Errors: Errc::kInvalidArgument naming
  // the group or bookie whose entry breaks the grammar or the limits above.
  static Result<RackConfiguration> parse(std::string_view json);
  // The document, groups and bookies sorted by name, "hostname" omitted when absent.
  std::string serialize() const;

  const std::map<std::string, Group>& groups() const { return groups_; }
  bool empty() const { return groups_.empty(); }
  size_t bookie_count() const;
  // The bookie's info in whichever group holds it, or nullptr.
  const BookieRackInfo* find(std::string_view bookie) const;
  // Removes the bookie from its group (and the group once empty); false when absent.
  bool remove(std::string_view bookie);
  // Puts the bookie into `group` with `info` (rack normalized), taking it out of any other
  // group first. Errors: Errc::kInvalidArgument (limits, grammar) naming the field, the
  // configuration unchanged.
  Status update(std::string group, std::string bookie, BookieRackInfo info);

  // Every bookie's location, for the placement policies.
  BookieTopology topology() const;

 private:
  std::map<std::string, Group> groups_;
};

// Checks one entry as update() does (a REST handler's 412 before any store access).
Status validate_rack_entry(std::string_view group, std::string_view bookie,
                           const BookieRackInfo& info);

// The /bookies document and the version it was read at (nullopt: no node).
struct StoredRackConfiguration {
  RackConfiguration config;
  std::optional<int64_t> version;
};

// Reads /bookies. Errors: store errors; Errc::kCorruption when the stored value does not parse
// (the message says why). Lifetime: `store` outlives the returned task.
Task<Result<StoredRackConfiguration>> load_rack_configuration(metadata::MetadataStore& store);

// Read-modify-write of /bookies with compare-and-set: reads the document, applies `mutate`,
// writes it back at the version read (creating the node when there was none), and starts
// over when another writer got in between (up to a bounded number of rounds). `mutate` may
// refuse with an error, which is returned with nothing written; it may run more than once.
// Errors: mutate's, store errors, kCorruption as load_rack_configuration, kUnavailable after
// too many lost races. Returns the configuration written.
Task<Result<RackConfiguration>> update_rack_configuration(
    metadata::MetadataStore& store, std::function<Status(RackConfiguration&)> mutate);

}  // namespace magnetar::ledger
