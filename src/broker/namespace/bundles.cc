#include "broker/namespace/bundles.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

namespace magnetar::broker {

namespace {

constexpr uint64_t kHashSpace = 0x100000000ULL;

std::optional<uint32_t> parse_hex32(std::string_view s) {
  if (s.size() < 3 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) return std::nullopt;
  s.remove_prefix(2);
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
  if (ec != std::errc() || end != s.data() + s.size() || v > 0xffffffffULL) return std::nullopt;
  return static_cast<uint32_t>(v);
}

}  // namespace

uint32_t topic_bundle_hash(std::string_view full_topic_name) {
  uLong crc = crc32(0L, Z_NULL, 0);
  crc = crc32(crc, reinterpret_cast<const Bytef*>(full_topic_name.data()),
              static_cast<uInt>(full_topic_name.size()));
  return static_cast<uint32_t>(crc);
}

std::string BundleRange::name() const {
  return fmt::format("0x{:08x}_0x{:08x}", lower, upper);
}

std::optional<BundleRange> BundleRange::parse(std::string_view name) {
  const size_t cut = name.find('_');
  if (cut == std::string_view::npos) return std::nullopt;
  auto lower = parse_hex32(name.substr(0, cut));
  auto upper = parse_hex32(name.substr(cut + 1));
  if (!lower || !upper || *lower >= *upper) return std::nullopt;
  return BundleRange{*lower, *upper};
}

NamespaceBundles NamespaceBundles::equal(int32_t count) {
  const uint64_t n = static_cast<uint64_t>(std::max<int32_t>(count, 1));
  const uint64_t step = kHashSpace / n;
  NamespaceBundles out;
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t upper = i + 1 == n ? kHashSpace - 1 : (i + 1) * step;
    out.ranges_.push_back(
        BundleRange{static_cast<uint32_t>(i * step), static_cast<uint32_t>(upper)});
  }
  return out;
}

Result<NamespaceBundles> NamespaceBundles::from_policies(std::string_view policies_json,
                                                         int32_t default_bundles) {
  auto policies = nlohmann::json::parse(policies_json, nullptr, false);
  if (!policies.is_object()) return equal(default_bundles);
  auto it = policies.find("bundles");
  if (it == policies.end() || !it->is_object()) return equal(default_bundles);
  const auto& bundles = *it;
  auto boundaries = bundles.find("boundaries");
  if (boundaries != bundles.end() && boundaries->is_array() && boundaries->size() >= 2) {
    std::vector<uint32_t> points;
    for (const auto& b : *boundaries) {
      auto p = b.is_string() ? parse_hex32(b.get_ref<const std::string&>()) : std::nullopt;
      if (!p) {
        return Status(Errc::kCorruption,
                      fmt::format("bundle boundary {} is not a 0x-prefixed hex string", b.dump()));
      }
      points.push_back(*p);
    }
    std::sort(points.begin(), points.end());
    points.erase(std::unique(points.begin(), points.end()), points.end());
    if (points.size() < 2 || points.front() != 0 || points.back() != 0xffffffffu) {
      return Status(Errc::kCorruption, "bundle boundaries do not cover the whole hash range");
    }
    NamespaceBundles out;
    for (size_t i = 0; i + 1 < points.size(); ++i) {
      out.ranges_.push_back(BundleRange{points[i], points[i + 1]});
    }
    return out;
  }
  auto num = bundles.find("numBundles");
  if (num != bundles.end() && num->is_number_integer()) return equal(num->get<int32_t>());
  return equal(default_bundles);
}

const BundleRange& NamespaceBundles::bundle_of(uint32_t hash) const {
  // The first range whose upper bound is above the hash (the last one takes 0xffffffff).
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), hash,
                             [](uint32_t h, const BundleRange& r) { return h < r.upper; });
  if (it == ranges_.end()) return ranges_.back();
  return *it;
}

bool NamespaceBundles::has(const BundleRange& range) const {
  return std::find(ranges_.begin(), ranges_.end(), range) != ranges_.end();
}

std::vector<std::string> NamespaceBundles::boundaries() const {
  std::vector<std::string> out;
  for (const auto& r : ranges_) out.push_back(fmt::format("0x{:08x}", r.lower));
  out.push_back(fmt::format("0x{:08x}", ranges_.back().upper));
  return out;
}

std::optional<std::vector<std::string>> NamespaceBundles::split_boundaries(
    const BundleRange& range) const {
  if (!has(range) || range.upper - range.lower < 2) return std::nullopt;
  const uint32_t middle = range.lower + (range.upper - range.lower) / 2;
  std::vector<std::string> out = boundaries();
  out.push_back(fmt::format("0x{:08x}", middle));
  std::sort(out.begin(), out.end());
  return out;
}

std::string bundle_full_name(std::string_view ns, const BundleRange& range) {
  return fmt::format("{}/{}", ns, range.name());
}

std::string bundle_owner_path(std::string_view ns, const BundleRange& range) {
  return fmt::format("/namespace/{}/{}", ns, range.name());
}

}  // namespace magnetar::broker
