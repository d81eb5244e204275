#pragma once
// The etcd backend of MetadataStore, over etcd's v3 gRPC API (our own etcd_rpc.proto).
//
// URL: "etcd:" then one or more endpoints and an optional prefix that roots the tree, as
// zk:'s chroot does:
//
//   etcd:http://h1:2379,h2:2379          (Pulsar's form; "http://h2:2379" per entry also works)
//   etcd:https://h1:2379,h2:2379/pulsar?tlsTrustCertsFilePath=/ca.pem
//       &tlsCertificateFilePath=/client.pem&tlsKeyFilePath=/client-key.pem   (TLS; without
//       a trusted CA file, the system's roots; the client certificate is optional)
//
// One store is one session: an etcd lease of session_timeout (rounded up to whole seconds,
// raised to etcd's minimum if lower), kept alive over one stream. Ephemeral nodes are keys on
// the lease; keep-alives go eight times per TTL. When they go unanswered for half the TTL the
// store notifies kConnectionLost (kReconnected when they come back); once its last answered
// keep-alive was sent a TTL ago (less an eighth), or etcd says the lease is gone, it notifies
// kSessionLost, stops
// creating ephemerals on that lease, grants a new one as soon as etcd answers and notifies
// kSessionReestablished. A lost session is declared on the client's clock before etcd can
// have expired it (etcd counts from receiving the keep-alive), so a broker stops serving
// before another can take its bundles.
//
// Notifications come from one watch stream over every node key, from the revision the store
// opened at: every change in the tree is notified, as the local backends do. A broken stream
// is resumed from the last revision seen.
//
// Versions, CAS, parents that must exist, deletes refused on nodes with children and
// sequential suffixes are enforced in etcd transactions (one round trip each). A write whose
// answer was lost with its connection is checked by the write id in the value header before
// it is repeated, so it is applied once.
//
// gRPC's headers stay private to this backend's .cc file.

#include <memory>
#include <string>

#include "common/asio.h"
#include "common/status.h"
#include "metadata/metadata_store.h"

namespace magnetar::metadata {

// `url_rest` is what follows "etcd:". kBadUrl for an unparsable URL; kTimeout when no member
// answers within options.operation_timeout; kBackend when etcd refuses the lease.
Task<Result<std::unique_ptr<MetadataStore>>> open_etcd_store(std::string url_rest,
                                                             StoreOptions options);

}  // namespace magnetar::metadata
