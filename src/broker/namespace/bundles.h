#pragma once
// Namespace bundles: a namespace's topics split by hash into ranges, each owned by one
// broker (../shared/reference/pulsar-internals.md §5.4).
//
//   hash(topic)  = CRC-32 (IEEE, as zlib and Guava compute it) of the full topic name
//                  ("persistent://t/ns/x-partition-3"), unsigned 32-bit
//   boundaries   = Policies.bundles.boundaries: sorted hex strings "0x%08x", first
//                  0x00000000, last 0xffffffff; or numBundles equal parts when absent
//   bundle i     = [boundaries[i], boundaries[i+1]), the last one closed at 0xffffffff
//   bundle name  = "0x%08x_0x%08x" (lower_upper); full name "<tenant>/<ns>/<lower_upper>"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace magnetar::broker {

uint32_t topic_bundle_hash(std::string_view full_topic_name);

struct BundleRange {
  uint32_t lower = 0;
  uint32_t upper = 0xffffffffu;  // exclusive, but inclusive when it is 0xffffffff

  bool contains(uint32_t hash) const {
    return hash >= lower && (hash < upper || (upper == 0xffffffffu && hash == upper));
  }
  std::string name() const;  // "0x00000000_0x40000000"
  // Parses "0xLLLLLLLL_0xUUUUUUUU" (lower < upper).
  static std::optional<BundleRange> parse(std::string_view name);
  bool operator==(const BundleRange&) const = default;
  auto operator<=>(const BundleRange&) const = default;
};

// The bundles of one namespace, from its Policies JSON text (the "bundles" member); a
// namespace without one has `default_bundles` equal bundles.
class NamespaceBundles {
 public:
  static Result<NamespaceBundles> from_policies(std::string_view policies_json,
                                                int32_t default_bundles);
  static NamespaceBundles equal(int32_t count);

  const std::vector<BundleRange>& ranges() const { return ranges_; }
  const BundleRange& bundle_of(uint32_t hash) const;
  bool has(const BundleRange& range) const;
  // The boundaries with `range` cut in two at its middle (Pulsar's range_equally_divide);
  // nullopt when the range is not a bundle here or too narrow to split.
  std::optional<std::vector<std::string>> split_boundaries(const BundleRange& range) const;
  std::vector<std::string> boundaries() const;

 private:
  std::vector<BundleRange> ranges_;
};

// "<tenant>/<ns>/<range>": the full bundle name, and where its ownership node lives in the
// cluster metadata store (/namespace/<tenant>/<ns>/<range>).
std::string bundle_full_name(std::string_view ns, const BundleRange& range);
std::string bundle_owner_path(std::string_view ns, const BundleRange& range);

}  // namespace magnetar::broker
