#pragma once
// Entry logs: the append-only files that hold entry bodies for reading. One is open for
// appends at a time (the "current" log); older ones are only read, and deleted by GC once
// nothing in the index points into them.
//
// On-disk format of `<dir>/current/<hex log id>.log` (integers big-endian):
//
//   log     := header record*
//   header  := magic "MGEL" (4 bytes) | version u32 (= 1) | log_id u64        -- 16 bytes
//   record  := size u32 | crc u32 | ledger_id i64 | entry_id i64 | bytes[size] -- 24 + size bytes
//   crc     := crc32c(size u32 | ledger_id i64 | entry_id i64 | bytes)
//
// Every field except the crc itself is covered by the crc, so a flipped bit anywhere in a
// record is detected on read. `bytes` is the entry exactly as the client sent it. A record
// is located by (log_id, offset of its size field); offsets fit in 32 bits because logs are
// rotated before they reach 4 GiB. A crash can leave a torn record at the tail of a log:
// it was never indexed (the index is written only after the log is synced), so scans stop
// there quietly.

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "common/buffer.h"
#include "common/env.h"
#include "common/status.h"

namespace magnetar::bookie {

inline constexpr size_t kEntryLogHeaderSize = 16;
inline constexpr size_t kEntryLogRecordHeaderSize = 24;
inline constexpr uint32_t kEntryLogVersion = 1;

// Where a record lives. Encodes to 8 bytes as (log_id << 32) | offset, the same packing as
// BookKeeper's entry locations.
struct EntryLocation {
  uint32_t log_id = 0;
  uint32_t offset = 0;

  uint64_t encode() const noexcept { return (uint64_t{log_id} << 32) | offset; }
  static EntryLocation decode(uint64_t v) noexcept {
    return EntryLocation{static_cast<uint32_t>(v >> 32), static_cast<uint32_t>(v)};
  }
  friend bool operator==(const EntryLocation&, const EntryLocation&) = default;
};

// "<hex id>.log", lower case, no padding.
std::string entry_log_file_name(uint32_t log_id);
// The id in a name produced by entry_log_file_name(); nullopt for any other name.
std::optional<uint32_t> parse_entry_log_file_name(std::string_view name);

// Appends records to a new log. Records are staged in memory and reach the file in large
// writes; sync() writes what is staged and fdatasyncs. Not thread-safe: owned by whoever
// holds LedgerStorage's flush lock.
class EntryLogWriter {
 public:
  // Creates (truncating) `path` and writes the header. Disk space is reserved ahead of the
  // writes in chunks of `preallocate_chunk` bytes, so a full disk fails early and cleanly.
  static Result<std::unique_ptr<EntryLogWriter>> create(Env& env, std::string path, uint32_t log_id,
                                                        uint64_t preallocate_chunk);
  ~EntryLogWriter();

  uint32_t log_id() const noexcept { return log_id_; }
  const std::string& path() const noexcept { return path_; }
  // Bytes in the log once everything staged is written, header included.
  uint64_t size() const noexcept { return file_->size() + staged_.size(); }

  // Stages one record and returns the offset it will have. Fails only if writing out a
  // full staging buffer fails. Precondition: size() stays below 4 GiB.
  Result<uint32_t> add(int64_t ledger_id, int64_t entry_id, std::string_view bytes);
  // Writes staged records and makes the whole log durable.
  Status sync();
  Status close();

 private:
  EntryLogWriter(std::string path, uint32_t log_id, std::unique_ptr<WritableFile> file,
                 uint64_t preallocate_chunk);
  Status write_staged();
  uint64_t written_back_ = 0;  // bytes known to be on the disk (writeback waited for)

  const std::string path_;
  const uint32_t log_id_;
  std::unique_ptr<WritableFile> file_;
  const uint64_t preallocate_chunk_;
  uint64_t preallocated_ = 0;  // bytes reserved on disk so far
  std::string staged_;         // records not yet handed to the file
};

// Reads records of an existing log. Thread-safe: any thread may read; reads of one log are
// serialised by an internal mutex because Env files have one user at a time.
class EntryLogReader {
 public:
  // Opens `path` and checks its header (kCorruption if it is short or not ours).
  static Result<std::unique_ptr<EntryLogReader>> open(Env& env, std::string path, uint32_t log_id);

  uint32_t log_id() const noexcept { return log_id_; }
  const std::string& path() const noexcept { return path_; }
  Result<uint64_t> size() const;

  // The bytes of the record at `offset`, which must hold (ledger_id, entry_id). Any
  // mismatch (crc, ids, a record running past the end) is kCorruption: never wrong bytes.
  Result<Buffer> read(uint32_t offset, int64_t ledger_id, int64_t entry_id) const;

  using ScanFn =
      std::function<Status(uint32_t offset, int64_t ledger_id, int64_t entry_id, Buffer bytes)>;
  // Calls `fn` for every record in file order; stops at a torn tail, or at the first error
  // from `fn`, which it returns. A crc mismatch inside the log is kCorruption.
  Status scan(const ScanFn& fn) const;

 private:
  EntryLogReader(std::string path, uint32_t log_id, std::unique_ptr<RandomAccessFile> file)
      : path_(std::move(path)), log_id_(log_id), file_(std::move(file)) {}
  Result<Buffer> read_at(uint64_t offset, size_t n) const;

  const std::string path_;
  const uint32_t log_id_;
  mutable std::mutex mu_;  // serialises use of file_
  std::unique_ptr<RandomAccessFile> file_;
};

}  // namespace magnetar::bookie
