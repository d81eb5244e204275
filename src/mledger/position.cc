#include "mledger/position.h"

#include <fmt/format.h>

#include <bit>

namespace magnetar::mledger {

std::string Position::to_string() const {
  return fmt::format("{}:{}", ledger_id, entry_id);
}

namespace {
int64_t word_floor(int64_t entry) {
  return entry & ~int64_t{63};
}
}  // namespace

bool AckSet::insert(Position p) {
  const int64_t ledger = p.ledger_id.value();
  const int64_t entry = p.entry_id.value();
  if (entry < 0) return false;
  Bits& bits = ledgers_[ledger];
  const int64_t start = word_floor(entry);
  if (bits.words.empty()) {
    bits.base = start;
    bits.words.assign(1, 0);
  } else if (start < bits.base) {
    bits.words.insert(bits.words.begin(), static_cast<size_t>((bits.base - start) / 64), 0);
    bits.base = start;
  }
  const auto index = static_cast<size_t>((entry - bits.base) / 64);
  if (index >= bits.words.size()) bits.words.resize(index + 1, 0);
  const uint64_t mask = uint64_t{1} << (entry & 63);
  if (bits.words[index] & mask) return false;
  bits.words[index] |= mask;
  ++bits.count;
  ++size_;
  return true;
}

void AckSet::insert_range(LedgerId ledger, int64_t first, int64_t last) {
  for (int64_t e = std::max<int64_t>(first, 0); e <= last; ++e) {
    insert({ledger, EntryId{e}});
  }
}

bool AckSet::contains(Position p) const {
  const int64_t ledger = p.ledger_id.value();
  const int64_t entry = p.entry_id.value();
  auto it = ledgers_.find(ledger);
  if (it == ledgers_.end() || entry < it->second.base) return false;
  const auto index = static_cast<size_t>((entry - it->second.base) / 64);
  if (index >= it->second.words.size()) return false;
  return (it->second.words[index] >> (entry & 63)) & 1;
}

void AckSet::trim(Bits& bits) {
  size_t lead = 0;
  while (lead < bits.words.size() && bits.words[lead] == 0) ++lead;
  if (lead > 0) {
    bits.words.erase(bits.words.begin(), bits.words.begin() + static_cast<ptrdiff_t>(lead));
    bits.base += static_cast<int64_t>(lead) * 64;
  }
  while (!bits.words.empty() && bits.words.back() == 0) bits.words.pop_back();
  if (bits.words.capacity() > 2 * bits.words.size() + 16) bits.words.shrink_to_fit();
}

void AckSet::remove_through(Position p) {
  const int64_t ledger = p.ledger_id.value();
  const int64_t entry = p.entry_id.value();
  while (!ledgers_.empty() && ledgers_.begin()->first < ledger) {
    size_ -= ledgers_.begin()->second.count;
    ledgers_.erase(ledgers_.begin());
  }
  auto it = ledgers_.find(ledger);
  if (it == ledgers_.end() || entry < 0) return;
  Bits& bits = it->second;
  for (size_t i = 0; i < bits.words.size(); ++i) {
    const int64_t lo = bits.base + static_cast<int64_t>(i) * 64;
    if (lo > entry) break;
    uint64_t clear = lo + 63 <= entry ? ~uint64_t{0} : ((uint64_t{1} << (entry - lo + 1)) - 1);
    const int removed = std::popcount(bits.words[i] & clear);
    bits.words[i] &= ~clear;
    bits.count -= removed;
    size_ -= removed;
  }
  if (bits.count == 0) {
    ledgers_.erase(it);
  } else {
    trim(bits);
  }
}

int64_t AckSet::count(LedgerId ledger, int64_t first, int64_t last) const {
  auto it = ledgers_.find(ledger.value());
  if (it == ledgers_.end() || last < first) return 0;
  const Bits& bits = it->second;
  if (first <= bits.base && last >= bits.base + static_cast<int64_t>(bits.words.size()) * 64) {
    return bits.count;
  }
  int64_t n = 0;
  for (size_t i = 0; i < bits.words.size(); ++i) {
    const int64_t lo = bits.base + static_cast<int64_t>(i) * 64, hi = lo + 63;
    if (hi < first) continue;
    if (lo > last) break;
    uint64_t w = bits.words[i];
    if (first > lo) w &= ~((uint64_t{1} << (first - lo)) - 1);
    if (last < hi) w &= (uint64_t{1} << (last - lo + 1)) - 1;
    n += std::popcount(w);
  }
  return n;
}

int64_t AckSet::first_absent(LedgerId ledger, int64_t entry) const {
  auto it = ledgers_.find(ledger.value());
  if (it == ledgers_.end() || entry < it->second.base) return entry;
  const Bits& bits = it->second;
  auto index = static_cast<size_t>((entry - bits.base) / 64);
  if (index >= bits.words.size()) return entry;
  // Ones below `entry` in its word count as set, so the scan starts at `entry`.
  uint64_t w = ~bits.words[index] & ~((uint64_t{1} << (entry & 63)) - 1);
  while (true) {
    if (w != 0) return bits.base + static_cast<int64_t>(index) * 64 + std::countr_zero(w);
    if (++index >= bits.words.size()) return bits.base + static_cast<int64_t>(index) * 64;
    w = ~bits.words[index];
  }
}

void AckSet::for_each_range(const std::function<bool(const Range&)>& fn) const {
  for (const auto& [ledger_id, bits] : ledgers_) {
    int64_t start = -1;
    for (size_t i = 0; i < bits.words.size(); ++i) {
      uint64_t w = bits.words[i];
      const int64_t lo = bits.base + static_cast<int64_t>(i) * 64;
      if (start < 0 && w == 0) continue;
      if (start >= 0 && w == ~uint64_t{0}) continue;
      for (int b = 0; b < 64; ++b) {
        const bool set = (w >> b) & 1;
        if (set && start < 0) {
          start = lo + b;
        } else if (!set && start >= 0) {
          if (!fn(Range{LedgerId{ledger_id}, start, lo + b - 1})) return;
          start = -1;
        }
      }
    }
    if (start >= 0) {
      const int64_t end = bits.base + static_cast<int64_t>(bits.words.size()) * 64 - 1;
      if (!fn(Range{LedgerId{ledger_id}, start, end})) return;
    }
  }
}

int64_t AckSet::range_count() const {
  int64_t n = 0;
  for_each_range([&](const Range&) {
    ++n;
    return true;
  });
  return n;
}

std::vector<AckSet::Range> AckSet::ranges(size_t max) const {
  std::vector<Range> out;
  if (max == 0) return out;
  for_each_range([&](const Range& r) {
    out.push_back(r);
    return out.size() < max;
  });
  return out;
}

size_t AckSet::memory_bytes() const {
  size_t n = 0;
  for (const auto& [id, bits] : ledgers_) n += 64 + bits.words.capacity() * sizeof(uint64_t);
  return n;
}

}  // namespace magnetar::mledger
