#pragma once
// Ledger and entry ids as distinct types.
//
// Both are 64-bit integers on the wire and on disk, and both use -1 for "none" (no ledger
// yet; before the first entry). They travel in pairs through the bookie storage, ledger
// client and managed-ledger APIs, where a plain (int64_t, int64_t) pair swapped by mistake
// would compile and corrupt data. As two types, `add_entry(entry, ledger, ...)` does not
// compile, nor does comparing a ledger id with an entry id.
//
// Construction from an integer is explicit (`LedgerId{7}`), `value()` gives the integer back
// (for wire encoding, keys, arithmetic across a range). Entry ids also count: `next()`,
// `prev()`, adding a count, and the distance between two ids; ledger ids do not.
//
// Values are trivially copyable and formatted by fmt as their integer.

#include <compare>
#include <cstdint>
#include <functional>
#include <iosfwd>

#include <fmt/format.h>

namespace magnetar {

template <typename Tag>
class StrongId {
 public:
  constexpr StrongId() = default;  // -1: none
  constexpr explicit StrongId(int64_t value) : value_(value) {}

  constexpr int64_t value() const { return value_; }
  constexpr bool valid() const { return value_ >= 0; }
  constexpr auto operator<=>(const StrongId&) const = default;

  // Counting, for ids that count (entry ids).
  constexpr StrongId next() const
    requires Tag::kCounts
  {
    return StrongId(value_ + 1);
  }
  constexpr StrongId prev() const
    requires Tag::kCounts
  {
    return StrongId(value_ - 1);
  }
  friend constexpr StrongId operator+(StrongId id, int64_t n)
    requires Tag::kCounts
  {
    return StrongId(id.value_ + n);
  }
  friend constexpr StrongId operator-(StrongId id, int64_t n)
    requires Tag::kCounts
  {
    return StrongId(id.value_ - n);
  }
  // Number of ids from b up to a (a - b).
  friend constexpr int64_t operator-(StrongId a, StrongId b)
    requires Tag::kCounts
  {
    return a.value_ - b.value_;
  }
  StrongId& operator++()
    requires Tag::kCounts
  {
    ++value_;
    return *this;
  }

 private:
  int64_t value_ = -1;
};

struct LedgerIdTag {
  static constexpr bool kCounts = false;
};
struct EntryIdTag {
  static constexpr bool kCounts = true;
};

using LedgerId = StrongId<LedgerIdTag>;
using EntryId = StrongId<EntryIdTag>;

// As their integer (streams, and so test failure messages).
std::ostream& operator<<(std::ostream& out, LedgerId id);
std::ostream& operator<<(std::ostream& out, EntryId id);

}  // namespace magnetar

template <typename Tag>
struct std::hash<magnetar::StrongId<Tag>> {
  size_t operator()(magnetar::StrongId<Tag> id) const noexcept {
    return std::hash<int64_t>{}(id.value());
  }
};

template <typename Tag>
struct fmt::formatter<magnetar::StrongId<Tag>> : fmt::formatter<int64_t> {
  template <typename Context>
  auto format(magnetar::StrongId<Tag> id, Context& ctx) const {
    return fmt::formatter<int64_t>::format(id.value(), ctx);
  }
};
