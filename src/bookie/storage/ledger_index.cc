#include "bookie/storage/ledger_index.h"

#include <fmt/format.h>
#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>

#include "common/endian.h"

namespace magnetar::bookie {
namespace {

constexpr uint8_t kLedgerRecordVersion = 1;
constexpr uint8_t kFlagFenced = 0x1;
constexpr size_t kLedgerRecordFixed = 1 + 1 + 8 + 8 + 4;

Status from_rocksdb(const rocksdb::Status& s, std::string_view what) {
  Errc code = s.IsNotFound()                 ? Errc::kNotFound
              : s.IsCorruption()             ? Errc::kCorruption
              : s.IsNoSpace()                ? Errc::kResourceExhausted
              : s.IsIOError()                ? Errc::kIoError
              : s.IsBusy() || s.IsTryAgain() ? Errc::kUnavailable
                                             : Errc::kInternal;
  return Status(code, fmt::format("{}: {}", what, s.ToString()));
}

std::string u64_key(uint64_t v) {
  std::string k(8, '\0');
  store_be64(reinterpret_cast<uint8_t*>(k.data()), v);
  return k;
}

std::string location_key(int64_t ledger_id, int64_t entry_id) {
  std::string k(16, '\0');
  store_be64(reinterpret_cast<uint8_t*>(k.data()), static_cast<uint64_t>(ledger_id));
  store_be64(reinterpret_cast<uint8_t*>(k.data()) + 8, static_cast<uint64_t>(entry_id));
  return k;
}

uint64_t load_u64(std::string_view s, size_t at) {
  return load_be64(reinterpret_cast<const uint8_t*>(s.data()) + at);
}

}  // namespace

std::string encode_ledger_record(const LedgerRecord& r) {
  std::string out(kLedgerRecordFixed, '\0');
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  p[0] = kLedgerRecordVersion;
  p[1] = r.fenced ? kFlagFenced : 0;
  store_be64(p + 2, static_cast<uint64_t>(r.lac));
  store_be64(p + 10, static_cast<uint64_t>(r.last_entry_id));
  store_be32(p + 18, static_cast<uint32_t>(r.master_key.size()));
  out += r.master_key;
  return out;
}

Result<LedgerRecord> decode_ledger_record(std::string_view bytes) {
  if (bytes.size() < kLedgerRecordFixed) {
    return Status(Errc::kCorruption, "ledger record too short");
  }
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  if (p[0] != kLedgerRecordVersion) {
    return Status(Errc::kNotSupported, fmt::format("ledger record version {}", p[0]));
  }
  uint32_t key_len = load_be32(p + 18);
  if (bytes.size() != kLedgerRecordFixed + key_len) {
    return Status(Errc::kCorruption, "ledger record length does not match its master key");
  }
  LedgerRecord r;
  r.fenced = (p[1] & kFlagFenced) != 0;
  r.lac = static_cast<int64_t>(load_be64(p + 2));
  r.last_entry_id = static_cast<int64_t>(load_be64(p + 10));
  r.master_key.assign(bytes.substr(kLedgerRecordFixed));
  return r;
}

std::string encode_log_usage(const LogUsage& usage) {
  std::string out(usage.size() * 16, '\0');
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  for (const auto& [ledger, bytes] : usage) {
    store_be64(p, static_cast<uint64_t>(ledger));
    store_be64(p + 8, bytes);
    p += 16;
  }
  return out;
}

Result<LogUsage> decode_log_usage(std::string_view bytes) {
  if (bytes.size() % 16 != 0) return Status(Errc::kCorruption, "entry log usage record torn");
  LogUsage usage;
  for (size_t at = 0; at < bytes.size(); at += 16) {
    usage[static_cast<int64_t>(load_u64(bytes, at))] += load_u64(bytes, at + 8);
  }
  return usage;
}

// ---- LedgerIndex ----

Result<std::unique_ptr<LedgerIndex>> LedgerIndex::open(const std::string& path) {
  rocksdb::DBOptions db_options;
  db_options.create_if_missing = true;
  db_options.create_missing_column_families = true;
  db_options.keep_log_file_num = 4;
  db_options.max_open_files = 512;

  rocksdb::ColumnFamilyOptions plain;
  rocksdb::ColumnFamilyOptions locations = plain;
  {
    // Point look-ups of absent entries (journal replay, reads past the end) skip the files.
    rocksdb::BlockBasedTableOptions table;
    table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
    locations.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  }
  std::vector<rocksdb::ColumnFamilyDescriptor> families = {
      {rocksdb::kDefaultColumnFamilyName, plain},
      {"locations", locations},
      {"ledgers", plain},
      {"entry_logs", plain},
  };
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(db_options, path, families, &handles, &raw);
  if (!s.ok()) return from_rocksdb(s, fmt::format("cannot open ledger index '{}'", path));
  std::unique_ptr<LedgerIndex> index(new LedgerIndex());
  index->path_ = path;
  index->db_.reset(raw);
  index->default_cf_ = handles[0];
  index->locations_cf_ = handles[1];
  index->ledgers_cf_ = handles[2];
  index->logs_cf_ = handles[3];
  return index;
}

LedgerIndex::~LedgerIndex() {
  if (!db_) return;
  for (auto* h : {default_cf_, locations_cf_, ledgers_cf_, logs_cf_}) {
    if (h != nullptr) (void)db_->DestroyColumnFamilyHandle(h);
  }
  (void)db_->Close();
}

Result<std::optional<EntryLocation>> LedgerIndex::get_location(int64_t ledger_id,
                                                               int64_t entry_id) const {
  rocksdb::PinnableSlice value;
  rocksdb::Status s =
      db_->Get(rocksdb::ReadOptions(), locations_cf_, location_key(ledger_id, entry_id), &value);
  if (s.IsNotFound()) return std::optional<EntryLocation>();
  if (!s.ok()) return from_rocksdb(s, fmt::format("ledger index '{}'", path_));
  if (value.size() != 8) {
    return Status(Errc::kCorruption, fmt::format("ledger index '{}': location of entry {} of "
                                                 "ledger {} is {} bytes",
                                                 path_, entry_id, ledger_id, value.size()));
  }
  return std::optional<EntryLocation>(EntryLocation::decode(load_u64(value.ToStringView(), 0)));
}

Status LedgerIndex::for_each_ledger(const std::function<Status(int64_t, LedgerRecord)>& fn) const {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), ledgers_cf_));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    if (it->key().size() != 8) {
      return Status(Errc::kCorruption, fmt::format("ledger index '{}': bad ledger key", path_));
    }
    auto id = static_cast<int64_t>(load_u64(it->key().ToStringView(), 0));
    MAGNETAR_ASSIGN_OR_RETURN(LedgerRecord r, decode_ledger_record(it->value().ToStringView()));
    MAGNETAR_TRY(fn(id, std::move(r)));
  }
  if (!it->status().ok())
    return from_rocksdb(it->status(), fmt::format("ledger index '{}'", path_));
  return Status::OK();
}

Status LedgerIndex::for_each_log_usage(const std::function<Status(uint32_t, LogUsage)>& fn) const {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), logs_cf_));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    uint64_t id = it->key().size() == 8 ? load_u64(it->key().ToStringView(), 0) : ~uint64_t{0};
    if (id > UINT32_MAX) {
      return Status(Errc::kCorruption, fmt::format("ledger index '{}': bad entry log key", path_));
    }
    MAGNETAR_ASSIGN_OR_RETURN(LogUsage usage, decode_log_usage(it->value().ToStringView()));
    MAGNETAR_TRY(fn(static_cast<uint32_t>(id), std::move(usage)));
  }
  if (!it->status().ok())
    return from_rocksdb(it->status(), fmt::format("ledger index '{}'", path_));
  return Status::OK();
}

Status LedgerIndex::write(Batch& batch) {
  MAGNETAR_ASSERT(batch.index_ == this, "batch of another index");
  if (batch.count() == 0) return Status::OK();
  rocksdb::WriteOptions options;
  options.sync = true;
  rocksdb::Status s = db_->Write(options, batch.batch_.get());
  if (!s.ok()) return from_rocksdb(s, fmt::format("write to ledger index '{}'", path_));
  batch.batch_->Clear();
  return Status::OK();
}

// ---- LedgerIndex::Batch ----

LedgerIndex::Batch::Batch(const LedgerIndex& index)
    : index_(&index), batch_(std::make_unique<rocksdb::WriteBatch>()) {}
LedgerIndex::Batch::~Batch() = default;
LedgerIndex::Batch::Batch(Batch&&) noexcept = default;

void LedgerIndex::Batch::put_location(int64_t ledger_id, int64_t entry_id, EntryLocation location) {
  (void)batch_->Put(index_->locations_cf_, location_key(ledger_id, entry_id),
                    u64_key(location.encode()));
}

void LedgerIndex::Batch::put_ledger(int64_t ledger_id, const LedgerRecord& record) {
  (void)batch_->Put(index_->ledgers_cf_, u64_key(static_cast<uint64_t>(ledger_id)),
                    encode_ledger_record(record));
}

void LedgerIndex::Batch::delete_ledger(int64_t ledger_id) {
  MAGNETAR_ASSERT(ledger_id >= 0 && ledger_id < INT64_MAX, "ledger id out of range");
  (void)batch_->Delete(index_->ledgers_cf_, u64_key(static_cast<uint64_t>(ledger_id)));
  (void)batch_->DeleteRange(index_->locations_cf_, location_key(ledger_id, 0),
                            location_key(ledger_id + 1, 0));
}

void LedgerIndex::Batch::put_log_usage(uint32_t log_id, const LogUsage& usage) {
  (void)batch_->Put(index_->logs_cf_, u64_key(log_id), encode_log_usage(usage));
}

void LedgerIndex::Batch::delete_log_usage(uint32_t log_id) {
  (void)batch_->Delete(index_->logs_cf_, u64_key(log_id));
}

size_t LedgerIndex::Batch::count() const {
  return static_cast<size_t>(batch_->Count());
}

}  // namespace magnetar::bookie
