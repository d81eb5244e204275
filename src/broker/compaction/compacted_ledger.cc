#include "broker/compaction/compacted_ledger.h"

#include <fmt/format.h>

#include "common/endian.h"
#include "ledger/bookkeeper.h"
#include "proto/pulsar_api.pb.h"

namespace magnetar::broker::compaction {

using mledger::Entry;
using mledger::Position;

namespace {

// Probed positions remembered per ledger: a binary search over a billion entries needs 30.
constexpr size_t kMaxProbes = 4096;

}  // namespace

BufferChain encode_compacted_entry(Position original, const Buffer& entry) {
  wire::MessageIdData id;
  id.set_ledgerid(static_cast<uint64_t>(original.ledger_id.value()));
  id.set_entryid(static_cast<uint64_t>(original.entry_id.value()));
  const std::string bytes = id.SerializeAsString();
  Buffer head = Buffer::allocate(4 + bytes.size());
  store_be32(head.mutable_data(), static_cast<uint32_t>(bytes.size()));
  std::copy(bytes.begin(), bytes.end(), head.mutable_data() + 4);
  BufferChain out;
  out.append(std::move(head));
  out.append(entry);
  return out;
}

Result<Entry> decode_compacted_entry(const Buffer& data) {
  if (data.size() < 4) return Status(Errc::kCorruption, "compacted entry shorter than its header");
  const uint32_t id_size = load_be32(data.data());
  if (id_size > data.size() - 4) {
    return Status(Errc::kCorruption, fmt::format("compacted entry id of {} bytes in {} bytes",
                                                 id_size, data.size()));
  }
  wire::MessageIdData id;
  if (!id.ParseFromArray(data.data() + 4, static_cast<int>(id_size)) ||
      static_cast<int64_t>(id.ledgerid()) < 0 || static_cast<int64_t>(id.entryid()) < 0) {
    return Status(Errc::kCorruption, "compacted entry id does not parse");
  }
  Entry out;
  out.position = Position{LedgerId{static_cast<int64_t>(id.ledgerid())},
                          EntryId{static_cast<int64_t>(id.entryid())}};
  out.data = data.slice(4 + id_size, data.size() - 4 - id_size);
  return out;
}

Task<Result<std::shared_ptr<CompactedLedger>>> CompactedLedger::open(ledger::BookKeeper& bk,
                                                                     LedgerId id, Position horizon,
                                                                     std::string password) {
  auto lh = co_await bk.open(id, std::move(password), false);
  if (!lh.ok()) co_return lh.status();
  co_return std::make_shared<CompactedLedger>(*lh, horizon);
}

CompactedLedger::CompactedLedger(std::shared_ptr<ledger::LedgerHandle> handle, Position horizon)
    : handle_(std::move(handle)), horizon_(horizon) {}

LedgerId CompactedLedger::id() const { return handle_->id(); }

int64_t CompactedLedger::entries() const { return handle_->last_add_confirmed().value() + 1; }

int64_t CompactedLedger::size_bytes() const { return handle_->metadata().length; }

Task<Result<std::vector<Entry>>> CompactedLedger::read_range(int64_t first, int64_t last) {
  std::vector<Entry> out;
  if (last < first) co_return out;
  auto got = co_await handle_->read(EntryId{first}, EntryId{last});
  if (!got.ok()) co_return got.status();
  out.reserve(got->size());
  for (const auto& le : *got) {
    auto e = decode_compacted_entry(le.payload);
    if (!e.ok()) {
      co_return Status(e.status().code(), fmt::format("ledger {} entry {}: {}", id().value(),
                                                      le.entry_id.value(), e.status().message()));
    }
    if (probes_.size() < kMaxProbes) probes_[le.entry_id.value()] = e->position;
    out.push_back(std::move(*e));
  }
  co_return out;
}

Task<Result<Position>> CompactedLedger::position_at(int64_t index) {
  if (auto it = probes_.find(index); it != probes_.end()) co_return it->second;
  auto one = co_await read_range(index, index);
  if (!one.ok()) co_return one.status();
  if (one->empty()) co_return Status(Errc::kInternal, "compacted ledger read returned nothing");
  co_return one->front().position;
}

Task<Result<int64_t>> CompactedLedger::lower_bound(Position p) {
  int64_t lo = 0;
  int64_t hi = entries();
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    auto at = co_await position_at(mid);
    if (!at.ok()) co_return at.status();
    if (*at < p) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  co_return lo;
}

Task<Result<std::vector<Entry>>> CompactedLedger::read_from(Position from, int max,
                                                            int64_t& hint) {
  const int64_t n = entries();
  int64_t start = -1;
  // Reading on from where the last read ended: the entry before the hint is below `from`.
  if (hint > 0 && hint <= n) {
    auto before = co_await position_at(hint - 1);
    if (!before.ok()) co_return before.status();
    if (*before < from) start = hint;
  } else if (hint == 0) {
    start = 0;
  }
  std::vector<Entry> out;
  while (true) {
    if (start < 0) {
      auto lb = co_await lower_bound(from);
      if (!lb.ok()) co_return lb.status();
      start = *lb;
    }
    if (start >= n || max <= 0) {
      hint = start;
      co_return out;
    }
    const int64_t last = std::min(n - 1, start + max - 1);
    auto got = co_await read_range(start, last);
    if (!got.ok()) co_return got.status();
    for (auto& e : *got) {
      if (e.position >= from) out.push_back(std::move(e));
    }
    hint = last + 1;
    // The hint pointed below `from` (a seek forward): search instead of scanning.
    if (out.empty() && hint < n) {
      start = -1;
      continue;
    }
    co_return out;
  }
}

Task<Result<std::optional<Entry>>> CompactedLedger::find(Position p) {
  auto lb = co_await lower_bound(p);
  if (!lb.ok()) co_return lb.status();
  if (*lb >= entries()) co_return std::optional<Entry>();
  auto one = co_await read_range(*lb, *lb);
  if (!one.ok()) co_return one.status();
  if (one->empty() || one->front().position != p) co_return std::optional<Entry>();
  co_return std::optional<Entry>(std::move(one->front()));
}

}  // namespace magnetar::broker::compaction
