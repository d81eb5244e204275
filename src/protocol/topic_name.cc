#include "protocol/topic_name.h"

#include <cstdint>
#include <limits>
#include <utility>

#include "protocol/errors.h"

namespace magnetar::protocol {
namespace {

constexpr std::string_view kSchemeSeparator = "://";
constexpr std::string_view kPersistent = "persistent";
constexpr std::string_view kNonPersistent = "non-persistent";
// Error messages quote at most this much of a name.
constexpr size_t kMaxQuoted = 256;

// The input in single quotes, with bytes outside printable ASCII as \xNN and long names cut.
std::string quote(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < kMaxQuoted; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  out += s.size() > kMaxQuoted ? "'..." : "'";
  return out;
}

Status invalid(std::string_view name, const std::string& why) {
  return Status(Error::kInvalidTopicName, "invalid topic name " + quote(name) + ": " + why);
}

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i];
    char y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

// Pulsar's NamedEntity pattern ^[-=:.\w]*$ with Java's ASCII-only \w.
bool is_entity_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '=' || c == ':' || c == '.';
}

// Why `value` is not a valid tenant, cluster or namespace; empty when it is.
std::string entity_problem(std::string_view what, std::string_view value) {
  if (value.empty()) return "the " + std::string(what) + " is empty";
  for (char c : value) {
    if (!is_entity_char(c)) {
      return "the " + std::string(what) + " " + quote(value) + " contains " +
             quote(std::string_view(&c, 1)) + "; only letters, digits and _ - = : . are allowed";
    }
  }
  return {};
}

// Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF.
bool is_valid_utf8(std::string_view s) {
  static constexpr uint32_t kMinForLength[] = {0, 0x80, 0x800, 0x10000};
  size_t i = 0;
  while (i < s.size()) {
    const auto lead = static_cast<unsigned char>(s[i]);
    if (lead < 0x80) {
      ++i;
      continue;
    }
    size_t extra;
    uint32_t cp;
    if ((lead & 0xE0) == 0xC0) {
      extra = 1;
      cp = lead & 0x1F;
    } else if ((lead & 0xF0) == 0xE0) {
      extra = 2;
      cp = lead & 0x0F;
    } else if ((lead & 0xF8) == 0xF0) {
      extra = 3;
      cp = lead & 0x07;
    } else {
      return false;
    }
    if (s.size() - i - 1 < extra) return false;
    for (size_t k = 1; k <= extra; ++k) {
      const auto cont = static_cast<unsigned char>(s[i + k]);
      if ((cont & 0xC0) != 0x80) return false;
      cp = cp << 6 | (cont & 0x3F);
    }
    if (cp < kMinForLength[extra] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += extra + 1;
  }
  return true;
}

// The N of a local name ending in "-partition-N", or -1. Like Pulsar, N counts only when it
// reads back unchanged as an int32: "-partition-01", "-partition-+1" and
// "-partition-2147483648" are not partitions.
int partition_index_of(std::string_view local) {
  const size_t pos = local.rfind(TopicName::kPartitionSuffix);
  if (pos == std::string_view::npos) return -1;
  const std::string_view digits = local.substr(pos + TopicName::kPartitionSuffix.size());
  if (digits.empty() || digits.size() > 10) return -1;
  if (digits.size() > 1 && digits[0] == '0') return -1;
  int64_t value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return -1;
    value = value * 10 + (c - '0');
  }
  if (value > std::numeric_limits<int32_t>::max()) return -1;
  return static_cast<int>(value);
}

}  // namespace

std::string_view to_string(TopicDomain domain) noexcept {
  return domain == TopicDomain::kPersistent ? kPersistent : kNonPersistent;
}

TopicName::TopicName(TopicDomain domain, std::string tenant, std::string cluster, std::string ns,
                     std::string local)
    : domain_(domain),
      tenant_(std::move(tenant)),
      cluster_(std::move(cluster)),
      namespace_(std::move(ns)),
      local_(std::move(local)) {
  full_.reserve(20 + tenant_.size() + cluster_.size() + namespace_.size() + local_.size());
  full_.append(protocol::to_string(domain_)).append(kSchemeSeparator).append(namespace_name());
  full_.append("/").append(local_);
  partition_index_ = partition_index_of(local_);
}

Result<TopicName> TopicName::parse(std::string_view name) {
  if (name.empty()) return invalid(name, "the name is empty");

  TopicDomain domain = TopicDomain::kPersistent;
  std::string_view tenant, cluster, ns, local;
  bool legacy = false;
  const size_t scheme_end = name.find(kSchemeSeparator);
  if (scheme_end == std::string_view::npos) {
    // Short forms: "<topic>" or "<tenant>/<namespace>/<topic>", both persistent.
    const size_t first = name.find('/');
    if (first == std::string_view::npos) {
      tenant = "public";
      ns = "default";
      local = name;
    } else {
      const size_t second = name.find('/', first + 1);
      if (second == std::string_view::npos ||
          name.find('/', second + 1) != std::string_view::npos) {
        return invalid(name,
                       "a name without a domain must be '<topic>' or "
                       "'<tenant>/<namespace>/<topic>'");
      }
      tenant = name.substr(0, first);
      ns = name.substr(first + 1, second - first - 1);
      local = name.substr(second + 1);
    }
  } else {
    const std::string_view scheme = name.substr(0, scheme_end);
    if (equals_ignoring_case(scheme, kPersistent)) {
      domain = TopicDomain::kPersistent;
    } else if (equals_ignoring_case(scheme, kNonPersistent)) {
      domain = TopicDomain::kNonPersistent;
    } else {
      return invalid(name,
                     "unknown domain " + quote(scheme) + "; expected persistent or non-persistent");
    }
    // "<tenant>/<namespace>/<topic>" or "<tenant>/<cluster>/<namespace>/<topic>"; only the
    // first three slashes separate parts.
    const std::string_view rest = name.substr(scheme_end + kSchemeSeparator.size());
    const size_t s1 = rest.find('/');
    const size_t s2 = s1 == std::string_view::npos ? s1 : rest.find('/', s1 + 1);
    if (s2 == std::string_view::npos) {
      return invalid(name, "expected <domain>://<tenant>/<namespace>/<topic>");
    }
    const size_t s3 = rest.find('/', s2 + 1);
    tenant = rest.substr(0, s1);
    if (s3 == std::string_view::npos) {
      ns = rest.substr(s1 + 1, s2 - s1 - 1);
      local = rest.substr(s2 + 1);
    } else {
      cluster = rest.substr(s1 + 1, s2 - s1 - 1);
      ns = rest.substr(s2 + 1, s3 - s2 - 1);
      local = rest.substr(s3 + 1);
      legacy = true;
    }
  }

  std::string problem = entity_problem("tenant", tenant);
  if (problem.empty() && legacy) problem = entity_problem("cluster", cluster);
  if (problem.empty()) problem = entity_problem("namespace", ns);
  if (!problem.empty()) return invalid(name, problem);
  if (local.empty()) return invalid(name, "the topic part is empty");
  if (!is_valid_utf8(local)) return invalid(name, "the topic part is not valid UTF-8");
  // Pulsar stores such names but its admin paths and tools cannot round-trip them (its REST
  // decoding reads '+' as a space): refused here, on every path, with a reason.
  for (unsigned char c : local) {
    if (c <= 0x20 || c == 0x7f) {
      return invalid(name, "the topic part contains a space or a control character");
    }
  }
  if (partition_index_of(local) >= 0 && local.rfind(kPartitionSuffix) == 0) {
    return invalid(name, "it names a partition of a topic whose name is empty");
  }
  return TopicName(domain, std::string(tenant), std::string(cluster), std::string(ns),
                   std::string(local));
}

std::string TopicName::namespace_name() const {
  std::string out = tenant_;
  if (!cluster_.empty()) out.append("/").append(cluster_);
  out.append("/").append(namespace_);
  return out;
}

TopicName TopicName::partition(int index) const {
  MAGNETAR_ASSERT(index >= 0, "partition index must be non-negative");
  if (partition_index_ == index) return *this;
  std::string local = local_;
  local.append(kPartitionSuffix).append(std::to_string(index));
  return TopicName(domain_, tenant_, cluster_, namespace_, std::move(local));
}

TopicName TopicName::partitioned_topic_name() const {
  if (!is_partition()) return *this;
  // parse() refuses a partition suffix at position 0, so the base is never empty.
  std::string base = local_.substr(0, local_.rfind(kPartitionSuffix));
  return TopicName(domain_, tenant_, cluster_, namespace_, std::move(base));
}

std::string TopicName::encoded_local_name() const {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(local_.size() * 3);
  for (char ch : local_) {
    const auto c = static_cast<unsigned char>(ch);
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '-' || c == '*' || c == '_';
    if (keep) {
      out += static_cast<char>(c);
    } else if (c == ' ') {
      out += '+';
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  return out;
}

std::string TopicName::persistence_name() const {
  std::string out = namespace_name();
  out.append("/").append(protocol::to_string(domain_)).append("/").append(encoded_local_name());
  return out;
}

std::string TopicName::rest_path() const {
  std::string out(protocol::to_string(domain_));
  out.append("/").append(namespace_name()).append("/").append(encoded_local_name());
  return out;
}

std::optional<std::string> decode_local_name(std::string_view encoded) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(encoded.size());
  for (size_t i = 0; i < encoded.size(); ++i) {
    const char c = encoded[i];
    if (c == '+') {
      out += ' ';
    } else if (c != '%') {
      out += c;
    } else {
      if (i + 2 >= encoded.size()) return std::nullopt;
      const int hi = hex(encoded[i + 1]), lo = hex(encoded[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    }
  }
  return out;
}

}  // namespace magnetar::protocol
