#include "broker/compaction/compactor.h"

#include <fmt/format.h>

#include <functional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/logging.h"
#include "ledger/bookkeeper.h"
#include "protocol/batch.h"
#include "protocol/compression.h"
#include "protocol/frame.h"
#include "proto/pulsar_api.pb.h"

namespace magnetar::broker::compaction {

using mledger::Entry;
using mledger::Position;

namespace {

// The latest message of a key: its entry, its index in a batch (-1: not batched) and, for a
// chunked message, its uuid (every chunk of it is kept).
struct Latest {
  Position position;
  int32_t batch_index = -1;
  std::string uuid;
};
using LatestByKey = std::unordered_map<std::string, Latest>;

struct Parsed {
  wire::MessageMetadata metadata;
  Buffer payload;
};

std::optional<Parsed> parse(const Buffer& data) {
  auto view = protocol::parse_entry(data);
  if (!view.ok()) return std::nullopt;
  Parsed out;
  if (!out.metadata.ParseFromArray(view->metadata_bytes.data(),
                                   static_cast<int>(view->metadata_bytes.size()))) {
    return std::nullopt;
  }
  out.payload = view->payload;
  return out;
}

bool is_chunk(const wire::MessageMetadata& md) {
  return md.has_num_chunks_from_msg() && md.num_chunks_from_msg() > 1;
}

// Batches are unpacked unless encrypted (their messages cannot be read).
bool readable_batch(const wire::MessageMetadata& md) {
  return md.has_num_messages_in_batch() && md.encryption_keys_size() == 0;
}

bool has_key(const wire::SingleMessageMetadata& m) {
  return m.has_partition_key() && !m.null_partition_key();
}

// The entries compaction reads, in the topic's order: the previous compacted ledger, then
// the topic after the previous horizon up to `end`.
class Source {
 public:
  Source(std::shared_ptr<mledger::ManagedLedger> ml, std::shared_ptr<CompactedLedger> previous,
         Position from, Position end, int batch)
      : ml_(std::move(ml)), previous_(std::move(previous)), start_(from), end_(end),
        batch_(batch) {
    rewind();
  }
  void rewind() {
    next_compacted_ = 0;
    next_ = start_;
  }
  // The next entries; empty at the end.
  Task<Result<std::vector<Entry>>> next() {
    if (previous_ && next_compacted_ < previous_->entries()) {
      const int64_t last = std::min(previous_->entries() - 1, next_compacted_ + batch_ - 1);
      auto got = co_await previous_->read_range(next_compacted_, last);
      if (!got.ok()) co_return got.status();
      next_compacted_ = last + 1;
      co_return std::move(*got);
    }
    std::vector<Entry> out;
    if (next_ > end_) co_return out;
    auto got = co_await ml_->read(next_, batch_);
    if (!got.ok()) co_return got.status();
    for (auto& e : *got) {
      if (e.position > end_) break;
      out.push_back(std::move(e));
    }
    if (out.empty()) {
      co_return Status(Errc::kUnavailable, fmt::format("no entry readable at {} (up to {})",
                                                       next_.to_string(), end_.to_string()));
    }
    next_ = ml_->next_position(out.back().position);
    co_return out;
  }

 private:
  std::shared_ptr<mledger::ManagedLedger> ml_;
  std::shared_ptr<CompactedLedger> previous_;
  const Position start_, end_;
  const int batch_;
  int64_t next_compacted_ = 0;
  Position next_;
};

// Phase one: the latest message of every key. Returns the messages read.
int64_t observe(const Entry& e, uint32_t max_uncompressed, LatestByKey& latest) {
  auto p = parse(e.data);
  if (!p) return 1;
  const auto& md = p->metadata;
  if (md.has_marker_type()) return 1;
  const bool keyed = md.has_partition_key() && !md.null_partition_key();
  if (is_chunk(md)) {
    if (md.chunk_id() != md.num_chunks_from_msg() - 1) return 0;  // counted at its last chunk
    if (keyed) latest[md.partition_key()] = Latest{e.position, -1, md.uuid()};
    return 1;
  }
  if (readable_batch(md)) {
    auto messages = protocol::unpack_messages(md, p->payload, max_uncompressed);
    if (!messages.ok()) return md.num_messages_in_batch();
    int64_t n = 0;
    for (size_t i = 0; i < messages->size(); ++i) {
      const auto& m = (*messages)[i];
      if (m.metadata.compacted_out()) continue;
      ++n;
      if (!has_key(m.metadata)) continue;
      if (m.payload.size() > 0 && !m.metadata.null_value()) {
        latest[m.metadata.partition_key()] = Latest{e.position, static_cast<int32_t>(i), {}};
      } else {
        latest.erase(m.metadata.partition_key());
      }
    }
    return n;
  }
  if (keyed) {
    if (p->payload.size() > 0 && !md.null_value()) {
      latest[md.partition_key()] = Latest{e.position, -1, {}};
    } else {
      latest.erase(md.partition_key());
    }
  }
  return 1;
}

bool is_latest(const LatestByKey& latest, const std::string& key, Position p, int32_t index) {
  auto it = latest.find(key);
  return it != latest.end() && it->second.position == p && it->second.batch_index == index;
}

struct Kept {
  std::optional<Buffer> entry;  // what to write (nullopt: dropped)
  int64_t messages = 0;
};

// Phase two: what of an entry stays.
Kept keep(const Entry& e, const LatestByKey& latest, const CompactorOptions& options) {
  auto p = parse(e.data);
  if (!p) return Kept{e.data, 1};  // unreadable: kept as it is
  const auto& md = p->metadata;
  if (md.has_marker_type()) return {};
  const bool keyed = md.has_partition_key() && !md.null_partition_key();
  if (is_chunk(md)) {
    const bool last = md.chunk_id() == md.num_chunks_from_msg() - 1;
    bool kept = !keyed && options.retain_null_key;
    if (keyed) {
      auto it = latest.find(md.partition_key());
      kept = it != latest.end() && it->second.uuid == md.uuid() &&
             e.position <= it->second.position;
    }
    if (!kept) return {};
    return Kept{e.data, last ? 1 : 0};
  }
  if (readable_batch(md)) {
    auto messages = protocol::unpack_messages(md, p->payload, options.max_uncompressed_size);
    if (!messages.ok()) return Kept{e.data, md.num_messages_in_batch()};
    std::vector<bool> stays(messages->size());
    int64_t kept = 0;
    for (size_t i = 0; i < messages->size(); ++i) {
      const auto& m = (*messages)[i];
      if (m.metadata.compacted_out()) continue;
      stays[i] = has_key(m.metadata)
                     ? is_latest(latest, m.metadata.partition_key(), e.position,
                                 static_cast<int32_t>(i))
                     : options.retain_null_key;
      kept += stays[i] ? 1 : 0;
    }
    if (kept == 0) return {};
    if (kept == static_cast<int64_t>(messages->size())) return Kept{e.data, kept};
    protocol::BatchBuilder batch;
    for (size_t i = 0; i < messages->size(); ++i) {
      if (stays[i]) {
        batch.add((*messages)[i].metadata, (*messages)[i].payload.view());
      } else {
        wire::SingleMessageMetadata out;
        out.set_compacted_out(true);
        batch.add(std::move(out), {});
      }
    }
    const Buffer raw = batch.finish();
    wire::MessageMetadata rebuilt = md;
    rebuilt.set_uncompressed_size(static_cast<uint32_t>(raw.size()));
    const auto codec = static_cast<protocol::CompressionType>(md.compression());
    auto packed = protocol::compress(codec, std::span<const uint8_t>(raw.data(), raw.size()));
    if (!packed.ok()) return Kept{e.data, static_cast<int64_t>(messages->size())};
    BufferChain payload;
    payload.append(std::move(*packed));
    return Kept{protocol::encode_entry(rebuilt, payload).flatten(), kept};
  }
  const bool stays = keyed ? is_latest(latest, md.partition_key(), e.position, -1)
                           : options.retain_null_key;
  if (!stays) return {};
  return Kept{e.data, 1};
}

// Adds to the new ledger with a bounded number in flight.
class Writer {
 public:
  Writer(std::shared_ptr<ledger::LedgerHandle> lh, int max) : lh_(std::move(lh)), max_(max) {}

  Task<Status> add(BufferChain data) {
    while (state_->inflight >= max_ && state_->failure.ok()) co_await wait();
    if (!state_->failure.ok()) co_return state_->failure;
    ++state_->inflight;
    lh_->async_add(std::move(data), [state = state_](Result<EntryId> r) {
      --state->inflight;
      if (!r.ok() && state->failure.ok()) state->failure = r.status();
      if (state->waiter) std::exchange(state->waiter, nullptr)();
    });
    co_return Status::OK();
  }
  Task<Status> drain() {
    while (state_->inflight > 0) co_await wait();
    co_return state_->failure;
  }

 private:
  struct State {
    int inflight = 0;
    Status failure;
    std::function<void()> waiter;
  };
  Task<void> wait() {
    auto state = state_;
    // (Made before the co_await, not inside it: GCC 12 frees a lambda temporary written
    // inside a co_await expression twice.)
    auto woken = await_callback<bool>([state](std::function<void(bool)> done) {
      state->waiter = [done = std::move(done)] { done(true); };
    });
    (void)co_await std::move(woken);
  }

  std::shared_ptr<ledger::LedgerHandle> lh_;
  const int max_;
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace

Task<Result<std::optional<CompactionResult>>> compact(std::shared_ptr<mledger::ManagedLedger> ml,
                                                      std::shared_ptr<CompactedLedger> previous,
                                                      CompactorOptions options) {
  auto log = log::Logger("compaction").with("topic", options.topic);
  const Position end = ml->last_confirmed();
  const Position from = previous ? ml->next_position(previous->horizon()) : ml->first_position();
  if (!end.entry_id.valid() || from > end) co_return std::optional<CompactionResult>();

  Source source(ml, previous, from, end, std::max(1, options.read_batch));
  LatestByKey latest;
  CompactionResult result;
  result.horizon = end;
  log.info("phase one: reading {} compacted entries and {} to {}",
           previous ? previous->entries() : 0, from.to_string(), end.to_string());
  while (true) {
    auto batch = co_await source.next();
    if (!batch.ok()) co_return batch.status();
    if (batch->empty()) break;
    for (const auto& e : *batch) {
      result.messages_read += observe(e, options.max_uncompressed_size, latest);
    }
  }

  const auto& config = ml->config();
  std::map<std::string, std::string> custom = {{"application", "pulsar"},
                                               {"component", "compacted-ledger"},
                                               {"compactedTopic", options.topic},
                                               {"compactedTo", end.to_string()}};
  auto& bk = ml->bookkeeper();
  auto created = co_await bk.create(config.ensemble_size, config.write_quorum, config.ack_quorum,
                                    config.password, std::move(custom));
  if (!created.ok()) co_return created.status();
  std::shared_ptr<ledger::LedgerHandle> lh = *created;
  result.ledger = lh->id();
  log.info("phase two: {} keys to ledger {}", latest.size(), result.ledger.value());

  Status failed;
  {
    Writer writer(lh, std::max(1, options.max_outstanding_adds));
    source.rewind();
    while (failed.ok()) {
      auto batch = co_await source.next();
      if (!batch.ok()) {
        failed = batch.status();
        break;
      }
      if (batch->empty()) break;
      for (const auto& e : *batch) {
        Kept k = keep(e, latest, options);
        if (!k.entry) continue;
        result.messages_kept += k.messages;
        ++result.entries_written;
        BufferChain data = encode_compacted_entry(e.position, *k.entry);
        result.bytes_written += static_cast<int64_t>(data.size());
        failed = co_await writer.add(std::move(data));
        if (!failed.ok()) break;
      }
    }
    Status drained = co_await writer.drain();
    if (failed.ok()) failed = drained;
  }
  if (failed.ok()) failed = co_await lh->close();
  if (!failed.ok()) {
    log.warn("failed, deleting ledger {}: {}", result.ledger.value(), failed.to_string());
    (void)co_await bk.remove(result.ledger);
    co_return failed;
  }
  log.info("ledger {} holds {} entries ({} of {} messages kept), horizon {}",
           result.ledger.value(), result.entries_written, result.messages_kept,
           result.messages_read, end.to_string());
  co_return std::optional<CompactionResult>(std::move(result));
}

}  // namespace magnetar::broker::compaction
