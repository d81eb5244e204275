// What the etcd backend decodes from etcd's answers: node keys back into paths (watch events,
// listings) and node values with their header. Any bytes: no crash, and a decoded path is a
// valid one whose node key is the key it came from.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "metadata/etcd_keys.h"
#include "metadata/metadata_store.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  for (const char* prefix : {"", "/pulsar"}) {
    magnetar::metadata::etcd::KeyLayout keys(prefix);
    auto path = keys.path_of(bytes);
    if (path && (!magnetar::metadata::validate_path(*path).ok() || keys.node(*path) != bytes)) {
      std::abort();
    }
  }
  auto stored = magnetar::metadata::etcd::decode_value(bytes);
  if (stored.value.size() > bytes.size()) std::abort();
  (void)magnetar::metadata::etcd::decode_time(bytes);
  return 0;
}
