#include "metadata/id_generator.h"

#include <fmt/format.h>

#include <boost/asio/redirect_error.hpp>
#include <algorithm>
#include <charconv>
#include <limits>

#include "metadata/errors.h"

namespace magnetar::metadata {

IdGenerator::IdGenerator(MetadataStore* store, Executor executor, std::string counter_path)
    : IdGenerator(store, std::move(executor), std::move(counter_path), Options()) {}

IdGenerator::IdGenerator(MetadataStore* store, Executor executor, std::string counter_path,
                         Options options)
    : store_(store),
      path_(std::move(counter_path)),
      options_(options),
      reserved_(std::move(executor), std::chrono::steady_clock::time_point::max()) {
  MAGNETAR_ASSERT(options_.block_size > 0, "IdGenerator block_size must be positive");
  MAGNETAR_ASSERT(options_.first_id >= 0, "IdGenerator first_id must not be negative");
}

Task<Result<int64_t>> IdGenerator::next(int64_t above) {
  bool fresh = false;  // a block reserved by this call
  while (true) {
    // Ids at or below `above` are skipped (never handed out, never reused).
    if (next_ <= above) next_ = std::min(end_, above + 1);
    if (next_ < end_) co_return next_++;
    if (fresh && above >= 0) {
      // A new block starts above every id ever reserved: `above` was never one of them.
      co_return Status(Errc::kInvalidArgument,
                       fmt::format("no id above {} can come from '{}': it was never reserved",
                                   above, path_));
    }
    if (reserving_) {
      // Another next() is reserving: wait for it instead of reserving a second block (which
      // could complete first and make our ids go backwards).
      boost::system::error_code ignored;  // operation_aborted: the reservation ended
      co_await reserved_.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
      continue;
    }
    reserving_ = true;
    Status st = co_await reserve_block();
    reserving_ = false;
    reserved_.cancel();
    if (!st.ok()) co_return st;
    fresh = true;
  }
}

Task<Status> IdGenerator::reserve_block() {
  for (int attempt = 0; attempt < options_.max_reserve_attempts; ++attempt) {
    auto got = co_await store_->get(path_);
    if (!got.ok()) co_return got.status();

    int64_t start = options_.first_id;
    int64_t expected_version = -1;  // create it
    if (got->has_value()) {
      const std::string& text = (*got)->value;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), start);
      if (ec != std::errc() || end != text.data() + text.size() || start < 0) {
        co_return Status(Errc::kCorruption,
                         fmt::format("id counter '{}' holds '{}', not a non-negative number", path_,
                                     text.substr(0, 64)));
      }
      expected_version = (*got)->stat.version;
    }
    if (start > std::numeric_limits<int64_t>::max() - options_.block_size) {
      co_return Status(Errc::kResourceExhausted,
                       fmt::format("id counter '{}' is exhausted at {}", path_, start));
    }
    const int64_t limit = start + options_.block_size;

    PutOptions options;
    options.expected_version = expected_version;
    Result<PutResult> put = Status(Errc::kInternal, "unset");
    if (expected_version == -1) {
      put = co_await store_->put_recursive(path_, std::to_string(limit), options);
    } else {
      put = co_await store_->put(path_, std::to_string(limit), options);
    }
    if (put.ok()) {
      next_ = start;
      end_ = limit;
      co_return Status::OK();
    }
    // kBadVersion: another generator reserved first; kNotFound: the node was deleted under
    // us (then it is created again, from first_id: deleting the counter breaks uniqueness,
    // so do not). Either way, read again.
    if (!put.status().is(Errc::kBadVersion) && !put.status().is(Errc::kNotFound)) {
      co_return put.status();
    }
  }
  co_return Status(Error::kBadVersion,
                   fmt::format("could not reserve ids from '{}': lost {} races to other "
                               "generators",
                               path_, options_.max_reserve_attempts));
}

}  // namespace magnetar::metadata
