// On-disk format. Integers are big-endian.
//
//   <dir>/current/<id>.txn    id: the file id as 16 lowercase hex digits; ids strictly increase
//                             (creation time in ms, bumped past every existing id)
//   <dir>/current/<id>.spare  a file a checkpoint released, kept to be written again
//                             (journalReuseFiles); never replayed
//   file    := header record*
//   header  := "MGJL" version:u32 file_id:u64                                  (16 bytes)
//   record  := length:u32 crc:u32 body                   length = |body| = 17 + |payload|
//   body    := type:u8 ledger_id:i64 entry_id:i64 payload  type: 1 entry, 2 master key,
//                                                          3 fence, 4 explicit LAC
//   crc     := version 2: crc32c(file_id:u64 body), the file's id as a seed
//              version 1 (files written before reuse existed): crc32c(body)
//
//   <dir>/lastMark := file_id:u64 offset:u64 crc32c(the 16 bytes before):u32     (20 bytes)
//
// A record never spans files. The file's size (not its preallocated extent) or the first
// all-zero record prefix ends it: the writer keeps zeros written ahead of the data (closing a
// file trims those never overwritten). A record whose length is impossible, which is cut
// short, or whose CRC does not match is a torn tail: a crash mid-write leaves one, and
// nothing after it in that file was ever acknowledged. A reused file holds its earlier
// contents past the new data; their CRCs were seeded with the earlier id, so the first of
// them ends the file like a torn tail (a false match is a 1 in 2^32 chance per file end).
// Reuse saves the zeros: the old contents are written blocks inside the file's size, so the
// writer overwrites them without any zero-fill and its fdatasyncs carry data only.
//
// Threads. Appenders push onto queue_ (under mu_). The writer thread owns the current file's
// append handle and the group buffer; it hands each written group to the sync thread as a
// SyncRequest. The sync thread owns a second handle of the same file, used only for
// fdatasync (which covers the inode, whichever descriptor wrote), coalesces every request
// queued while it was syncing into one fdatasync, and hands completions to the callback
// thread, which runs them in order (with sync_data off the writer hands them over itself,
// once written). Appenders wait while queue_size records are in flight; the callback thread
// wakes them as it completes records. No lock is ever held across I/O, except checkpoint_mu_,
// which only serializes checkpoint_complete() callers.

#include "bookie/journal/journal.h"

#include <fmt/format.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "common/crc32c.h"
#include "common/endian.h"
#include "common/logging.h"
#include "common/metrics.h"

namespace magnetar::bookie {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kJournalMagic[4] = {'M', 'G', 'J', 'L'};
constexpr uint32_t kVersion = 2;  // written; 1 is still replayed
constexpr uint64_t kHeaderSize = 16;
constexpr size_t kRecordPrefixSize = 8;  // length + crc
constexpr size_t kBodyFixedSize = 17;    // type + ledger_id + entry_id
constexpr size_t kMaxPayload = UINT32_MAX - kBodyFixedSize;
constexpr size_t kMarkSize = 20;
constexpr size_t kReadChunk = 1 << 20;
// Zeros are kept written this far ahead of the data, refilled when half is used. Each refill
// is written by the next fdatasync and adds to that sync's time, so the distance is kept
// small (measurements: docs/performance.md, "The journal's zeros, smaller").
constexpr uint64_t kZeroAhead = 1 << 20;
// With sync_data=false, written data is fdatasync'd at least this often
// (journalPageCacheFlushIntervalMSec).
constexpr auto kLazySyncInterval = std::chrono::seconds(1);
// With remove_pages_from_cache, synced pages are dropped in steps of this size, ending on a
// multiple of it: one system call per step rather than one per fdatasync (thousands a second
// at 10 k adds/s). It is the largest folio the page cache uses (folios are aligned to their
// size), so no folio straddles a step's end: one that did would hold the page being written,
// fail to go, and make the kernel drain every CPU's page lists to try again.
constexpr uint64_t kDropStep = 2 << 20;
// An fdatasync this slow is logged (at most once per interval, except those over
// kVerySlowSyncMs, always logged): a receipt stall's cause.
constexpr double kSlowSyncMs = 20;
constexpr double kVerySlowSyncMs = 100;
constexpr auto kSlowSyncLogInterval = std::chrono::seconds(1);
// Released files kept for reuse, at most (journalReuseFiles): one is enough for the next roll.
constexpr size_t kMaxSpares = 1;

std::string current_dir(const std::string& dir) {
  return dir + "/current";
}
std::string mark_path(const std::string& dir) {
  return dir + "/lastMark";
}

std::string format_position(const JournalPosition& p) {
  return fmt::format("{:016x}:{}", p.file_id, p.offset);
}

std::string spare_path(const std::string& dir, uint64_t id) {
  return fmt::format("{}/{:016x}.spare", current_dir(dir), id);
}

// The id of a "<16 hex><ext>" name; nullopt for anything else (temp files, strays).
std::optional<uint64_t> parse_file_name(const std::string& name, std::string_view ext) {
  if (name.size() != 16 + ext.size() || name.compare(16, ext.size(), ext) != 0) {
    return std::nullopt;
  }
  uint64_t id = 0;
  for (size_t i = 0; i < 16; ++i) {
    char c = name[i];
    int digit = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
    if (digit < 0) return std::nullopt;
    id = (id << 4) | static_cast<uint64_t>(digit);
  }
  return id;
}

// Ids of the journal files (ext ".txn") or spares (".spare") in <dir>/current, ascending;
// empty when the directory is absent.
Result<std::vector<uint64_t>> list_file_ids(Env& env, const std::string& dir,
                                            std::string_view ext = ".txn") {
  std::string cur = current_dir(dir);
  if (!env.exists(cur)) return std::vector<uint64_t>{};
  MAGNETAR_ASSIGN_OR_RETURN(std::vector<std::string> names, env.list_dir(cur));
  std::vector<uint64_t> ids;
  for (const auto& n : names) {
    if (auto id = parse_file_name(n, ext)) ids.push_back(*id);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::string encode_header(uint64_t file_id) {
  std::string h(kHeaderSize, '\0');
  auto* p = reinterpret_cast<uint8_t*>(h.data());
  std::memcpy(p, kJournalMagic, 4);
  store_be32(p + 4, kVersion);
  store_be64(p + 8, file_id);
  return h;
}

// What a file's record CRCs start from: its id in version 2, nothing in version 1.
uint32_t record_seed(uint32_t version, uint64_t file_id) {
  if (version < 2) return 0;
  uint8_t id[8];
  store_be64(id, file_id);
  return crc32c::value(id, sizeof id);
}

// Appends the encoded record to `out`; the caller checked the payload size. `seed`: the
// file's record_seed().
void encode_record(std::string& out, const JournalRecord& r, uint32_t seed) {
  size_t at = out.size();
  size_t body = kBodyFixedSize + r.payload.size();
  out.resize(at + kRecordPrefixSize + body);
  auto* p = reinterpret_cast<uint8_t*>(out.data()) + at;
  store_be32(p, static_cast<uint32_t>(body));
  uint8_t* b = p + kRecordPrefixSize;
  b[0] = static_cast<uint8_t>(r.type);
  store_be64(b + 1, static_cast<uint64_t>(r.ledger_id.value()));
  store_be64(b + 9, static_cast<uint64_t>(r.entry_id.value()));
  if (!r.payload.empty()) std::memcpy(b + kBodyFixedSize, r.payload.data(), r.payload.size());
  store_be32(p + 4, crc32c::extend(seed, b, body));
}

std::string encode_mark(const JournalPosition& m) {
  std::string s(kMarkSize, '\0');
  auto* p = reinterpret_cast<uint8_t*>(s.data());
  store_be64(p, m.file_id);
  store_be64(p + 8, m.offset);
  store_be32(p + 16, crc32c::value(p, 16));
  return s;
}

// The mark in <dir>/lastMark; the start of everything when there is none.
Result<JournalPosition> read_mark(Env& env, const std::string& dir) {
  std::string path = mark_path(dir);
  if (!env.exists(path)) return JournalPosition{};
  MAGNETAR_ASSIGN_OR_RETURN(std::string s, env.read_small_file(path));
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  if (s.size() != kMarkSize || load_be32(p + 16) != crc32c::value(p, 16)) {
    return Status(Errc::kCorruption, fmt::format("'{}' is not a valid journal mark", path));
  }
  return JournalPosition{load_be64(p), load_be64(p + 8)};
}

// What a journal failure tells appenders: disk full, or an I/O error (whatever else the Env
// said), keeping the message that names the file.
Status journal_error(const Status& st) {
  if (st.is(Errc::kResourceExhausted) || st.is(Errc::kIoError)) return st;
  return Status(Errc::kIoError, st.message());
}

uint64_t now_ms() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

void name_thread(const char* name) {
  ::pthread_setname_np(::pthread_self(), name);
}

// Process-wide metric families, labelled by journal directory.
struct Families {
  metrics::Family<metrics::Counter>* adds;
  metrics::Family<metrics::Counter>* rejected;
  metrics::Family<metrics::Counter>* queue_full_waits;
  metrics::Family<metrics::Counter>* bytes;
  metrics::Family<metrics::Counter>* syncs;
  metrics::Family<metrics::Histogram>* sync_latency;
  metrics::Family<metrics::Histogram>* write_latency;
  metrics::Family<metrics::Histogram>* add_latency;
  metrics::Family<metrics::Histogram>* group_size;
  metrics::Family<metrics::Gauge>* in_flight;
  metrics::Family<metrics::Counter>* groups;  // labels: journal, reason (GroupReason)
};

template <typename T>
T* must(Result<T*> r) {
  MAGNETAR_ASSERT(r.ok(), r.status().to_string());
  return *r;
}

const Families& families() {
  static const Families f = [] {
    auto& reg = metrics::default_registry();
    static const double kGroupBuckets[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096};
    return Families{
        must(reg.counter("magnetar_bookie_journal_add_total", "Records accepted by the journal",
                         {"journal"})),
        must(reg.counter("magnetar_bookie_journal_add_rejected_total",
                         "Appends rejected (journal failed or closing, record too large)",
                         {"journal"})),
        must(reg.counter("magnetar_bookie_journal_queue_full_waits_total",
                         "Appends that waited because journalQueueSize records were in flight",
                         {"journal"})),
        must(reg.counter("magnetar_bookie_journal_written_bytes_total",
                         "Bytes written to journal files", {"journal"})),
        must(reg.counter("magnetar_bookie_journal_sync_total", "fdatasync calls on journal files",
                         {"journal"})),
        must(reg.histogram("magnetar_bookie_journal_sync_latency_ms",
                           "Latency of one journal fdatasync, ms", {"journal"},
                           metrics::fine_latency_buckets_ms())),
        must(reg.histogram("magnetar_bookie_journal_write_latency_ms",
                           "Latency of writing one group (with the space kept allocated and "
                           "zeroed ahead of it), ms",
                           {"journal"}, metrics::fine_latency_buckets_ms())),
        must(reg.histogram("magnetar_bookie_journal_add_latency_ms",
                           "From a record's append to its callback (written and synced), ms",
                           {"journal"}, metrics::fine_latency_buckets_ms())),
        must(reg.histogram("magnetar_bookie_journal_group_size",
                           "Records written by one journal write()", {"journal"}, kGroupBuckets)),
        must(reg.gauge("magnetar_bookie_journal_queue_size",
                       "Journal records accepted and not yet completed", {"journal"})),
        must(reg.counter("magnetar_bookie_journal_groups_total",
                         "Groups the journal writer wrote, by why it wrote them then: idle (no "
                         "sync in flight), size (journalBufferedWritesThreshold), timer "
                         "(journalMaxGroupWaitMSec while a sync was in flight), empty_queue "
                         "(journalFlushWhenQueueEmpty), close",
                         {"journal", "reason"})),
    };
  }();
  return f;
}

// Why the writer wrote a group when it did (magnetar_bookie_journal_groups_total{reason}).
enum class GroupReason { kIdle, kSize, kTimer, kEmptyQueue, kClose };
constexpr const char* kGroupReasonNames[] = {"idle", "size", "timer", "empty_queue", "close"};

// A record's callback with its outcome, run on the callback thread.
struct Completion {
  Journal::AppendCallback done;
  Status status;
  JournalPosition position;
  bool counted = true;  // accepted, so it holds a slot of in_flight_
  Clock::time_point appended{};  // unset for records never accepted
};

// Reads a journal file front to back in large chunks.
class ChunkReader {
 public:
  ChunkReader(const RandomAccessFile& file, uint64_t size) : file_(file), size_(size) {}

  // The n bytes at `offset`, fewer only at the end of the file. May share a read block.
  Result<Buffer> get(uint64_t offset, size_t n) {
    if (offset >= chunk_offset_ && offset + n <= chunk_offset_ + chunk_.size()) {
      return chunk_.slice(offset - chunk_offset_, n);
    }
    MAGNETAR_ASSIGN_OR_RETURN(chunk_, file_.read(offset, std::max(n, kReadChunk)));
    chunk_offset_ = offset;
    return chunk_.slice(0, std::min(n, chunk_.size()));
  }
  uint64_t size() const { return size_; }

 private:
  const RandomAccessFile& file_;
  uint64_t size_;
  Buffer chunk_;
  uint64_t chunk_offset_ = 0;
};

using ReplayFn = std::function<Status(const JournalRecord&, JournalPosition)>;

// Replays one file from `start` (at least the header size) to its end or its torn tail.
Status replay_file(Env& env, const std::string& dir, uint64_t id, uint64_t start,
                   const ReplayFn& fn, const log::Logger& log) {
  std::string path = journal_file_path(dir, id);
  MAGNETAR_ASSIGN_OR_RETURN(auto file, env.open_file(path));
  MAGNETAR_ASSIGN_OR_RETURN(uint64_t size, file->size());
  if (size < kHeaderSize) {
    // Created, but the crash came before its header was synced: nothing in it was acked.
    log.warn("journal file {} has no complete header ({} bytes): skipped", path, size);
    return Status::OK();
  }
  ChunkReader reader(*file, size);
  MAGNETAR_ASSIGN_OR_RETURN(Buffer header, reader.get(0, kHeaderSize));
  const uint8_t* h = header.data();
  const uint32_t version = header.size() < kHeaderSize ? 0 : load_be32(h + 4);
  if (header.size() < kHeaderSize || std::memcmp(h, kJournalMagic, 4) != 0 || version < 1 ||
      version > kVersion || load_be64(h + 8) != id) {
    return Status(Errc::kCorruption, fmt::format("'{}' has no valid journal header", path));
  }
  const uint32_t seed = record_seed(version, id);

  uint64_t pos = std::max(start, kHeaderSize);
  bool zeros = false;  // the data ended where the zero-filled space begins
  while (pos + kRecordPrefixSize <= size) {
    MAGNETAR_ASSIGN_OR_RETURN(Buffer prefix, reader.get(pos, kRecordPrefixSize));
    if (prefix.size() < kRecordPrefixSize) break;
    uint32_t length = load_be32(prefix.data());
    uint32_t crc = load_be32(prefix.data() + 4);
    if (length == 0 && crc == 0) {
      zeros = true;
      break;
    }
    if (length < kBodyFixedSize || length > size - pos - kRecordPrefixSize) break;
    MAGNETAR_ASSIGN_OR_RETURN(Buffer body, reader.get(pos + kRecordPrefixSize, length));
    if (body.size() < length || crc32c::extend(seed, body.data(), length) != crc) break;
    pos += kRecordPrefixSize + length;
    uint8_t type = body.data()[0];
    if (type < 1 || type > 4) {
      log.warn("journal file {}: skipping record of unknown type {} ending at {}", path, type, pos);
      continue;
    }
    JournalRecord record;
    record.type = static_cast<JournalRecordType>(type);
    record.ledger_id = LedgerId{static_cast<int64_t>(load_be64(body.data() + 1))};
    record.entry_id = EntryId{static_cast<int64_t>(load_be64(body.data() + 9))};
    // A copy, so a caller keeping payloads does not pin whole read chunks.
    record.payload = Buffer::copy_of(body.data() + kBodyFixedSize, length - kBodyFixedSize);
    MAGNETAR_TRY(fn(record, JournalPosition{id, pos}));
  }
  if (zeros) {
    log.debug("journal file {}: data ends at offset {}; zero-filled space follows", path, pos);
  } else if (pos < size) {
    log.info("journal file {}: data ends at offset {}; the {} bytes after it (a torn record, or "
             "what a reused file held before) are ignored",
             path, pos, size - pos);
  }
  return Status::OK();
}

}  // namespace

std::string journal_file_path(const std::string& dir, uint64_t file_id) {
  return fmt::format("{}/{:016x}.txn", current_dir(dir), file_id);
}

// Largest group the writer syncs itself when the journal is idle (Impl::sync_inline()).
constexpr size_t kInlineSyncMaxBytes = 64 << 10;

struct Journal::Impl {
  // An accepted record waiting for the writer.
  struct Pending {
    JournalRecord record;
    AppendCallback done;
    Clock::time_point enqueued;
  };

  // A written group (or a failed one), from the writer to the sync thread.
  struct SyncRequest {
    // Set on the first request of every file: the sync thread's handle for it (ownership
    // passes to the sync thread). The file's header is already durable.
    std::unique_ptr<WritableFile> new_file;
    std::string new_path;
    JournalPosition end;                  // just past the last byte written
    std::vector<Completion> completions;  // in append order
    bool must_sync = false;               // roll or close: sync even when !sync_data
    bool last = false;                    // close: the sync thread exits after this
    Status error;                         // not OK: the writer failed this group
  };

  Impl(JournalOptions o, Env& e)
      : options(std::move(o)), env(e), log(log::Logger("bookie").with("journal", options.dir)) {
    const Families& f = families();
    adds = f.adds->get(options.dir);
    rejected = f.rejected->get(options.dir);
    queue_full_waits = f.queue_full_waits->get(options.dir);
    bytes = f.bytes->get(options.dir);
    syncs = f.syncs->get(options.dir);
    sync_latency = f.sync_latency->get(options.dir);
    write_latency = f.write_latency->get(options.dir);
    add_latency = f.add_latency->get(options.dir);
    group_size = f.group_size->get(options.dir);
    in_flight_gauge = f.in_flight->get(options.dir);
    for (size_t i = 0; i < std::size(kGroupReasonNames); ++i) {
      groups_by_reason[i] = f.groups->get(options.dir, std::string(kGroupReasonNames[i]));
    }
  }

  ~Impl() {
    const Families& f = families();
    f.adds->remove(options.dir);
    f.rejected->remove(options.dir);
    f.queue_full_waits->remove(options.dir);
    f.bytes->remove(options.dir);
    f.syncs->remove(options.dir);
    f.sync_latency->remove(options.dir);
    f.write_latency->remove(options.dir);
    f.add_latency->remove(options.dir);
    f.group_size->remove(options.dir);
    f.in_flight->remove(options.dir);
    for (const char* reason : kGroupReasonNames) f.groups->remove(options.dir, std::string(reason));
  }

  const JournalOptions options;
  Env& env;
  const log::Logger log;

  std::shared_ptr<metrics::Counter> adds, rejected, queue_full_waits, bytes, syncs;
  std::shared_ptr<metrics::Histogram> sync_latency, write_latency, add_latency, group_size;
  std::shared_ptr<metrics::Gauge> in_flight_gauge;
  std::shared_ptr<metrics::Counter> groups_by_reason[std::size(kGroupReasonNames)];

  // --- Shared state, guarded by mu_. ---
  mutable std::mutex mu_;
  std::condition_variable writer_cv_;   // the writer waits for records / stop
  std::condition_variable durable_cv_;  // a rolling writer waits for the old file's sync
  std::condition_variable space_cv_;    // appenders wait for in_flight_ < queue_size
  size_t space_waiters_ = 0;
  std::deque<Pending> queue_;
  size_t queued_bytes_ = 0;  // encoded size of queue_
  size_t in_flight_ = 0;     // accepted, callback not yet run; <= queue_size
  bool stopping_ = false;
  Status failure_;  // sticky; set once
  JournalPosition last_durable_;
  std::function<void(const Status&)> on_failure_;
  bool failure_notified_ = false;
  // Published by the writer before it waits, so appenders wake it only when it must act:
  // on the first queued record (when it would drain at once), or once enough bytes wait to
  // fill its open group.
  bool writer_wake_on_any_ = true;
  size_t writer_wake_bytes_ = SIZE_MAX;
  // Sync requests the writer handed over that the sync thread has not finished (synced and
  // completed). While there are none, the writer writes a group at once: an idle journal
  // syncs a lone record without waiting; records only group while a sync is in flight.
  size_t syncs_pending_ = 0;
  // When the latest fdatasync began (Clock ticks), for sync_pacing; written by whichever
  // thread syncs.
  std::atomic<Clock::rep> last_sync_start_{0};
  // Zero refills written so far (the writer counts), and the count the latest fdatasync
  // covered (whichever thread syncs): a slow sync's log line says whether it carried one.
  std::atomic<uint64_t> zero_refills_{0};
  uint64_t zero_refills_synced_ = 0;
  Clock::time_point last_slow_sync_log_{};

  // --- Writer thread state: touched by the writer only (and by open() before it starts). ---
  std::unique_ptr<WritableFile> file_;
  std::string file_path_;
  uint64_t file_id_ = 0;
  uint64_t preallocated_ = 0;
  uint64_t zeroed_ = 0;  // written space (zeros, or a reused file's old bytes) up to here
  uint32_t seed_ = 0;    // record_seed() of the current file
  std::string buf_;                // encoded records of the open group
  std::vector<Completion> group_;  // their callbacks, positions set
  Clock::time_point group_start_;  // enqueue time of the group's oldest record
  bool writer_failed_ = false;

  // --- Writer -> sync thread. ---
  std::mutex sync_mu_;
  std::condition_variable sync_cv_;
  std::deque<SyncRequest> sync_queue_;

  // --- Sync thread state: touched by the sync thread only (and by open(), and by the
  // writer while it holds the sync thread's part: claim_idle_sync()). ---
  std::unique_ptr<WritableFile> sync_file_;
  std::string sync_path_;
  JournalPosition written_;  // end of what the writer reported written
  JournalPosition synced_;   // end of what the last successful fdatasync covered
  JournalPosition dropped_;  // remove_pages_from_cache: the current file's pages below are gone
  bool drop_failed_ = false;                         // logged once
  std::optional<Clock::time_point> unsynced_since_;  // !sync_data: oldest unsynced write
  Status sync_failed_;

  // --- Sync/appenders -> callback thread. ---
  std::mutex cb_mu_;
  std::condition_variable cb_cv_;
  std::deque<Completion> cb_queue_;
  bool failure_notice_ = false;
  bool cb_stop_ = false;
  bool cb_running_ = false;  // the callback thread is running a batch

  // --- Checkpoints. ---
  std::mutex checkpoint_mu_;  // serializes checkpoint_complete(); held across its I/O
  JournalPosition last_mark_;

  std::thread writer_thread_, sync_thread_, cb_thread_;

  // ---------------------------------------------------------------- files

  // Creates journal file `id` (reusing a spare when there is one) and makes it durable
  // (header, directory entry); on success the writer's handle is installed and the sync
  // thread's handle returned.
  Result<std::unique_ptr<WritableFile>> create_file(uint64_t id) {
    std::string path = journal_file_path(options.dir, id);
    uint64_t reused = 0;  // bytes of earlier contents the new data will overwrite
    std::unique_ptr<WritableFile> f;
    if (options.reuse_files) f = take_spare(id, path, &reused);
    if (!f) {
      MAGNETAR_ASSIGN_OR_RETURN(f, env.new_writable_file(path));
      std::string header = encode_header(id);
      MAGNETAR_TRY(f->append(header.data(), header.size()));
    }
    uint64_t prealloc = std::min(options.prealloc_size, options.max_file_size);
    if (prealloc > kHeaderSize) MAGNETAR_TRY(f->preallocate(prealloc));
    const uint64_t zeroed =
        std::max(std::min(kHeaderSize + kZeroAhead, options.max_file_size), reused);
    MAGNETAR_TRY(f->zero_fill(zeroed));  // nothing to do when the old contents reach that far
    MAGNETAR_TRY(f->sync());
    MAGNETAR_TRY(env.sync_dir(current_dir(options.dir)));
    MAGNETAR_ASSIGN_OR_RETURN(auto sync_handle, env.reopen_writable_file(path));
    file_ = std::move(f);
    file_path_ = path;
    file_id_ = id;
    seed_ = record_seed(kVersion, id);
    preallocated_ = std::max({prealloc, kHeaderSize, reused});
    zeroed_ = std::max(zeroed, kHeaderSize);
    log.info("journal file {} started", path);
    return sync_handle;
  }

  // The oldest spare, made journal file `id`: its header is rewritten and synced under the
  // spare's name, then it is renamed (a crash in between leaves a spare, never a .txn file
  // with a wrong header). `reused` gets its size. A spare that cannot be reused is removed,
  // and nullptr returned: the caller creates a new file.
  std::unique_ptr<WritableFile> take_spare(uint64_t id, const std::string& path,
                                           uint64_t* reused) {
    auto spares = list_file_ids(env, options.dir, ".spare");
    if (!spares.ok() || spares->empty()) return nullptr;
    const std::string spare = spare_path(options.dir, spares->front());
    auto attempt = [&]() -> Result<std::unique_ptr<WritableFile>> {
      MAGNETAR_ASSIGN_OR_RETURN(auto reader, env.open_file(spare));
      MAGNETAR_ASSIGN_OR_RETURN(*reused, reader->size());
      MAGNETAR_ASSIGN_OR_RETURN(auto f, env.recycle_writable_file(spare));
      std::string header = encode_header(id);
      MAGNETAR_TRY(f->append(header.data(), header.size()));
      MAGNETAR_TRY(f->sync());
      MAGNETAR_TRY(env.rename(spare, path));
      return f;
    };
    auto f = attempt();
    if (f.ok()) {
      log.info("journal file {} reuses {} ({} bytes)", path, spare, *reused);
      return std::move(*f);
    }
    log.warn("cannot reuse journal file {}, starting a new file: {}", spare,
             f.status().to_string());
    *reused = 0;
    (void)env.remove_file(spare);
    return nullptr;
  }

  // Reserves disk space past `end` in prealloc_size chunks, never far beyond max_file_size,
  // and keeps zeros written ahead of the data (see WritableFile::zero_fill): groups are
  // then written over allocated blocks inside the file's size, and each fdatasync flushes
  // data only.
  Status ensure_preallocated(uint64_t end) {
    if (end > preallocated_ && options.prealloc_size > 0) {
      uint64_t chunk = options.prealloc_size;
      uint64_t target = (end / chunk + 1) * chunk;
      target = std::max(end, std::min(target, options.max_file_size));
      MAGNETAR_TRY(file_->preallocate(target));
      preallocated_ = target;
    }
    if (zeroed_ < std::min(end + kZeroAhead / 2, options.max_file_size)) {
      const uint64_t target = std::min(end + kZeroAhead, options.max_file_size);
      MAGNETAR_TRY(file_->zero_fill(target));
      zero_refills_.fetch_add(1, std::memory_order_release);
      zeroed_ = target;
    }
    return Status::OK();
  }

  // ---------------------------------------------------------------- failure

  Status failure() const {
    std::lock_guard lock(mu_);
    return failure_;
  }

  // Makes `st` the sticky failure (unless one is set already) and returns the sticky status.
  // The first failure is logged and announced. Called without locks held.
  Status fail(const Status& st, const std::string& path) {
    Status sticky;
    bool first = false;
    {
      std::lock_guard lock(mu_);
      if (failure_.ok()) {
        failure_ = journal_error(st);
        first = true;
      }
      sticky = failure_;
    }
    if (first) {
      log.with("file", path)
          .error("journal failed, nothing more will be written or acknowledged: {}",
                 st.to_string());
      durable_cv_.notify_all();
      writer_cv_.notify_all();
      space_cv_.notify_all();
      post_failure_notice();
    }
    return sticky;
  }

  void post_failure_notice() {
    {
      std::lock_guard lock(cb_mu_);
      failure_notice_ = true;
    }
    cb_cv_.notify_one();
  }

  // ---------------------------------------------------------------- appenders

  void reject(AppendCallback done, Status st) {
    rejected->inc();
    post_completions_one(Completion{std::move(done), std::move(st), {}, false});
  }

  // append(); with `wait` false, a full queue takes nothing (record and done untouched) and
  // false is returned.
  bool append(JournalRecord& record, AppendCallback& done, bool wait) {
    if (record.payload.size() > kMaxPayload) {
      reject(std::move(done),
             Status(Errc::kInvalidArgument,
                    fmt::format("journal record of {} bytes is too large", record.payload.size())));
      return true;
    }
    size_t encoded = kRecordPrefixSize + kBodyFixedSize + record.payload.size();
    Status refused;
    bool wake = false;
    size_t depth = 0;
    {
      std::unique_lock lock(mu_);
      if (in_flight_ >= options.queue_size && failure_.ok() && !stopping_) {
        if (!wait) return false;
        ++space_waiters_;
        queue_full_waits->inc();
        space_cv_.wait(lock, [&] {
          return in_flight_ < options.queue_size || !failure_.ok() || stopping_;
        });
        --space_waiters_;
      }
      if (!failure_.ok()) {
        refused = failure_;
      } else if (stopping_) {
        refused = Status(Errc::kCancelled, "journal is closing");
      } else {
        bool was_empty = queue_.empty();
        queue_.push_back(Pending{std::move(record), std::move(done), Clock::now()});
        queued_bytes_ += encoded;
        depth = ++in_flight_;
        wake = (was_empty && writer_wake_on_any_) || queued_bytes_ >= writer_wake_bytes_;
      }
    }
    if (!refused.ok()) {
      reject(std::move(done), std::move(refused));
      return true;
    }
    adds->inc();
    in_flight_gauge->set(static_cast<double>(depth));
    if (wake) writer_cv_.notify_one();
    return true;
  }

  // ---------------------------------------------------------------- writer thread

  void writer_loop() {
    name_thread("journal-write");
    for (;;) {
      std::deque<Pending> batch;
      Status failed;
      bool stopping = false;
      {
        std::unique_lock lock(mu_);
        if (group_.empty()) {
          writer_wake_on_any_ = true;
          writer_wake_bytes_ = SIZE_MAX;
          writer_cv_.wait(lock, [&] { return !queue_.empty() || stopping_; });
        } else {
          // A sync is in flight (else the group would have been written): sleep until it is
          // done, the group is due, enough bytes wait to fill it, or (when flushing on an
          // empty queue) anything arrives; a failure elsewhere ends the group at once.
          // Or, paced, a sync is not in flight but began under sync_pacing ago: sleep until
          // the pacing interval is over.
          writer_wake_on_any_ = options.flush_when_queue_empty;
          size_t threshold = std::max<size_t>(options.buffered_writes_threshold, 1);
          writer_wake_bytes_ = threshold > buf_.size() ? threshold - buf_.size() : 0;
          while (!((writer_wake_on_any_ && !queue_.empty()) ||
                   queued_bytes_ >= writer_wake_bytes_ || stopping_ || !failure_.ok())) {
            const Clock::time_point now = Clock::now();
            Clock::time_point wake_at = group_start_ + options.max_group_wait;
            if (syncs_pending_ == 0) {
              const Clock::time_point paced = paced_until();
              if (now >= paced) break;
              wake_at = std::min(wake_at, paced);
            }
            if (now >= wake_at) break;
            writer_cv_.wait_until(lock, wake_at);
          }
        }
        writer_wake_on_any_ = false;  // busy: appenders need not wake it
        writer_wake_bytes_ = SIZE_MAX;
        batch.swap(queue_);
        queued_bytes_ = 0;
        failed = failure_;
        stopping = stopping_;
      }
      if (!failed.ok()) writer_failed_ = true;
      for (auto& p : batch) add_record(std::move(p));
      if (!group_.empty() && !writer_failed_) {
        if (auto reason = group_due(stopping)) {
          count_group(*reason);
          flush_group(false);
        }
      }
      if (writer_failed_ && !group_.empty()) fail_group();
      if (stopping) {
        SyncRequest last;
        last.end = JournalPosition{file_id_, file_->size()};
        last.must_sync = true;
        last.last = true;
        push_sync(std::move(last));
        break;
      }
    }
    Status st = file_->close();
    if (!st.ok()) log.warn("closing journal file {}: {}", file_path_, st.to_string());
  }

  // Whether the open group is to be written now, and why; nullopt: it waits for more.
  // Nothing waits while no sync is in flight: grouping only fills the time of a sync.
  std::optional<GroupReason> group_due(bool stopping) {
    if (stopping) return GroupReason::kClose;
    if (buf_.size() >= options.buffered_writes_threshold) return GroupReason::kSize;
    bool idle, queue_empty;
    {
      std::lock_guard lock(mu_);
      idle = syncs_pending_ == 0;
      queue_empty = queue_.empty();
    }
    const Clock::time_point now = Clock::now();
    if (idle && now >= paced_until()) return GroupReason::kIdle;
    if (options.max_group_wait.count() <= 0 || now >= group_start_ + options.max_group_wait) {
      return GroupReason::kTimer;
    }
    if (options.flush_when_queue_empty && queue_empty) return GroupReason::kEmptyQueue;
    return std::nullopt;
  }

  // Before this, an idle journal's group waits (sync_pacing after the last sync began).
  Clock::time_point paced_until() const {
    if (options.sync_pacing.count() <= 0) return Clock::time_point::min();
    return Clock::time_point(Clock::duration(last_sync_start_.load(std::memory_order_relaxed))) +
           options.sync_pacing;
  }

  void count_group(GroupReason reason) { groups_by_reason[static_cast<size_t>(reason)]->inc(); }

  void add_record(Pending p) {
    if (writer_failed_) {
      group_.push_back(Completion{std::move(p.done), Status(), {}, true, p.enqueued});
      return;
    }
    size_t size = kRecordPrefixSize + kBodyFixedSize + p.record.payload.size();
    uint64_t file_end = file_->size() + buf_.size();
    if (file_end > kHeaderSize && file_end + size > options.max_file_size) {
      // The record would carry the file past its limit: finish this file first.
      flush_group(true);
      if (!writer_failed_) roll();
      if (writer_failed_) {
        group_.push_back(Completion{std::move(p.done), Status(), {}, true, p.enqueued});
        return;
      }
    }
    if (group_.empty()) group_start_ = p.enqueued;
    encode_record(buf_, p.record, seed_);
    group_.push_back(Completion{std::move(p.done), Status(),
                                JournalPosition{file_id_, file_->size() + buf_.size()}, true,
                                p.enqueued});
    if (buf_.size() >= options.buffered_writes_threshold) {
      count_group(GroupReason::kSize);
      flush_group(false);
    }
  }

  // Writes the open group with one write() and passes it to the sync thread. `roll`: the
  // file ends here, so the sync thread syncs it even when !sync_data.
  void flush_group(bool roll) {
    const size_t written_bytes = buf_.size();
    if (!buf_.empty()) {
      const auto start = Clock::now();
      Status st = ensure_preallocated(file_->size() + buf_.size());
      if (st.ok()) st = file_->append(buf_.data(), buf_.size());
      write_latency->observe(
          std::chrono::duration<double, std::milli>(Clock::now() - start).count());
      if (!st.ok()) {
        (void)fail(st, file_path_);
        writer_failed_ = true;
        fail_group();
        return;
      }
      bytes->inc(buf_.size());
      group_size->observe(static_cast<double>(group_.size()));
      buf_.clear();
    }
    if (group_.empty() && !roll) return;
    if (!roll && options.sync_data && written_bytes <= kInlineSyncMaxBytes &&
        claim_idle_sync()) {
      sync_inline();
      return;
    }
    SyncRequest req;
    req.end = JournalPosition{file_id_, file_->size()};
    if (options.sync_data) {
      req.completions = std::move(group_);
    } else {
      // Acknowledged once written, here: not behind the sync thread, whose periodic
      // fdatasync of a second's worth of data would hold every ack back meanwhile.
      Status st = failure();
      for (auto& c : group_) c.status = st;
      post_completions(std::move(group_));
    }
    req.must_sync = roll;
    group_.clear();
    push_sync(std::move(req));
  }

  // Takes the sync thread's part while it has nothing to do: true when no sync request is
  // pending, and none will be until sync_inline() gives the part back. Only the writer hands
  // the sync thread work, so meanwhile that thread neither runs nor touches its state.
  bool claim_idle_sync() {
    std::lock_guard lock(mu_);
    if (syncs_pending_ != 0) return false;
    ++syncs_pending_;
    return true;
  }

  // The group just written, synced and completed by the writer itself (claim_idle_sync()
  // holds): on an idle journal a small group costs one thread hand-off fewer (the sync
  // thread's wake-up), which at 10 k adds/s, ~4 k groups a second, is most of the journal's
  // CPU besides the fdatasyncs themselves. A larger group (a busy journal) still goes to the
  // sync thread, so that the next group's write() overlaps its fdatasync.
  void sync_inline() {
    written_ = std::max(written_, JournalPosition{file_id_, file_->size()});
    Status st = sync_now();
    for (auto& c : group_) c.status = st;
    complete_after_sync(std::exchange(group_, {}));
    drop_synced_pages();
    std::lock_guard lock(mu_);
    --syncs_pending_;
  }

  // Hands the open group (never written) to the sync thread to complete with the failure.
  void fail_group() {
    SyncRequest req;
    {
      std::lock_guard lock(mu_);
      req.error = failure_;
    }
    req.completions = std::move(group_);
    group_.clear();
    buf_.clear();
    push_sync(std::move(req));
  }

  // Starts the next file once everything in the current one is durable.
  void roll() {
    JournalPosition old_end{file_id_, file_->size()};
    {
      std::unique_lock lock(mu_);
      durable_cv_.wait(lock, [&] { return last_durable_ >= old_end || !failure_.ok(); });
      if (!failure_.ok()) {
        writer_failed_ = true;
        return;
      }
    }
    Status st = file_->close();
    if (!st.ok()) log.warn("closing journal file {}: {}", file_path_, st.to_string());
    uint64_t id = std::max(now_ms(), file_id_ + 1);
    std::string old_path = file_path_;
    auto sync_handle = create_file(id);
    if (!sync_handle.ok()) {
      (void)fail(sync_handle.status(), journal_file_path(options.dir, id));
      writer_failed_ = true;
      return;
    }
    {
      std::lock_guard lock(mu_);
      last_durable_ = std::max(last_durable_, JournalPosition{id, kHeaderSize});
    }
    SyncRequest req;
    req.new_file = std::move(*sync_handle);
    req.new_path = file_path_;
    req.end = JournalPosition{id, kHeaderSize};
    push_sync(std::move(req));
  }

  void push_sync(SyncRequest req) {
    {
      std::lock_guard lock(mu_);
      ++syncs_pending_;
    }
    {
      std::lock_guard lock(sync_mu_);
      sync_queue_.push_back(std::move(req));
    }
    sync_cv_.notify_one();
  }

  // ---------------------------------------------------------------- sync thread

  void sync_loop() {
    name_thread("journal-sync");
    bool stop = false;
    while (!stop) {
      std::deque<SyncRequest> reqs;
      {
        std::unique_lock lock(sync_mu_);
        auto ready = [&] { return !sync_queue_.empty(); };
        if (unsynced_since_) {
          sync_cv_.wait_until(lock, *unsynced_since_ + kLazySyncInterval, ready);
        } else {
          sync_cv_.wait(lock, ready);
        }
        reqs.swap(sync_queue_);
      }
      if (reqs.empty()) {  // the lazy-sync timer (sync_data == false)
        (void)sync_now();
        drop_synced_pages();
        continue;
      }
      std::vector<Completion> waiting;  // written, acked by the next sync
      bool need_sync = false;
      auto settle = [&] {
        if (!need_sync) return;
        need_sync = false;
        Status st = sync_now();
        for (auto& c : waiting) c.status = st;
        complete_after_sync(std::move(waiting));
        waiting.clear();
        drop_synced_pages();
      };
      for (auto& req : reqs) {
        if (req.new_file) {
          settle();
          // The writer waited for the old file's sync before it started this one.
          MAGNETAR_ASSERT(!sync_failed_.ok() || written_ <= synced_,
                          "journal rolled before its file was synced");
          if (sync_file_) (void)sync_file_->close();
          sync_file_ = std::move(req.new_file);
          sync_path_ = std::move(req.new_path);
          written_ = synced_ = req.end;
          dropped_ = JournalPosition{req.end.file_id, 0};
          continue;
        }
        if (!req.error.ok()) {
          settle();
          for (auto& c : req.completions) c.status = req.error;
          post_completions(std::move(req.completions));
          continue;
        }
        written_ = std::max(written_, req.end);
        if (options.sync_data) {
          std::move(req.completions.begin(), req.completions.end(), std::back_inserter(waiting));
          need_sync = true;
        } else {
          // Acked by the writer once written; the data is synced within kLazySyncInterval.
          if (sync_failed_.ok() && written_ > synced_ && !unsynced_since_) {
            unsynced_since_ = Clock::now();
          }
        }
        if (req.must_sync) need_sync = true;
        if (req.must_sync || req.last) settle();
        if (req.last) stop = true;
      }
      settle();
      // Done with these: if nothing else was handed over meanwhile, the journal is idle and
      // the writer writes whatever it holds at once.
      bool idle;
      {
        std::lock_guard lock(mu_);
        syncs_pending_ -= reqs.size();
        idle = syncs_pending_ == 0;
      }
      if (idle) writer_cv_.notify_one();
    }
    if (sync_file_) (void)sync_file_->close();
  }

  // fdatasync of everything written to the current file. Never retried after a failure.
  Status sync_now() {
    if (!sync_failed_.ok() || written_ <= synced_) {
      unsynced_since_.reset();
      return sync_failed_;
    }
    JournalPosition target = written_;
    const uint64_t refills = zero_refills_.load(std::memory_order_acquire);
    auto start = Clock::now();
    last_sync_start_.store(start.time_since_epoch().count(), std::memory_order_relaxed);
    Status st = sync_file_->sync();
    const auto end = Clock::now();
    const double ms = std::chrono::duration<double, std::milli>(end - start).count();
    sync_latency->observe(ms);
    if (ms >= kSlowSyncMs &&
        (ms >= kVerySlowSyncMs || end - last_slow_sync_log_ >= kSlowSyncLogInterval)) {
      last_slow_sync_log_ = end;
      log.info("journal fdatasync of {} took {:.1f} ms ({} bytes since the previous sync{})",
               sync_path_, ms,
               target.file_id == synced_.file_id ? target.offset - synced_.offset : target.offset,
               refills != zero_refills_synced_ ? ", with a zero refill" : "");
    }
    zero_refills_synced_ = refills;
    syncs->inc();
    if (!st.ok()) {
      sync_failed_ = fail(st, sync_path_);
      unsynced_since_.reset();
      return sync_failed_;
    }
    synced_ = target;
    unsynced_since_.reset();
    {
      std::lock_guard lock(mu_);
      last_durable_ = std::max(last_durable_, target);
    }
    durable_cv_.notify_all();
    return Status::OK();
  }

  // remove_pages_from_cache: the current file's synced steps leave the page cache. The step
  // the data ends in stays: the next group writes into it, and a dropped partial page would be
  // read back from the disk first. Called once a sync's completions are handed on, never
  // between a sync and its acknowledgements.
  void drop_synced_pages() {
    if (!options.remove_pages_from_cache || synced_.file_id != dropped_.file_id) return;
    const uint64_t end = synced_.offset / kDropStep * kDropStep;
    if (end <= dropped_.offset) return;
    if (Status st = sync_file_->drop_cached(dropped_.offset, end - dropped_.offset);
        !st.ok() && !drop_failed_) {
      drop_failed_ = true;  // memory only: the journal goes on, its pages left to the kernel
      log.warn("journal {}: cannot drop written pages from the page cache: {}", sync_path_,
               st.to_string());
    }
    dropped_.offset = end;
  }

  // ---------------------------------------------------------------- callback thread

  void post_completions(std::vector<Completion> cs) {
    if (cs.empty()) return;
    {
      std::lock_guard lock(cb_mu_);
      for (auto& c : cs) cb_queue_.push_back(std::move(c));
    }
    cb_cv_.notify_one();
  }

  void post_completions_one(Completion c) {
    {
      std::lock_guard lock(cb_mu_);
      cb_queue_.push_back(std::move(c));
    }
    cb_cv_.notify_one();
  }

  // The completions of a group just synced (by the sync thread, or by the writer inline), in
  // order: run right here when the callback thread has nothing queued or running (the usual
  // case: one hand-off per group fewer, ~4 k wake-ups a second at 10 k adds/s), else queued
  // behind what it has, so that accepted records still complete in append order. Failed ones
  // always go to the callback thread, which tells the bookie of the failure (on_failure)
  // before any add fails.
  void complete_after_sync(std::vector<Completion> cs) {
    if (cs.empty()) return;
    const bool failed = std::any_of(cs.begin(), cs.end(), [](const Completion& c) {
      return !c.status.ok();
    });
    {
      std::lock_guard lock(cb_mu_);
      if (failed || !cb_queue_.empty() || cb_running_) {
        for (auto& c : cs) cb_queue_.push_back(std::move(c));
        cs.clear();
      }
    }
    if (cs.empty()) {
      cb_cv_.notify_one();
      return;
    }
    run_completions(cs);
  }

  void callback_loop() {
    name_thread("journal-cb");
    for (;;) {
      std::deque<Completion> batch;
      bool notice = false;
      {
        std::unique_lock lock(cb_mu_);
        cb_running_ = false;
        cb_cv_.wait(lock, [&] { return !cb_queue_.empty() || failure_notice_ || cb_stop_; });
        batch.swap(cb_queue_);
        notice = std::exchange(failure_notice_, false);
        if (batch.empty() && !notice && cb_stop_) break;
        cb_running_ = !batch.empty();
      }
      if (notice) run_failure_callback();
      run_completions(batch);
    }
  }

  // Runs the callbacks of `batch` in order and releases their places in the queue.
  template <typename Batch>
  void run_completions(Batch& batch) {
    size_t counted = 0;
    const auto now = Clock::now();
    for (auto& c : batch) {
      if (c.status.ok() && c.appended != Clock::time_point{}) {
        add_latency->observe(std::chrono::duration<double, std::milli>(now - c.appended).count());
      }
      if (c.done) c.done(std::move(c.status), c.position);
      counted += c.counted ? 1 : 0;
    }
    if (counted > 0) {
      size_t depth;
      bool waiters;
      {
        std::lock_guard lock(mu_);
        in_flight_ -= counted;
        depth = in_flight_;
        waiters = space_waiters_ > 0;
      }
      if (waiters) space_cv_.notify_all();
      in_flight_gauge->set(static_cast<double>(depth));
    }
  }

  void run_failure_callback() {
    std::function<void(const Status&)> cb;
    Status st;
    {
      std::lock_guard lock(mu_);
      if (failure_notified_ || !on_failure_ || failure_.ok()) return;
      failure_notified_ = true;
      cb = on_failure_;
      st = failure_;
    }
    cb(st);
  }

  // ---------------------------------------------------------------- lifecycle

  void start() {
    writer_thread_ = std::thread([this] { writer_loop(); });
    sync_thread_ = std::thread([this] { sync_loop(); });
    cb_thread_ = std::thread([this] { callback_loop(); });
  }

  void stop() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    space_cv_.notify_all();
    writer_cv_.notify_all();
    writer_thread_.join();  // queues the final, synced request
    sync_thread_.join();    // completes everything written
    {
      std::lock_guard lock(cb_mu_);
      cb_stop_ = true;
    }
    cb_cv_.notify_all();
    cb_thread_.join();  // runs every callback
  }
};

Journal::Journal(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Journal::~Journal() {
  if (impl_) impl_->stop();
}

Result<std::unique_ptr<Journal>> Journal::open(JournalOptions options, Env& env) {
  if (options.dir.empty()) return Status(Errc::kInvalidArgument, "journal dir is empty");
  if (options.max_file_size <= kHeaderSize) {
    return Status(Errc::kInvalidArgument, "journal max_file_size is too small");
  }
  if (options.queue_size == 0) options.queue_size = 1;
  auto impl = std::make_unique<Impl>(std::move(options), env);
  const std::string& dir = impl->options.dir;
  MAGNETAR_TRY(env.create_dirs(current_dir(dir)));
  MAGNETAR_TRY(env.sync_dir(dir));
  MAGNETAR_ASSIGN_OR_RETURN(impl->last_mark_, read_mark(env, dir));
  if (!impl->options.reuse_files) {  // spares of a run that reused files: space back
    MAGNETAR_ASSIGN_OR_RETURN(std::vector<uint64_t> spares, list_file_ids(env, dir, ".spare"));
    for (uint64_t spare : spares) {
      Status st = env.remove_file(spare_path(dir, spare));
      if (!st.ok()) impl->log.warn("removing spare journal file: {}", st.to_string());
    }
  }
  MAGNETAR_ASSIGN_OR_RETURN(std::vector<uint64_t> ids, list_file_ids(env, dir));
  uint64_t id = now_ms();
  if (!ids.empty()) id = std::max(id, ids.back() + 1);
  MAGNETAR_ASSIGN_OR_RETURN(impl->sync_file_, impl->create_file(id));
  impl->sync_path_ = impl->file_path_;
  impl->written_ = impl->synced_ = impl->last_durable_ = JournalPosition{id, kHeaderSize};
  impl->dropped_ = JournalPosition{id, 0};
  impl->start();
  return std::unique_ptr<Journal>(new Journal(std::move(impl)));
}

void Journal::append(JournalRecord record, AppendCallback done) {
  impl_->append(record, done, true);
}

bool Journal::try_append(JournalRecord& record, AppendCallback& done) {
  return impl_->append(record, done, false);
}

JournalPosition Journal::last_durable() const {
  std::lock_guard lock(impl_->mu_);
  return impl_->last_durable_;
}

Status Journal::failure() const {
  return impl_->failure();
}

void Journal::on_failure(std::function<void(const Status&)> callback) {
  bool due;
  {
    std::lock_guard lock(impl_->mu_);
    impl_->on_failure_ = std::move(callback);
    due = !impl_->failure_.ok() && !impl_->failure_notified_;
  }
  if (due) impl_->post_failure_notice();
}

Status Journal::checkpoint_complete(JournalPosition mark) {
  Impl& d = *impl_;
  std::lock_guard checkpoint(d.checkpoint_mu_);
  if (mark > last_durable()) {
    return Status(Errc::kInvalidArgument,
                  fmt::format("checkpoint mark {} is beyond the durable journal end {}",
                              format_position(mark), format_position(last_durable())));
  }
  if (mark < d.last_mark_) {
    d.log.debug("checkpoint mark {} is older than {}: ignored", format_position(mark),
                format_position(d.last_mark_));
    return Status::OK();
  }
  if (mark != d.last_mark_) {
    MAGNETAR_TRY(d.env.write_file_atomically(mark_path(d.options.dir), encode_mark(mark)));
    d.last_mark_ = mark;
  }
  MAGNETAR_ASSIGN_OR_RETURN(std::vector<uint64_t> ids, list_file_ids(d.env, d.options.dir));
  auto older_end = std::lower_bound(ids.begin(), ids.end(), mark.file_id);
  size_t older = static_cast<size_t>(older_end - ids.begin());
  size_t keep = static_cast<size_t>(std::max(d.options.max_backups, 0));
  size_t spares = kMaxSpares;  // none kept unless journalReuseFiles
  if (d.options.reuse_files) {
    auto listed = list_file_ids(d.env, d.options.dir, ".spare");
    spares = listed.ok() ? listed->size() : kMaxSpares;
  }
  Status result;
  for (size_t i = 0; i + keep < older; ++i) {
    std::string path = journal_file_path(d.options.dir, ids[i]);
    if (spares < kMaxSpares) {
      // Older than the mark: replay never reads it, under either name.
      Status kept = d.env.rename(path, spare_path(d.options.dir, ids[i]));
      if (kept.ok()) {
        ++spares;
        d.log.info("journal file {} kept for reuse after checkpoint {}", path,
                   format_position(mark));
        continue;
      }
      d.log.warn("keeping journal file {} for reuse: {}; removing it", path, kept.to_string());
    }
    Status st = d.env.remove_file(path);
    if (st.ok()) {
      d.log.info("journal file {} removed after checkpoint {}", path, format_position(mark));
    } else {
      d.log.warn("removing journal file {}: {}", path, st.to_string());
      if (result.ok()) result = st;
    }
  }
  return result;
}

Result<JournalPosition> Journal::replay(const JournalOptions& options, Env& env,
                                        const ReplayFn& fn) {
  log::Logger log = log::Logger("bookie").with("journal", options.dir);
  MAGNETAR_ASSIGN_OR_RETURN(JournalPosition mark, read_mark(env, options.dir));
  MAGNETAR_ASSIGN_OR_RETURN(std::vector<uint64_t> ids, list_file_ids(env, options.dir));
  if (mark.file_id != 0 && !std::binary_search(ids.begin(), ids.end(), mark.file_id)) {
    return Status(Errc::kCorruption,
                  fmt::format("journal mark {} names a missing file {}", format_position(mark),
                              journal_file_path(options.dir, mark.file_id)));
  }
  for (uint64_t id : ids) {
    if (id < mark.file_id) continue;
    uint64_t start = id == mark.file_id ? mark.offset : kHeaderSize;
    MAGNETAR_TRY(replay_file(env, options.dir, id, start, fn, log));
  }
  log.info("journal replayed from mark {}", format_position(mark));
  return mark;
}

}  // namespace magnetar::bookie
