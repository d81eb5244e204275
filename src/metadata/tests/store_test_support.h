#pragma once
// Metadata store tests drive coroutines with the shared test event loop.

#include "metadata/metadata_store.h"
#include "testing/event_loop.h"

namespace magnetar::metadata::test {

using Loop = magnetar::testing::EventLoop;

}  // namespace magnetar::metadata::test
