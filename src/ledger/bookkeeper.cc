#include "ledger/bookkeeper.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <boost/asio/redirect_error.hpp>
#include <chrono>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>

#include "protocol/bookie_entry.h"

namespace magnetar::ledger {
namespace {

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Status ledger_error(Errc code, int64_t ledger_id, std::string what) {
  return Status(code, fmt::format("ledger {}: {}", ledger_id, what));
}

// Completion bookkeeping shared by a coroutine and the operations it started with co_spawn:
// how many still run, and how to wake the owner while it sleeps in next_completion(). Shared
// (shared_ptr) so that a completion always lands in live memory; owners still wait for every
// operation they started before returning. Lives on the handle's executor, like the
// completion handlers that update it.
struct Joiner {
  int running = 0;
  std::function<void(bool)> resume;  // set while the owner sleeps in next_completion()

  void finished() {
    --running;
    if (resume) {
      auto wake = std::move(resume);
      resume = nullptr;
      wake(true);
    }
  }
};

// Captured (as a shared_ptr) by an operation's completion handler, which calls finish()
// instead of Joiner::finished(). If the handler is destroyed without running — its executor
// was destroyed at shutdown with the operation pending — the owner sleeping in
// next_completion() is dropped with its `resume` (asio destroys its suspended frames):
// otherwise that frame (holding the Joiner) and the Joiner (holding the frame) would keep
// each other, and whatever the frame holds, alive forever.
class JoinerShare {
 public:
  explicit JoinerShare(std::shared_ptr<Joiner> joiner) : joiner_(std::move(joiner)) {}
  JoinerShare(const JoinerShare&) = delete;
  JoinerShare& operator=(const JoinerShare&) = delete;
  ~JoinerShare() {
    if (!finished_) joiner_->resume = nullptr;
  }
  void finish() {
    finished_ = true;
    joiner_->finished();
  }

 private:
  std::shared_ptr<Joiner> joiner_;
  bool finished_ = false;
};

// Resumes the caller after the next Joiner::finished(). Precondition: an operation is
// running that will call it. Not a coroutine, on purpose (see await_callback).
template <typename J>
Task<bool> next_completion(const std::shared_ptr<J>& joiner) {
  std::shared_ptr<Joiner> j = joiner;
  return await_callback<bool>(
      [j](std::function<void(bool)> resume) { j->resume = std::move(resume); });
}

// The recovery adds in flight (one count per entry, each entry sent to its Qw bookies at
// once), shared with their completion handlers.
struct RecoveryAdds : Joiner {
  struct Entry {
    int acks = 0;        // bookies that stored it
    int left = 0;        // adds still running
    bool done = false;   // counted finished: at Qa acks, or when all answered short of it
  };
  std::map<int64_t, Entry> entries;
  Status error;  // set by the first entry that reached fewer than Qa bookies
};

// The fence requests of one recovery, answered in any order (shared with their handlers,
// which may outlive the recovery: it goes on once enough have answered).
struct FenceRound : Joiner {
  enum Answer { kWaiting, kFenced, kRefused, kUnreachable };
  std::vector<Answer> answers;  // per ensemble position
  int64_t max_lac = -1;
};

struct FenceReply {
  FenceRound::Answer answer = FenceRound::kUnreachable;
  int64_t lac = -1;  // the highest LAC the bookie knows (its answer's, or its last entry's)
};

// One fencing read. `client` is used only before the first suspension (the request is sent,
// or queued, by then), so a reply may land after the recovery moved on.
Task<FenceReply> fence_one(BookieClient& client, std::string bookie,
                           bookie_wire::ReadRequest request) {
  auto r = co_await client.read(std::move(bookie), std::move(request));
  FenceReply out;
  if (!r.ok()) co_return out;
  if (r->status != bookie_wire::OK && r->status != bookie_wire::NO_ENTRY &&
      r->status != bookie_wire::NO_LEDGER) {
    out.answer = FenceRound::kRefused;
    co_return out;
  }
  out.answer = FenceRound::kFenced;
  out.lac = r->lac;
  if (r->status == bookie_wire::OK) {
    auto h = protocol::peek_entry_header(r->entry);
    if (h.ok()) out.lac = std::max(out.lac, h->lac);
  }
  co_return out;
}

// One recovery add of a packaged entry to one bookie; true when the bookie stored it.
// `client` outlives the call (the BookKeeper outlives its handles, which wait for these).
Task<bool> recovery_add(BookieClient& client, std::string bookie, bookie_wire::AddRequest request,
                        BufferChain packaged) {
  auto r = co_await client.add(std::move(bookie), std::move(request), std::move(packaged));
  co_return r.ok() && r->status == bookie_wire::OK;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// BookKeeper

BookKeeper::BookKeeper(metadata::MetadataStore& store, Executor executor, BookKeeperOptions options)
    : store_(store),
      executor_(executor),
      options_(std::move(options)),
      client_(executor, options_.bookie_client),
      ids_(&store, executor, "/counters/ledger-id"),
      log_(log::Logger("ledger")) {
  if (!options_.placement) options_.placement = make_default_placement(0);
  options_.max_parallel_reads = std::max(options_.max_parallel_reads, 1);
  auto* failures = metrics::default_registry()
                       .counter("magnetar_ledger_placement_failures_total",
                                "Ensembles the placement policy could not choose (too few "
                                "bookies, or too few racks or regions for its constraints)",
                                {"op"})
                       .value();
  new_ensemble_failures_ = failures->get("new_ensemble");
  replace_failures_ = failures->get("replace_bookie");
  adds_waiting_for_placement_ =
      metrics::default_registry()
          .counter("magnetar_ledger_adds_waiting_for_placement_total",
                   "Adds acknowledged by an ack quorum whose bookies did not yet span the regions "
                   "the placement policy asks for (bookkeeper_enforceMinNumFaultDomainsForWrite); "
                   "they complete once a bookie of another region stores them",
                   {})
          .value()
          ->get();
}

void BookKeeper::count_placement_failure(bool replacement) {
  (replacement ? replace_failures_ : new_ensemble_failures_)->inc();
}

BookKeeper::~BookKeeper() = default;

Task<Result<std::vector<std::string>>> BookKeeper::available_bookies() {
  auto all = co_await store_.children("/ledgers/available");
  if (!all.ok()) co_return all.status();
  auto readonly = co_await store_.children("/ledgers/available/readonly");
  if (!readonly.ok()) co_return readonly.status();
  std::vector<std::string> out;
  for (const std::string& b : *all) {
    if (b == "readonly") continue;
    if (std::find(readonly->begin(), readonly->end(), b) != readonly->end()) continue;
    out.push_back(b);
  }
  co_return out;
}

Task<Result<std::vector<std::string>>> registered_bookies(metadata::MetadataStore& store) {
  auto all = co_await store.children("/ledgers/available");
  if (!all.ok()) co_return all.status();
  auto readonly = co_await store.children("/ledgers/available/readonly");
  if (!readonly.ok()) co_return readonly.status();
  std::set<std::string> out(readonly->begin(), readonly->end());
  for (const std::string& b : *all) {
    if (b != "readonly") out.insert(b);
  }
  co_return std::vector<std::string>(out.begin(), out.end());
}

Task<Result<std::shared_ptr<LedgerHandle>>> BookKeeper::create(
    int ensemble_size, int write_quorum, int ack_quorum, std::string password,
    std::map<std::string, std::string> custom, LedgerId id_above) {
  auto bookies = co_await available_bookies();
  if (!bookies.ok()) co_return bookies.status();
  std::set<std::string> none;
  auto ensemble =
      options_.placement->new_ensemble(ensemble_size, write_quorum, ack_quorum, *bookies, none);
  if (!ensemble.ok()) {
    count_placement_failure(false);
    co_return Status(ensemble.status().code(),
                     fmt::format("cannot create a ledger with E={} Qw={} Qa={} from {} registered "
                                 "bookies: {}",
                                 ensemble_size, write_quorum, ack_quorum, bookies->size(),
                                 ensemble.status().message()));
  }
  auto id = co_await ids_.next(id_above.value());
  if (!id.ok()) co_return id.status();

  LedgerMetadata md;
  md.ledger_id = *id;
  md.ensemble_size = ensemble_size;
  md.write_quorum = write_quorum;
  md.ack_quorum = ack_quorum;
  md.state = LedgerState::kOpen;
  md.password = std::move(password);
  md.ctime_ms = now_ms();
  md.custom = std::move(custom);
  Segment first;
  first.first_entry_id = 0;
  first.ensemble = std::move(ensemble).value();
  md.segments.push_back(std::move(first));
  Status valid = md.validate();
  if (!valid.ok()) co_return valid;

  std::string path = ledger_path(md.ledger_id);
  std::string json = md.to_json();
  metadata::PutOptions must_not_exist;
  must_not_exist.expected_version = -1;
  auto put = co_await store_.put_recursive(path, std::move(json), must_not_exist);
  if (!put.ok()) co_return put.status();
  log_.with("ledger_id", md.ledger_id)
      .info("created ledger E={} Qw={} Qa={} ensemble={}", ensemble_size, write_quorum, ack_quorum,
            fmt::join(md.segments.front().ensemble, ","));
  co_return std::make_shared<LedgerHandle>(*this, std::move(md), put->stat.version, std::move(path),
                                           true);
}

Task<Result<BookKeeper::StoredMetadata>> BookKeeper::find_metadata(LedgerId ledger) {
  const int64_t ledger_id = ledger.value();
  const std::array<std::string, 2> paths = {ledger_path(ledger_id),
                                            metadata::flat_ledger_path(ledger_id)};
  for (const std::string& path : paths) {
    auto got = co_await store_.get(path);
    if (!got.ok()) co_return got.status();
    if (got->has_value()) {
      StoredMetadata found;
      found.path = path;
      found.json = std::move((*got)->value);
      found.version = (*got)->stat.version;
      co_return found;
    }
  }
  co_return Status(Errc::kNotFound, fmt::format("ledger {} does not exist", ledger_id));
}

Task<Result<LedgerMetadata>> BookKeeper::read_metadata(LedgerId ledger) {
  auto found = co_await find_metadata(ledger);
  if (!found.ok()) co_return found.status();
  co_return LedgerMetadata::from_json(found->json);
}

Task<Result<std::shared_ptr<LedgerHandle>>> BookKeeper::open(LedgerId ledger, std::string password,
                                                             bool recovery) {
  auto found = co_await find_metadata(ledger);
  if (!found.ok()) co_return found.status();
  auto md = LedgerMetadata::from_json(found->json);
  if (!md.ok()) co_return md.status();
  if (md->password != password) {
    co_return Status(Errc::kPermissionDenied, fmt::format("ledger {}: wrong password", ledger));
  }
  auto handle = std::make_shared<LedgerHandle>(*this, std::move(md).value(), found->version,
                                               std::move(found->path), false);
  if (handle->closed()) co_return handle;
  // (Not a conditional expression: GCC 12 mishandles co_await in the arms of ?:.)
  Status st;
  if (recovery) {
    st = co_await handle->recover();
  } else {
    st = co_await handle->refresh_lac();
  }
  if (!st.ok()) co_return st;
  co_return handle;
}

Task<Status> BookKeeper::remove(LedgerId ledger) {
  const int64_t ledger_id = ledger.value();
  // Bookies drop the entries of ledgers missing from the metadata at garbage collection.
  Status st = co_await store_.remove(ledger_path(ledger_id));
  if (st.is(Errc::kNotFound)) {
    std::string flat = metadata::flat_ledger_path(ledger_id);
    st = co_await store_.remove(std::move(flat));
  }
  if (st.is(Errc::kNotFound)) {
    co_return Status(Errc::kNotFound, fmt::format("ledger {} does not exist", ledger_id));
  }
  co_return st;
}

Task<Result<std::vector<LedgerId>>> BookKeeper::list_ledgers() {
  auto ids = co_await metadata::list_ledger_ids(store_);
  if (!ids.ok()) co_return ids.status();
  std::vector<LedgerId> out;
  out.reserve(ids->size());
  for (int64_t id : *ids) out.emplace_back(id);
  co_return out;
}

// ---------------------------------------------------------------------------------------
// LedgerHandle: the write path

struct LedgerHandle::PendingAdd {
  int64_t entry_id = 0;
  size_t payload_size = 0;
  BufferChain packaged;
  std::vector<int> acked;  // ensemble indexes that stored it
  bool sent = false;       // held back while the ensemble changes
  bool done = false;
  bool waited_for_placement = false;  // had Qa acks that did not satisfy the policy
  AddCallback callback;
};

LedgerHandle::LedgerHandle(BookKeeper& bk, LedgerMetadata metadata, int64_t metadata_version,
                           std::string metadata_path, bool writable)
    : bk_(bk),
      metadata_(std::move(metadata)),
      metadata_version_(metadata_version),
      metadata_path_(std::move(metadata_path)),
      writable_(writable),
      master_key_(metadata_.master_key()),
      log_(log::Logger("ledger").with("ledger_id", metadata_.ledger_id)) {
  if (closed()) lac_ = metadata_.last_entry_id;
}

LedgerHandle::~LedgerHandle() = default;

Task<Result<EntryId>> LedgerHandle::add(BufferChain payload) {
  auto self = shared_from_this();
  auto start = [self, payload = std::move(payload)](AddCallback done) mutable {
    self->async_add(std::move(payload), std::move(done));
  };
  auto waiting = await_callback<Result<EntryId>>(std::move(start));
  co_return co_await std::move(waiting);
}

void LedgerHandle::async_add(BufferChain payload, AddCallback done) {
  Status refused = failed_;
  if (refused.ok() && (!writable_ || closed())) {
    refused = ledger_error(Errc::kInvalidArgument, metadata_.ledger_id, "not open for writing");
  }
  if (!refused.ok()) {
    asio::post(bk_.executor(), [done = std::move(done), refused]() { done(refused); });
    return;
  }
  auto p = std::make_shared<PendingAdd>();
  p->entry_id = ++last_pushed_;
  p->payload_size = payload.size();
  p->acked.reserve(static_cast<size_t>(metadata_.write_quorum));
  p->callback = std::move(done);
  protocol::EntryHeader header;
  header.ledger_id = metadata_.ledger_id;
  header.entry_id = p->entry_id;
  header.lac = lac_;
  pushed_length_ += static_cast<int64_t>(payload.size());
  header.length = pushed_length_;
  p->packaged = protocol::package_entry(header, payload);
  pending_.push_back(p);
  if (!changing_ensemble_) {
    p->sent = true;
    for (int index : metadata_.write_set(p->entry_id)) send(p, index);
  }
}

void LedgerHandle::send(const std::shared_ptr<PendingAdd>& p, int index) {
  const std::string& bookie = metadata_.ensemble_for(p->entry_id)[static_cast<size_t>(index)];
  bookie_wire::AddRequest request;
  request.set_ledger_id(metadata_.ledger_id);
  request.set_entry_id(p->entry_id);
  request.set_master_key(master_key_);
  // The callback keeps the handle alive while the request is in flight.
  auto answered = [self = shared_from_this(), p, index, bookie](Result<AddResult> r) {
    self->on_add_answer(*p, index, bookie, std::move(r));
  };
  bk_.client().async_add(bookie, std::move(request), p->packaged, std::move(answered));
}

void LedgerHandle::on_add_answer(PendingAdd& p, int index, const std::string& bookie,
                                 Result<AddResult> r) {
  if (p.done) return;
  // The bookie may have been replaced while this request was in flight: its answer no
  // longer counts either way.
  if (metadata_.ensemble_for(p.entry_id)[static_cast<size_t>(index)] != bookie) return;
  if (r.ok() && r->status == bookie_wire::OK) {
    if (std::find(p.acked.begin(), p.acked.end(), index) == p.acked.end()) {
      p.acked.push_back(index);
    }
    try_complete();
    return;
  }
  if (r.ok() && (r->status == bookie_wire::FENCED || r->status == bookie_wire::UNAUTHORIZED)) {
    fail(ledger_error(Errc::kFenced, metadata_.ledger_id,
                      fmt::format("bookie {} refused entry {}: the ledger was fenced by a "
                                  "recovering reader (another owner took over)",
                                  bookie, p.entry_id)));
    return;
  }
  if (failed_bookies_.insert(bookie).second) {
    std::string why = r.ok() ? fmt::format("status {}", bookie_wire::BookieStatus_Name(r->status))
                             : r.status().to_string();
    log_.with("bookie", bookie)
        .warn("add of entry {} failed: {}; replacing the bookie", p.entry_id, why);
  }
  if (!changing_ensemble_ && !change_retry_scheduled_) {
    changing_ensemble_ = true;
    asio::co_spawn(bk_.executor(), change_ensemble(), asio::detached);
  }
}

bool LedgerHandle::ack_quorum_survives() const {
  const auto& ensemble = metadata_.ensemble_for(lac_ + 1);
  const int E = metadata_.ensemble_size;
  PlacementPolicy& policy = bk_.placement();
  for (int start = 0; start < E; ++start) {
    std::vector<std::string> write_set, healthy;
    for (int k = 0; k < metadata_.write_quorum; ++k) {
      const std::string& b = ensemble[static_cast<size_t>((start + k) % E)];
      write_set.push_back(b);
      if (!failed_bookies_.count(b)) healthy.push_back(b);
    }
    if (static_cast<int>(healthy.size()) < metadata_.ack_quorum) return false;
    if (policy.checks_acks() && !policy.acks_adhere(write_set, healthy)) return false;
  }
  return true;
}

bool LedgerHandle::add_is_complete(PendingAdd& p) {
  if (static_cast<int>(p.acked.size()) < metadata_.ack_quorum) return false;
  PlacementPolicy& policy = bk_.placement();
  if (!policy.checks_acks()) return true;
  const auto& ensemble = metadata_.ensemble_for(p.entry_id);
  std::vector<std::string> write_set, acked;
  for (int index : metadata_.write_set(p.entry_id)) {
    write_set.push_back(ensemble[static_cast<size_t>(index)]);
  }
  for (int index : p.acked) acked.push_back(ensemble[static_cast<size_t>(index)]);
  if (policy.acks_adhere(write_set, acked)) return true;
  if (!p.waited_for_placement) {
    // BookKeeper's "write delayed, not acknowledged by bookies in enough fault domains".
    p.waited_for_placement = true;
    bk_.count_add_waiting_for_placement();
  }
  return false;
}

Task<void> LedgerHandle::retry_change_later() {
  auto self = shared_from_this();
  asio::steady_timer timer(bk_.executor(), std::chrono::seconds(1));
  boost::system::error_code ec;
  co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  change_retry_scheduled_ = false;
  if (failed_.ok() && !failed_bookies_.empty() && !changing_ensemble_ && !closed()) {
    changing_ensemble_ = true;
    co_await change_ensemble();
  }
}

void LedgerHandle::try_complete() {
  while (!pending_.empty() && add_is_complete(*pending_.front())) {
    auto p = pending_.front();
    pending_.pop_front();
    lac_ = p->entry_id;
    length_ += static_cast<int64_t>(p->payload_size);
    p->done = true;
    p->callback(EntryId{p->entry_id});
  }
  if (pending_.empty()) wake_drain_waiters();
}

void LedgerHandle::fail(Status status) {
  if (failed_.ok()) {
    log_.error("ledger handle failed: {}", status.to_string());
    failed_ = status;
  }
  while (!pending_.empty()) {
    auto p = pending_.front();
    pending_.pop_front();
    p->done = true;
    p->callback(failed_);
  }
  wake_drain_waiters();
}

void LedgerHandle::wake_drain_waiters() {
  auto waiters = std::move(drain_waiters_);
  drain_waiters_.clear();
  for (auto& w : waiters) w(true);
}

Task<void> LedgerHandle::change_ensemble() {
  auto self = shared_from_this();
  while (!failed_bookies_.empty() && failed_.ok()) {
    const int64_t first = lac_ + 1;  // entries from here on go to the new ensemble
    std::vector<std::string> ensemble = metadata_.ensemble_for(first);
    auto available = co_await bk_.available_bookies();
    if (!available.ok()) {
      fail(available.status());
      break;
    }
    std::set<std::string> excluded(ensemble.begin(), ensemble.end());
    excluded.insert(failed_bookies_.begin(), failed_bookies_.end());
    std::vector<int> replaced;
    Status st;
    for (size_t i = 0; i < ensemble.size() && st.ok(); ++i) {
      if (!failed_bookies_.count(ensemble[i])) continue;
      auto r = bk_.placement().replace_bookie(ensemble, static_cast<int>(i), metadata_.write_quorum,
                                              metadata_.ack_quorum, *available, excluded);
      if (!r.ok()) {
        bk_.count_placement_failure(true);
        st = ledger_error(
            Errc::kUnavailable, metadata_.ledger_id,
            fmt::format("no bookie to replace {}: {}", ensemble[i], r.status().message()));
        break;
      }
      excluded.insert(*r);
      ensemble[i] = std::move(r).value();
      replaced.push_back(static_cast<int>(i));
    }
    if (!st.ok()) {
      if (st.is(Errc::kUnavailable) && ack_quorum_survives()) {
        // Delayed ensemble change (BookKeeper's delayEnsembleChange): every write set still
        // reaches Qa without the failed bookies, so keep writing with what is left and look
        // for a replacement again in a second. Entries stay on >= Qa bookies meanwhile.
        log_.warn(
            "{}; continuing on the remaining bookies of each write set (ack quorum {} "
            "still reachable), retrying the ensemble change every second",
            st.message(), metadata_.ack_quorum);
        change_retry_scheduled_ = true;
        asio::co_spawn(bk_.executor(), retry_change_later(), asio::detached);
        break;
      }
      fail(st);
      break;
    }
    LedgerMetadata updated = metadata_;
    if (updated.segments.back().first_entry_id == first) {
      updated.segments.back().ensemble = ensemble;
    } else {
      Segment s;
      s.first_entry_id = first;
      s.ensemble = ensemble;
      updated.segments.push_back(std::move(s));
    }
    failed_bookies_.clear();
    Status written = co_await write_metadata(std::move(updated));
    if (!written.ok()) {
      fail(written);
      break;
    }
    log_.info("ensemble change from entry {}: {}", first, fmt::join(ensemble, ","));
    // Unconfirmed entries lost their copy at the replaced positions: send them again.
    for (auto& p : pending_) {
      if (!p->sent) continue;
      for (int index : metadata_.write_set(p->entry_id)) {
        if (std::find(replaced.begin(), replaced.end(), index) == replaced.end()) continue;
        std::erase(p->acked, index);
        send(p, index);
      }
    }
  }
  changing_ensemble_ = false;
  if (failed_.ok()) {
    for (auto& p : pending_) {
      if (p->sent) continue;
      p->sent = true;
      for (int index : metadata_.write_set(p->entry_id)) send(p, index);
    }
  }
}

namespace {

// Whether `stored` differs from `base` (what this writer last wrote or read) only in the
// bookies of segments before the last one: auto-recovery replaced a lost bookie in a fragment
// the writer no longer writes. Anything else (a recovery's IN_RECOVERY or CLOSED, a segment
// added or moved, the last segment changed) is someone else taking the ledger.
bool only_earlier_segments_changed(const LedgerMetadata& base, const LedgerMetadata& stored) {
  if (stored.state != LedgerState::kOpen || base.state != LedgerState::kOpen ||
      stored.segments.size() != base.segments.size() || stored.segments.empty() ||
      stored.ensemble_size != base.ensemble_size) {
    return false;
  }
  for (size_t i = 0; i < base.segments.size(); ++i) {
    if (stored.segments[i].first_entry_id != base.segments[i].first_entry_id ||
        stored.segments[i].ensemble.size() != base.segments[i].ensemble.size()) {
      return false;
    }
  }
  return stored.segments.back().ensemble == base.segments.back().ensemble;
}

}  // namespace

Task<Status> LedgerHandle::write_metadata(LedgerMetadata updated) {
  std::string path = metadata_path_;
  for (int attempt = 0;; ++attempt) {
    metadata::PutOptions cas;
    cas.expected_version = metadata_version_;
    auto put = co_await bk_.store().put(path, updated.to_json(), cas);
    if (put.ok()) {
      metadata_ = std::move(updated);
      metadata_version_ = put->stat.version;
      co_return Status::OK();
    }
    if (!put.status().is(Errc::kBadVersion)) co_return put.status();
    // Someone else changed the metadata. Auto-recovery replacing a lost bookie in an earlier
    // segment: take its change and write ours on top. A recovering reader (fencing us) or a
    // close: this writer is done.
    auto got = co_await bk_.store().get(path);
    if (got.ok() && got->has_value() && attempt < 10) {
      auto stored = LedgerMetadata::from_json((*got)->value);
      if (stored.ok() && only_earlier_segments_changed(metadata_, *stored)) {
        for (size_t i = 0; i + 1 < stored->segments.size(); ++i) {
          updated.segments[i].ensemble = stored->segments[i].ensemble;
        }
        log_.info("ledger metadata changed underneath this writer in earlier segments only "
                  "(a bookie replaced by auto-recovery): writing on top of version {}",
                  (*got)->stat.version);
        metadata_.segments = stored->segments;
        metadata_version_ = (*got)->stat.version;
        continue;
      }
    }
    co_return ledger_error(Errc::kFenced, metadata_.ledger_id,
                           "ledger metadata changed underneath this writer (recovered by "
                           "another client)");
  }
}

Task<Status> LedgerHandle::close() {
  auto self = shared_from_this();
  while (!pending_.empty() && failed_.ok()) {
    auto wait_for_drain = [this](std::function<void(bool)> done) {
      drain_waiters_.push_back(std::move(done));
    };
    auto drained = await_callback<bool>(std::move(wait_for_drain));
    co_await std::move(drained);
  }
  // After a write failure the ledger is still closed at its last confirmed entry (what was
  // acknowledged stays readable; unconfirmed entries are not part of it), unless another
  // client fenced it: then that client's recovery decides the end.
  if (!failed_.ok() && (failed_.is(Errc::kFenced) || !writable_)) co_return failed_;
  if (closed()) co_return Status::OK();
  LedgerMetadata updated = metadata_;
  updated.state = LedgerState::kClosed;
  updated.last_entry_id = lac_;
  updated.length = length_;
  Status st = co_await write_metadata(std::move(updated));
  if (st.ok()) {
    log_.info("closed at entry {}{}", lac_, failed_.ok() ? "" : " after a write failure");
  }
  co_return st;
}

// ---------------------------------------------------------------------------------------
// Reads

Task<LedgerHandle::EntryRead> LedgerHandle::read_entry(int64_t entry_id) {
  auto self = shared_from_this();
  // A copy: an ensemble change may reshape metadata_.segments while this read waits.
  const std::vector<std::string> ensemble = metadata_.ensemble_for(entry_id);
  EntryRead out;
  out.status = ledger_error(Errc::kNotFound, metadata_.ledger_id,
                            fmt::format("entry {} not found on any replica", entry_id));
  // Replicas that failed recently go last, so a dead bookie costs nothing while others serve.
  std::vector<int> order = metadata_.write_set(entry_id);
  std::stable_partition(order.begin(), order.end(), [&](int index) {
    return !suspects_.count(ensemble[static_cast<size_t>(index)]);
  });
  for (int index : order) {
    std::string bookie = ensemble[static_cast<size_t>(index)];
    bookie_wire::ReadRequest request;
    request.set_ledger_id(metadata_.ledger_id);
    request.set_entry_id(entry_id);
    auto r = co_await bk_.client().read(bookie, std::move(request));
    if (!r.ok()) {
      ++out.unreachable;
      suspects_.insert(bookie);
      out.status = r.status();
      continue;
    }
    suspects_.erase(bookie);
    if (r->status == bookie_wire::NO_ENTRY || r->status == bookie_wire::NO_LEDGER) {
      ++out.negatives;
      // Recovery: Qw - Qa + 1 bookies without it settle that it was never acknowledged, so
      // the rest (one that does not answer, perhaps) are not waited for.
      if (recovering_ && out.negatives >= metadata_.write_quorum - metadata_.ack_quorum + 1) {
        break;
      }
      continue;
    }
    if (r->status != bookie_wire::OK) {
      ++out.unreachable;
      out.status = ledger_error(Errc::kUnavailable, metadata_.ledger_id,
                                fmt::format("bookie {} answered {} for entry {}", bookie,
                                            bookie_wire::BookieStatus_Name(r->status), entry_id));
      continue;
    }
    protocol::EntryHeader header;
    auto payload = protocol::unpack_entry(r->entry, metadata_.ledger_id, entry_id, &header);
    if (!payload.ok()) {
      ++out.unreachable;
      log_.with("bookie", bookie)
          .warn("bad copy of entry {}: {}; trying another replica", entry_id,
                payload.status().to_string());
      out.status = payload.status();
      continue;
    }
    out.status = Status::OK();
    out.payload = std::move(payload).value();
    out.running_length = header.length;
    co_return out;
  }
  co_return out;
}

// Reads entries [first, last] in entry order, each with read_entry() started by co_spawn,
// keeping at most max_parallel_reads entries issued but not yet taken by next(): that bounds
// both the reads in flight and the results held. Lives in its owner's coroutine frame, on the
// handle's executor; the owner must drain() before destroying it (the reads' completion
// handlers only touch the shared State and keep the handle alive).
class LedgerHandle::ReadAhead {
 public:
  ReadAhead(LedgerHandle& handle, int64_t first, int64_t last)
      : handle_(handle),
        state_(std::make_shared<State>()),
        next_issue_(first),
        next_take_(first),
        last_(last),
        window_(handle.bk_.options().max_parallel_reads) {}
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  // What reading the next entry found. Precondition: entries remain and drain() was not
  // called.
  Task<EntryRead> next() {
    fill();
    auto state = state_;
    while (!state->done.count(next_take_)) co_await next_completion(state);
    auto node = state->done.extract(next_take_);
    ++next_take_;
    fill();
    co_return std::move(node.mapped());
  }

  // Starts no more reads and waits for those in flight; their results are dropped.
  Task<void> drain() {
    stopped_ = true;
    auto state = state_;
    while (state->running > 0) co_await next_completion(state);
    state->done.clear();
  }

 private:
  struct State : Joiner {
    std::map<int64_t, EntryRead> done;  // finished, not yet taken
  };

  void fill() {
    while (!stopped_ && next_issue_ <= last_ && next_issue_ - next_take_ < window_) {
      const int64_t entry_id = next_issue_++;
      ++state_->running;
      auto share = std::make_shared<JoinerShare>(state_);
      auto on_done = [state = state_, share, self = handle_.shared_from_this(), entry_id](
                         std::exception_ptr error, EntryRead read) {
        if (error) {
          read.status = ledger_error(Errc::kInternal, self->id().value(),
                                     fmt::format("read of entry {} threw", entry_id));
        }
        state->done.emplace(entry_id, std::move(read));
        share->finish();
      };
      asio::co_spawn(handle_.bk_.executor(), handle_.read_entry(entry_id), std::move(on_done));
    }
  }

  LedgerHandle& handle_;
  std::shared_ptr<State> state_;
  int64_t next_issue_;
  int64_t next_take_;
  const int64_t last_;
  const int window_;
  bool stopped_ = false;
};

Task<Status> LedgerHandle::read_ranges(int64_t first, int64_t last, std::vector<LedgerEntry>& out) {
  auto self = shared_from_this();
  struct State : Joiner {
    std::map<int64_t, Result<ReadRangeResult>> done;  // by the piece's first entry
  };
  struct Piece {
    int64_t last;
    std::string bookie;
  };
  auto state = std::make_shared<State>();
  const int window = std::max(1, bk_.options().max_parallel_reads / kRangeEntries);
  std::map<int64_t, Piece> pieces;      // by first entry: issued, not yet taken
  std::set<std::string> came_up_short;  // answered a piece of this read without all of it
  int64_t next_issue = first;
  int64_t next = first;    // the first entry not yet appended to `out`
  bool no_ranges = false;  // no bookie of the ensemble serves ranges: per-entry reads from here
  Status error;
  auto issue = [&] {
    while (!no_ranges && error.ok() && next_issue <= last &&
           static_cast<int>(pieces.size()) < window) {
      int64_t piece_last = std::min(last, next_issue + kRangeEntries - 1);
      // A piece never spans two ensembles.
      for (const Segment& seg : metadata_.segments) {
        if (seg.first_entry_id > next_issue && seg.first_entry_id <= piece_last) {
          piece_last = seg.first_entry_id - 1;
        }
      }
      const std::vector<std::string>& ensemble = metadata_.ensemble_for(next_issue);
      const size_t n = ensemble.size();
      size_t pick = static_cast<size_t>(next_issue / kRangeEntries) % n;
      auto avoid = [&](const std::string& b) {
        return suspects_.count(b) > 0 || no_range_reads_.count(b) > 0 || came_up_short.count(b) > 0;
      };
      for (size_t k = 0; k < n && avoid(ensemble[pick]); ++k) pick = (pick + 1) % n;
      if (no_range_reads_.count(ensemble[pick])) {
        no_ranges = true;
        break;
      }
      bookie_wire::ReadRangeRequest request;
      request.set_ledger_id(metadata_.ledger_id);
      request.set_first_entry_id(next_issue);
      request.set_max_entries(static_cast<uint32_t>(piece_last - next_issue + 1));
      const int64_t start = next_issue;
      const std::string bookie = ensemble[pick];
      ++state->running;
      auto share = std::make_shared<JoinerShare>(state);
      auto answered = [state, share, self, start, bookie](Result<ReadRangeResult> r) {
        if (!r.ok() && r.status().is(Errc::kNotSupported)) {
          self->no_range_reads_.insert(bookie);  // an older bookie
        } else if (!r.ok()) {
          self->suspects_.insert(bookie);
        } else {
          self->suspects_.erase(bookie);
        }
        state->done.emplace(start, std::move(r));
        share->finish();
      };
      bk_.client().async_read_range(bookie, std::move(request), std::move(answered));
      pieces.emplace(start, Piece{piece_last, bookie});
      next_issue = piece_last + 1;
    }
  };
  issue();
  while (error.ok() && !pieces.empty()) {
    const int64_t start = pieces.begin()->first;
    const Piece piece = pieces.begin()->second;
    while (!state->done.count(start)) co_await next_completion(state);
    Result<ReadRangeResult> got = std::move(state->done.extract(start).mapped());
    pieces.erase(pieces.begin());
    const auto wanted = static_cast<size_t>(piece.last - start + 1);
    if (got.ok() && got->status == bookie_wire::OK) {
      for (size_t i = 0; i < got->entries.size() && i < wanted; ++i) {
        const int64_t entry_id = start + static_cast<int64_t>(i);
        auto payload =
            protocol::unpack_entry(got->entries[i], metadata_.ledger_id, entry_id, nullptr);
        if (!payload.ok()) {
          log_.with("bookie", piece.bookie)
              .warn("bad copy of entry {} in a range read: {}; reading it from the replicas",
                    entry_id, payload.status().to_string());
          break;
        }
        LedgerEntry entry;
        entry.entry_id = EntryId{entry_id};
        entry.payload = std::move(payload).value();
        out.push_back(std::move(entry));
        next = entry_id + 1;
      }
    }
    if (next <= piece.last) {
      // A bookie that failed is a suspect already; one that answered without all of the
      // piece (it lags behind the ack quorum, or held a bad copy) gets no more of this read.
      if (got.ok()) came_up_short.insert(piece.bookie);
      error = co_await read_singly(next, piece.last, out);
      next = piece.last + 1;
    }
    issue();
  }
  // Pieces still in flight hold only the shared state and the handle: let them finish.
  while (state->running > 0) co_await next_completion(state);
  if (!error.ok()) co_return error;
  if (next <= last) {
    Status rest = co_await read_singly(next, last, out);
    co_return rest;
  }
  co_return Status::OK();
}

Task<Status> LedgerHandle::read_singly(int64_t first, int64_t last, std::vector<LedgerEntry>& out) {
  auto self = shared_from_this();
  ReadAhead reads(*this, first, last);
  Status error;
  for (int64_t e = first; e <= last; ++e) {
    EntryRead got = co_await reads.next();
    if (!got.status.ok()) {
      error = std::move(got.status);
      break;
    }
    LedgerEntry entry;
    entry.entry_id = EntryId{e};
    entry.payload = std::move(got.payload);
    out.push_back(std::move(entry));
  }
  co_await reads.drain();
  co_return error;
}

Task<Result<std::vector<LedgerEntry>>> LedgerHandle::read(EntryId first_id, EntryId last_id) {
  auto self = shared_from_this();
  const int64_t first = first_id.value();
  const int64_t last = last_id.value();
  if (first < 0 || last < first) {
    co_return ledger_error(Errc::kInvalidArgument, metadata_.ledger_id,
                           fmt::format("bad entry range [{}, {}]", first, last));
  }
  if (last > lac_) {
    co_return ledger_error(Errc::kInvalidArgument, metadata_.ledger_id,
                           fmt::format("entry {} is past the last confirmed entry {}", last, lac_));
  }
  std::vector<LedgerEntry> out;
  out.reserve(static_cast<size_t>(last - first + 1));
  Status st;
  if (metadata_.ensemble_size == metadata_.write_quorum) {
    st = co_await read_ranges(first, last, out);
  } else {
    st = co_await read_singly(first, last, out);
  }
  if (!st.ok()) co_return st;
  co_return out;
}

Task<Status> LedgerHandle::refresh_lac() {
  auto self = shared_from_this();
  int64_t best = lac_;
  int answered = 0;
  for (const std::string& bookie : metadata_.segments.back().ensemble) {
    auto r = co_await bk_.client().read_lac(bookie, metadata_.ledger_id);
    if (!r.ok()) continue;
    ++answered;
    if (r->status() == bookie_wire::OK) best = std::max(best, r->lac());
  }
  if (answered == 0) {
    co_return ledger_error(Errc::kUnavailable, metadata_.ledger_id,
                           "no bookie of the last ensemble answered");
  }
  lac_ = best;
  co_return Status::OK();
}

// ---------------------------------------------------------------------------------------
// Recovery

Task<Status> LedgerHandle::recover() {
  auto self = shared_from_this();
  const int E = metadata_.ensemble_size, Qw = metadata_.write_quorum, Qa = metadata_.ack_quorum;
  // 1. Mark the ledger in recovery (a writer's later metadata update then fails by CAS).
  if (metadata_.state == LedgerState::kOpen) {
    LedgerMetadata updated = metadata_;
    updated.state = LedgerState::kInRecovery;
    Status st = co_await write_metadata(std::move(updated));
    if (!st.ok()) co_return st;
  }
  // 2. Fence every bookie of the last ensemble at once; collect what LAC each knows. No write
  //    set may keep Qa unfenced bookies, or the old writer could still complete adds: once
  //    every write set has Qw - Qa + 1 fenced, recovery goes on (as BookKeeper's does) without
  //    waiting for the rest, so that a bookie that does not answer (cut off, paused) costs
  //    nothing rather than the request timeout. Its answer, if any, lands in the shared round.
  const std::vector<std::string> ensemble = metadata_.segments.back().ensemble;
  auto fences = std::make_shared<FenceRound>();
  fences->answers.assign(ensemble.size(), FenceRound::kWaiting);
  fences->max_lac = metadata_.segments.back().first_entry_id - 1;
  for (size_t i = 0; i < ensemble.size(); ++i) {
    bookie_wire::ReadRequest fence;
    fence.set_ledger_id(metadata_.ledger_id);
    fence.set_entry_id(-1);
    fence.set_fence(true);
    fence.set_master_key(master_key_);
    ++fences->running;
    auto share = std::make_shared<JoinerShare>(fences);
    auto on_answer = [fences, share, i](std::exception_ptr thrown, FenceReply reply) {
      fences->answers[i] = thrown ? FenceRound::kUnreachable : reply.answer;
      if (!thrown && reply.answer == FenceRound::kFenced) {
        fences->max_lac = std::max(fences->max_lac, reply.lac);
      }
      share->finish();
    };
    asio::co_spawn(bk_.executor(), fence_one(bk_.client(), ensemble[i], std::move(fence)),
                   std::move(on_answer));
  }
  // The write set short of Qw - Qa + 1 fenced, or -1 when none is.
  auto uncovered = [&]() {
    for (int start = 0; start < E; ++start) {
      int covered = 0;
      for (int k = 0; k < Qw; ++k) {
        covered += fences->answers[static_cast<size_t>((start + k) % E)] == FenceRound::kFenced;
      }
      if (covered < Qw - Qa + 1) return start;
    }
    return -1;
  };
  while (fences->running > 0 && uncovered() >= 0) co_await next_completion(fences);
  if (const int start = uncovered(); start >= 0) {
    int covered = 0;
    for (int k = 0; k < Qw; ++k) {
      covered += fences->answers[static_cast<size_t>((start + k) % E)] == FenceRound::kFenced;
    }
    co_return ledger_error(Errc::kUnavailable, metadata_.ledger_id,
                           fmt::format("recovery could fence only {} of the bookies of write "
                                       "set {}; need {}",
                                       covered, start, Qw - Qa + 1));
  }
  // Positions whose bookie did not answer at all (or not yet): reads try them last, and the
  // tail's recovery adds go to a replacement in their place.
  std::vector<size_t> unreachable;
  for (size_t i = 0; i < ensemble.size(); ++i) {
    const FenceRound::Answer answer = fences->answers[i];
    if (answer == FenceRound::kUnreachable || answer == FenceRound::kWaiting) {
      unreachable.push_back(i);
      if (answer == FenceRound::kWaiting) {
        suspects_.insert(ensemble[i]);
        log_.with("bookie", ensemble[i])
            .info("recovery goes on without the fence of a bookie that has not answered (every "
                  "write set has {} fenced)",
                  Qw - Qa + 1);
      }
    }
  }
  const int64_t max_lac = fences->max_lac;
  lac_ = max_lac;
  recovering_ = true;
  // Recovery adds of the tail go to a replacement in place of a bookie that is down (the
  // ensemble change BookKeeper's recovery makes through its write path): otherwise an entry
  // whose write set holds the dead bookie could reach only Qa - 1 copies and recovery could
  // never finish. The tail's segment is recorded at the close.
  std::vector<std::string> tail_ensemble = ensemble;
  bool tail_substituted = false;
  if (!unreachable.empty()) {
    auto available = co_await bk_.available_bookies();
    if (available.ok()) {
      std::set<std::string> excluded(ensemble.begin(), ensemble.end());
      for (size_t i : unreachable) {
        auto r = bk_.placement().replace_bookie(tail_ensemble, static_cast<int>(i), Qw, Qa,
                                                *available, excluded);
        if (!r.ok()) {
          bk_.count_placement_failure(true);
          continue;  // its recovery adds fail; enough others may still answer
        }
        excluded.insert(*r);
        log_.with("bookie", ensemble[i])
            .info("recovery writes the tail to {} in place of the unreachable bookie", *r);
        tail_ensemble[i] = std::move(r).value();
        tail_substituted = true;
      }
    }
  }
  // 3. Read forward from the highest LAC (its header carries the ledger's running length),
  //    then the tail past it, each entry re-replicated with recovery adds as soon as it was
  //    read, up to the first entry that is missing (Qw - Qa + 1 bookies without it are
  //    enough). Every read started is waited for before returning, and every entry until Qa
  //    bookies stored it: copies still on their way to a bookie that does not answer land, or
  //    fail, after the recovery (their handlers hold only the shared state and the handle).
  const int window = bk_.options().max_parallel_reads;
  const int64_t start = std::max<int64_t>(0, max_lac);
  ReadAhead reads(*this, start, std::numeric_limits<int64_t>::max());
  auto adds = std::make_shared<RecoveryAdds>();
  int64_t last = start - 1;  // last entry confirmed or recovered so far
  int64_t length = 0;        // payload bytes of entries [0, last]
  Status error;
  for (int64_t e = start;; ++e) {
    EntryRead got = co_await reads.next();
    if (!got.status.ok()) {
      if (e > max_lac && got.negatives >= Qw - Qa + 1) break;  // could never have been acked
      if (e > max_lac) {
        error = ledger_error(Errc::kUnavailable, metadata_.ledger_id,
                             fmt::format("recovery cannot tell whether entry {} exists: {}", e,
                                         got.status.to_string()));
      } else {
        error = ledger_error(Errc::kUnavailable, metadata_.ledger_id,
                             fmt::format("recovery cannot read confirmed entry {} (LAC {}): {}", e,
                                         max_lac, got.status.to_string()));
      }
      break;
    }
    last = e;
    length = got.running_length;
    if (e <= max_lac) continue;
    protocol::EntryHeader header;
    header.ledger_id = metadata_.ledger_id;
    header.entry_id = e;
    header.lac = e - 1;
    header.length = got.running_length;
    BufferChain payload(std::move(got.payload));
    BufferChain packaged = protocol::package_entry(header, payload);
    const std::vector<int> write_set = metadata_.write_set(e);
    const std::vector<std::string>& writers = tail_ensemble;  // e is past the LAC: last segment
    ++adds->running;
    adds->entries[e] = RecoveryAdds::Entry{0, static_cast<int>(write_set.size()), false};
    // One share for the entry: its Qa-th stored copy finishes it (as an add completes at Qa;
    // a bookie that does not answer holds nothing up), or the last answer short of Qa.
    auto share = std::make_shared<JoinerShare>(adds);
    for (int index : write_set) {
      bookie_wire::AddRequest add;
      add.set_ledger_id(metadata_.ledger_id);
      add.set_entry_id(e);
      add.set_master_key(master_key_);
      add.set_recovery(true);
      std::string bookie = writers[static_cast<size_t>(index)];
      BufferChain copy = packaged;
      auto on_done = [adds, share, self, e, Qa](std::exception_ptr thrown, bool stored) {
        RecoveryAdds::Entry& entry = adds->entries[e];
        if (!thrown && stored) ++entry.acks;
        --entry.left;
        if (!entry.done && (entry.acks >= Qa || entry.left == 0)) {
          entry.done = true;
          if (entry.acks < Qa && adds->error.ok()) {
            adds->error = ledger_error(Errc::kUnavailable, self->id().value(),
                                       fmt::format("recovery could re-replicate entry {} to "
                                                   "only {} bookies; need {}",
                                                   e, entry.acks, Qa));
          }
          share->finish();
        }
        if (entry.left == 0) adds->entries.erase(e);
      };
      asio::co_spawn(bk_.executor(),
                     recovery_add(bk_.client(), std::move(bookie), std::move(add), std::move(copy)),
                     std::move(on_done));
    }
    while (adds->running >= window && adds->error.ok()) co_await next_completion(adds);
    if (!adds->error.ok()) break;
  }
  co_await reads.drain();
  recovering_ = false;
  while (adds->running > 0) co_await next_completion(adds);
  if (!error.ok()) co_return error;
  if (!adds->error.ok()) co_return adds->error;
  lac_ = last;
  // 4. Close: from now on everyone agrees on the last entry.
  LedgerMetadata updated = metadata_;
  updated.state = LedgerState::kClosed;
  updated.last_entry_id = lac_;
  updated.length = length;  // the last entry's running length, as close() counts it
  if (tail_substituted && last > max_lac) {
    // Entries past max_lac now live on the tail ensemble.
    const int64_t tail_first = std::max<int64_t>(0, max_lac + 1);
    if (updated.segments.back().first_entry_id == tail_first) {
      updated.segments.back().ensemble = tail_ensemble;
    } else {
      Segment tail;
      tail.first_entry_id = tail_first;
      tail.ensemble = tail_ensemble;
      updated.segments.push_back(std::move(tail));
    }
  }
  Status st = co_await write_metadata(std::move(updated));
  if (!st.ok()) co_return st;
  log_.info("recovered and closed at entry {} ({} entries re-replicated, {} bytes)", lac_,
            lac_ - max_lac, length);
  co_return Status::OK();
}

}  // namespace magnetar::ledger
