#pragma once
// The file-system seam. Storage code (bookie journal, entry logs) does all its file I/O
// through an Env, so tests can inject what real disks do: failed fsyncs, full disks,
// unwritable directories. PosixEnv is the real thing; FaultInjectionEnv wraps it.
//
// Files are not thread-safe: one owner thread each. Env methods are thread-safe.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/buffer.h"
#include "common/status.h"

namespace magnetar {

// Append-only file.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual Status append(const void* data, size_t n) = 0;
  Status append(const Buffer& b) { return append(b.data(), b.size()); }
  // fdatasync: data and the metadata needed to read it back (file size) are durable.
  virtual Status sync() = 0;
  // Reserves disk space up to `size` bytes without changing what reads return
  // (fallocate with KEEP_SIZE); a full disk fails here rather than on a later write.
  virtual Status preallocate(uint64_t size) = 0;
  // Starts writing [offset, offset + length) back to the disk without waiting (wait = false),
  // or waits until that range is on the disk (wait = true): sync_file_range, so a large file
  // written in the background trickles to the disk instead of landing in one burst that every
  // other fdatasync on the disk would queue behind. Not a durability barrier (use sync()).
  virtual Status writeback(uint64_t offset, uint64_t length, bool wait) {
    (void)offset, (void)length, (void)wait;
    return Status::OK();
  }
  // Writes zeros from the end of what was appended (or zeroed) so far up to `end`, without
  // moving the append position, and starts their write-back. Later appends then overwrite
  // blocks that are already allocated, written and inside the file's size, so an fdatasync
  // after them flushes data only: no extent conversion or size change for the file system to
  // commit (ext4 would otherwise commit its journal on every fdatasync of a growing file).
  // close() trims the zeros that were never overwritten. A no-op where unsupported.
  virtual Status zero_fill(uint64_t end) {
    (void)end;
    return Status::OK();
  }
  // Asks the kernel to drop the cached pages of [offset, offset + length) that are clean
  // (POSIX_FADV_DONTNEED): data written and synced that nothing will read soon (a journal)
  // then gives its memory back at once, and the next writes land in pages the kernel just
  // freed instead of new ones. A hint: dirty pages stay, and nothing is lost either way.
  virtual Status drop_cached(uint64_t offset, uint64_t length) {
    (void)offset, (void)length;
    return Status::OK();
  }
  virtual uint64_t size() const = 0;
  virtual Status close() = 0;
};

// Positioned reads of an existing file.
class RandomAccessFile {
 public:
  virtual ~RandomAccessFile() = default;
  // Reads up to n bytes at offset; fewer only at end of file.
  virtual Result<Buffer> read(uint64_t offset, size_t n) const = 0;
  virtual Result<uint64_t> size() const = 0;
};

struct DiskUsage {
  uint64_t total_bytes = 0;
  uint64_t free_bytes = 0;
};

class Env {
 public:
  virtual ~Env() = default;
  // Creates or truncates.
  virtual Result<std::unique_ptr<WritableFile>> new_writable_file(const std::string& path) = 0;
  // Opens for append, keeping the contents.
  virtual Result<std::unique_ptr<WritableFile>> reopen_writable_file(const std::string& path) = 0;
  // Opens an existing file to be written again from its start (a recycled journal file):
  // appends overwrite the old contents, which count as space already zero-filled (zero_fill
  // starts past them), and close() trims what was never overwritten. kNotSupported where
  // the Env has no such thing (the caller then creates a new file).
  virtual Result<std::unique_ptr<WritableFile>> recycle_writable_file(const std::string& path);
  virtual Result<std::unique_ptr<RandomAccessFile>> open_file(const std::string& path) = 0;
  virtual Status create_dirs(const std::string& path) = 0;
  // Names (not paths) of a directory's entries, sorted.
  virtual Result<std::vector<std::string>> list_dir(const std::string& path) = 0;
  virtual Status remove_file(const std::string& path) = 0;
  virtual Status rename(const std::string& from, const std::string& to) = 0;
  // Makes creations, renames and removals in the directory durable.
  virtual Status sync_dir(const std::string& path) = 0;
  virtual bool exists(const std::string& path) = 0;
  virtual Result<DiskUsage> disk_usage(const std::string& path) = 0;

  // Writes a small file atomically: temp file, fsync, rename, fsync of the directory.
  Status write_file_atomically(const std::string& path, std::string_view contents);
  Result<std::string> read_small_file(const std::string& path);
};

// The process's real file system.
Env& posix_env();

// Wraps another Env and fails on demand. Counters and switches are atomic so a test thread
// can flip them while a storage thread does I/O.
class FaultInjectionEnv final : public Env {
 public:
  explicit FaultInjectionEnv(Env& base) : base_(base) {}

  std::atomic<bool> fail_sync{false};       // sync() fails with EIO
  std::atomic<int> syncs_before_failure{-1};  // >= 0: file syncs that succeed before fail_sync
  std::atomic<bool> disk_full{false};       // append()/preallocate() fail with ENOSPC
  std::atomic<bool> fail_writes{false};     // append() fails with EIO
  std::atomic<uint64_t> syncs{0};           // successful sync() calls, for assertions
  std::atomic<uint64_t> syncs_started{0};   // sync() calls that got past fail_sync
  std::atomic<int> sync_delay_ms{0};        // every file sync() first sleeps this long (slow disk)
  std::atomic<uint64_t> free_bytes_override{0};  // non-zero: what disk_usage() reports free
  std::atomic<uint64_t> dropped_bytes{0};        // what drop_cached() was asked to drop, in all

  Result<std::unique_ptr<WritableFile>> new_writable_file(const std::string& path) override;
  Result<std::unique_ptr<WritableFile>> reopen_writable_file(const std::string& path) override;
  Result<std::unique_ptr<WritableFile>> recycle_writable_file(const std::string& path) override;
  Result<std::unique_ptr<RandomAccessFile>> open_file(const std::string& path) override {
    return base_.open_file(path);
  }
  Status create_dirs(const std::string& path) override { return base_.create_dirs(path); }
  Result<std::vector<std::string>> list_dir(const std::string& path) override {
    return base_.list_dir(path);
  }
  Status remove_file(const std::string& path) override { return base_.remove_file(path); }
  Status rename(const std::string& from, const std::string& to) override {
    return base_.rename(from, to);
  }
  Status sync_dir(const std::string& path) override;
  bool exists(const std::string& path) override { return base_.exists(path); }
  Result<DiskUsage> disk_usage(const std::string& path) override;

 private:
  Env& base_;
};

}  // namespace magnetar
