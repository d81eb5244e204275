#pragma once
// The ZooKeeper backend of MetadataStore, over the C client (libzookeeper-mt, async API).
//
// One store is one ZooKeeper session (one zhandle_t with its I/O and completion threads,
// plus one "janitor" thread of ours that opens and closes handles, which block). When the
// session expires the store notifies kSessionLost, opens a new session and notifies
// kSessionReestablished once it is connected; operations issued in between fail with
// kSessionLost or kConnectionLost, or kTimeout at their deadline, and never hang.
//
// Notifications come from ZooKeeper's one-shot watches (the 3.8 C client has no persistent
// ones): get/exists/put/remove watch the node, children() watches the node's children.
// A fired watch is re-armed at once while a listener is registered, else when the next
// listener is added; after a reconnect or a new session all are re-armed. The store
// remembers every path it watches for its whole life. Changes made while the store had no
// session are not replayed: re-read after kSessionReestablished.
//
// The C client's headers stay private to this backend's .cc file.

#include <memory>
#include <string>

#include "common/asio.h"
#include "common/status.h"
#include "metadata/metadata_store.h"

namespace magnetar::metadata {

// Opens a session to ZooKeeper. `url_rest` is what follows "zk:" in a store URL:
// "host:port[,host:port...][/chroot]". With a chroot, its node (and parents) are created
// first through a short session without chroot; every path is then relative to it.
// Waits at most options.operation_timeout for the session to connect (kTimeout), kBadUrl
// for an unparsable URL, kBackend when the C client refuses the connect string.
Task<Result<std::unique_ptr<MetadataStore>>> open_zookeeper_store(std::string url_rest,
                                                                  StoreOptions options);

}  // namespace magnetar::metadata
