#pragma once
// What geo-replication puts on the wire, as Pulsar names it: the replicators' producer names,
// the message-metadata fields they set and read, and the source-position property by which
// a target cluster recognises a message it already applied.
//
//   producer name   "pulsar.repl.<local>--><remote>"   (older replicators: "pulsar.repl.<local>")
//   replicated_from  the source cluster, set only by a replicator; such a message is never
//                    replicated again (no loops in a full mesh)
//   replicate_to     per-message cluster list; ["__local__"] (disableReplication) matches no
//                    cluster, so the message stays where it was published
//   __MSG_PROP_REPL_SOURCE_POSITION = "<ledger>:<entry>"  the entry's position in the source
//                    topic (Pulsar's replication dedup V2 property)

#include <optional>
#include <string>
#include <string_view>

#include "common/ids.h"
#include "proto/pulsar_api.pb.h"

namespace magnetar::protocol {

inline constexpr std::string_view kReplicatorPrefix = "pulsar.repl.";
inline constexpr std::string_view kLocalOnlyCluster = "__local__";
inline constexpr std::string_view kSourcePositionProperty = "__MSG_PROP_REPL_SOURCE_POSITION";

// "pulsar.repl.<local>--><remote>".
std::string replicator_producer_name(std::string_view local, std::string_view remote);
// The source cluster of a replicator's producer name (the text between the prefix and
// "-->", or all of it after the prefix for the older form); nullopt for any other name.
std::optional<std::string> replicator_source(std::string_view producer_name);

struct SourcePosition {
  LedgerId ledger;
  EntryId entry;
  auto operator<=>(const SourcePosition&) const = default;
};
// The source position property, if present and well formed ("<ledger>:<entry>", both >= 0).
std::optional<SourcePosition> source_position(const wire::MessageMetadata& metadata);
// Sets (replacing) the source position property.
void set_source_position(wire::MessageMetadata* metadata, SourcePosition position);

// Whether a message published with `metadata` goes to cluster `remote`: never when it came
// from another cluster (replicated_from set); else when it names no clusters, or names
// `remote` among them.
bool replicates_to(const wire::MessageMetadata& metadata, std::string_view remote);

}  // namespace magnetar::protocol
