#include "common/env.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include <fmt/format.h>

namespace magnetar {
namespace {

Status io_error(std::string_view what, const std::string& path, int err) {
  Errc code = (err == ENOSPC || err == EDQUOT) ? Errc::kResourceExhausted
              : (err == ENOENT)                ? Errc::kNotFound
              : (err == EACCES || err == EPERM || err == EROFS) ? Errc::kPermissionDenied
                                                                : Errc::kIoError;
  return Status(code, fmt::format("{} '{}': {}", what, path, std::strerror(err)));
}

class PosixWritableFile final : public WritableFile {
 public:
  // `zeroed`: bytes past `size` already written (zeros, or a recycled file's old contents).
  PosixWritableFile(std::string path, int fd, uint64_t size, uint64_t zeroed = 0)
      : path_(std::move(path)), fd_(fd), size_(size), zeroed_(zeroed) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }

  Status append(const void* data, size_t n) override {
    const auto* p = static_cast<const uint8_t*>(data);
    while (n > 0) {
      ssize_t w = ::write(fd_, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        return io_error("write to", path_, errno);
      }
      p += w;
      n -= static_cast<size_t>(w);
      size_ += static_cast<uint64_t>(w);
    }
    return Status::OK();
  }

  Status sync() override {
    if (::fdatasync(fd_) != 0) return io_error("fdatasync of", path_, errno);
    return Status::OK();
  }

  Status preallocate(uint64_t size) override {
    if (size <= size_) return Status::OK();
    int rc = ::fallocate(fd_, FALLOC_FL_KEEP_SIZE, 0, static_cast<off_t>(size));
    if (rc != 0 && errno != EOPNOTSUPP) return io_error("preallocate", path_, errno);
    return Status::OK();
  }

  Status writeback(uint64_t offset, uint64_t length, bool wait) override {
    if (length == 0) return Status::OK();
    const unsigned flags = wait ? SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                                      SYNC_FILE_RANGE_WAIT_AFTER
                                : SYNC_FILE_RANGE_WRITE;
    if (::sync_file_range(fd_, static_cast<off_t>(offset), static_cast<off_t>(length), flags) !=
            0 &&
        errno != ENOSYS && errno != EINVAL) {
      return io_error("writeback of", path_, errno);
    }
    return Status::OK();
  }

  Status drop_cached(uint64_t offset, uint64_t length) override {
    if (length == 0) return Status::OK();
    const int rc = ::posix_fadvise(fd_, static_cast<off_t>(offset), static_cast<off_t>(length),
                                   POSIX_FADV_DONTNEED);
    if (rc != 0) return io_error("dropping cached pages of", path_, rc);
    return Status::OK();
  }

  Status zero_fill(uint64_t end) override {
    static const std::vector<uint8_t> zeros(1 << 20, 0);
    const uint64_t start = std::max(size_, zeroed_);
    for (uint64_t at = start; at < end;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(zeros.size(), end - at));
      ssize_t w = ::pwrite(fd_, zeros.data(), n, static_cast<off_t>(at));
      if (w < 0) {
        if (errno == EINTR) continue;
        return io_error("write to", path_, errno);
      }
      at += static_cast<uint64_t>(w);
      zeroed_ = at;
    }
    return end > start ? writeback(start, end - start, false) : Status::OK();
  }

  uint64_t size() const override { return size_; }

  Status close() override {
    if (fd_ < 0) return Status::OK();
    Status trimmed;
    if (zeroed_ > size_ && ::ftruncate(fd_, static_cast<off_t>(size_)) != 0) {
      trimmed = io_error("truncate", path_, errno);
    }
    int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0) return io_error("close", path_, errno);
    return trimmed;
  }

 private:
  std::string path_;
  int fd_;
  uint64_t size_;
  uint64_t zeroed_ = 0;  // [size_, zeroed_) holds zeros (zero_fill) or a recycled file's bytes
};

class PosixRandomAccessFile final : public RandomAccessFile {
 public:
  PosixRandomAccessFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixRandomAccessFile() override { ::close(fd_); }

  Result<Buffer> read(uint64_t offset, size_t n) const override {
    Buffer b = Buffer::allocate(n);
    size_t got = 0;
    while (got < n) {
      ssize_t r = ::pread(fd_, b.mutable_data() + got, n - got, static_cast<off_t>(offset + got));
      if (r < 0) {
        if (errno == EINTR) continue;
        return io_error("read from", path_, errno);
      }
      if (r == 0) break;
      got += static_cast<size_t>(r);
    }
    b.truncate(got);
    return b;
  }

  Result<uint64_t> size() const override {
    struct stat st;
    if (::fstat(fd_, &st) != 0) return io_error("stat", path_, errno);
    return static_cast<uint64_t>(st.st_size);
  }

 private:
  std::string path_;
  int fd_;
};

class PosixEnv final : public Env {
  // An existing file opened for writing: appends go after its contents (`from_start` false)
  // or over them from offset 0, its contents then counting as written space ahead.
  static Result<std::unique_ptr<WritableFile>> open_existing(const std::string& path, int flags,
                                                             std::string_view what,
                                                             bool from_start) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | flags);
    if (fd < 0) return io_error(what, path, errno);
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      int err = errno;
      ::close(fd);
      return io_error("stat", path, err);
    }
    const auto size = static_cast<uint64_t>(st.st_size);
    return std::unique_ptr<WritableFile>(from_start
                                             ? std::make_unique<PosixWritableFile>(path, fd, 0, size)
                                             : std::make_unique<PosixWritableFile>(path, fd, size));
  }

 public:
  Result<std::unique_ptr<WritableFile>> new_writable_file(const std::string& path) override {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return io_error("create", path, errno);
    return std::unique_ptr<WritableFile>(std::make_unique<PosixWritableFile>(path, fd, 0));
  }

  Result<std::unique_ptr<WritableFile>> reopen_writable_file(const std::string& path) override {
    return open_existing(path, O_APPEND, "open for append", false);
  }

  Result<std::unique_ptr<WritableFile>> recycle_writable_file(const std::string& path) override {
    return open_existing(path, 0, "open for reuse", true);
  }

  Result<std::unique_ptr<RandomAccessFile>> open_file(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return io_error("open", path, errno);
    return std::unique_ptr<RandomAccessFile>(std::make_unique<PosixRandomAccessFile>(path, fd));
  }

  Status create_dirs(const std::string& path) override {
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
    if (ec) return io_error("create directory", path, ec.value());
    return Status::OK();
  }

  Result<std::vector<std::string>> list_dir(const std::string& path) override {
    DIR* d = ::opendir(path.c_str());
    if (d == nullptr) return io_error("list", path, errno);
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(std::move(n));
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    return names;
  }

  Status remove_file(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return io_error("remove", path, errno);
    return Status::OK();
  }

  Status rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return io_error("rename", from, errno);
    return Status::OK();
  }

  Status sync_dir(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return io_error("open directory", path, errno);
    int rc = ::fsync(fd);
    int err = errno;
    ::close(fd);
    if (rc != 0) return io_error("fsync of directory", path, err);
    return Status::OK();
  }

  bool exists(const std::string& path) override { return ::access(path.c_str(), F_OK) == 0; }

  Result<DiskUsage> disk_usage(const std::string& path) override {
    struct statvfs s;
    if (::statvfs(path.c_str(), &s) != 0) return io_error("statvfs", path, errno);
    return DiskUsage{static_cast<uint64_t>(s.f_blocks) * s.f_frsize,
                     static_cast<uint64_t>(s.f_bavail) * s.f_frsize};
  }
};

class FaultyWritableFile final : public WritableFile {
 public:
  FaultyWritableFile(std::unique_ptr<WritableFile> base, FaultInjectionEnv& env, std::string path)
      : base_(std::move(base)), env_(env), path_(std::move(path)) {}
  Status append(const void* data, size_t n) override {
    if (env_.disk_full) return io_error("write to", path_, ENOSPC);
    if (env_.fail_writes) return io_error("write to", path_, EIO);
    return base_->append(data, n);
  }
  Status sync() override {
    if (int left = env_.syncs_before_failure.load(); left >= 0) {
      if (left == 0) env_.fail_sync = true;
      env_.syncs_before_failure = left - 1;
    }
    if (env_.fail_sync) return io_error("fdatasync of", path_, EIO);
    env_.syncs_started.fetch_add(1);
    if (int delay = env_.sync_delay_ms.load(); delay > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(delay));
    }
    MAGNETAR_TRY(base_->sync());
    env_.syncs.fetch_add(1);
    return Status::OK();
  }
  Status preallocate(uint64_t size) override {
    if (env_.disk_full) return io_error("preallocate", path_, ENOSPC);
    return base_->preallocate(size);
  }
  Status writeback(uint64_t offset, uint64_t length, bool wait) override {
    if (env_.fail_writes) return io_error("writeback of", path_, EIO);
    return base_->writeback(offset, length, wait);
  }
  Status drop_cached(uint64_t offset, uint64_t length) override {
    env_.dropped_bytes.fetch_add(length);
    return base_->drop_cached(offset, length);
  }
  Status zero_fill(uint64_t end) override {
    if (env_.disk_full) return io_error("write to", path_, ENOSPC);
    if (env_.fail_writes) return io_error("write to", path_, EIO);
    return base_->zero_fill(end);
  }
  uint64_t size() const override { return base_->size(); }
  Status close() override { return base_->close(); }

 private:
  std::unique_ptr<WritableFile> base_;
  FaultInjectionEnv& env_;
  std::string path_;
};

}  // namespace

Env& posix_env() {
  static PosixEnv env;
  return env;
}

Status Env::write_file_atomically(const std::string& path, std::string_view contents) {
  std::string tmp = path + ".tmp";
  MAGNETAR_ASSIGN_OR_RETURN(auto f, new_writable_file(tmp));
  MAGNETAR_TRY(f->append(contents.data(), contents.size()));
  MAGNETAR_TRY(f->sync());
  MAGNETAR_TRY(f->close());
  MAGNETAR_TRY(rename(tmp, path));
  std::string dir = std::filesystem::path(path).parent_path().string();
  return sync_dir(dir.empty() ? "." : dir);
}

Result<std::string> Env::read_small_file(const std::string& path) {
  MAGNETAR_ASSIGN_OR_RETURN(auto f, open_file(path));
  MAGNETAR_ASSIGN_OR_RETURN(uint64_t size, f->size());
  if (size > 64 * 1024 * 1024) {
    return Status(Errc::kResourceExhausted, fmt::format("'{}' is {} bytes: not a small file", path,
                                                        size));
  }
  MAGNETAR_ASSIGN_OR_RETURN(Buffer b, f->read(0, size));
  return b.to_string();
}

Result<std::unique_ptr<WritableFile>> FaultInjectionEnv::new_writable_file(
    const std::string& path) {
  if (disk_full) return io_error("create", path, ENOSPC);
  MAGNETAR_ASSIGN_OR_RETURN(auto f, base_.new_writable_file(path));
  return std::unique_ptr<WritableFile>(std::make_unique<FaultyWritableFile>(std::move(f), *this, path));
}

Result<std::unique_ptr<WritableFile>> Env::recycle_writable_file(const std::string& path) {
  return Status(Errc::kNotSupported, fmt::format("cannot reuse '{}' here", path));
}

Result<std::unique_ptr<WritableFile>> FaultInjectionEnv::recycle_writable_file(
    const std::string& path) {
  if (fail_writes) return io_error("open for reuse", path, EIO);
  MAGNETAR_ASSIGN_OR_RETURN(auto f, base_.recycle_writable_file(path));
  return std::unique_ptr<WritableFile>(std::make_unique<FaultyWritableFile>(std::move(f), *this, path));
}

Result<std::unique_ptr<WritableFile>> FaultInjectionEnv::reopen_writable_file(
    const std::string& path) {
  MAGNETAR_ASSIGN_OR_RETURN(auto f, base_.reopen_writable_file(path));
  return std::unique_ptr<WritableFile>(std::make_unique<FaultyWritableFile>(std::move(f), *this, path));
}

Status FaultInjectionEnv::sync_dir(const std::string& path) {
  if (fail_sync) return io_error("fsync of directory", path, EIO);
  return base_.sync_dir(path);
}

Result<DiskUsage> FaultInjectionEnv::disk_usage(const std::string& path) {
  MAGNETAR_ASSIGN_OR_RETURN(DiskUsage u, base_.disk_usage(path));
  uint64_t forced = free_bytes_override.load();
  if (forced != 0) u.free_bytes = forced;
  return u;
}

}  // namespace magnetar
