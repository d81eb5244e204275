#include "metadata/leader_election.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "common/wakeup.h"
#include "metadata/errors.h"
#include "metadata/sequential_nodes.h"

namespace magnetar::metadata {
namespace {

using Clock = std::chrono::steady_clock;

// Failures after which our node is certainly gone: nothing left to delete.
bool session_gone(const Status& st) {
  return st.is(Errc::kNotFound) || st.code() == Error::kSessionLost || st.code() == Error::kClosed;
}

}  // namespace

LeaderElection::LeaderElection(MetadataStore* store, Executor executor, std::string path,
                               Callback callback)
    : LeaderElection(store, std::move(executor), std::move(path), std::move(callback), Options()) {}

LeaderElection::LeaderElection(MetadataStore* store, Executor executor, std::string path,
                               Callback callback, Options options)
    : store_(store),
      executor_(std::move(executor)),
      path_(std::move(path)),
      callback_(std::move(callback)),
      options_(options),
      log_(log::Logger("metadata.election").with("path", path_)),
      wakeup_(std::make_unique<Wakeup>(executor_)),
      loop_done_(std::make_unique<Wakeup>(executor_)) {
  std::weak_ptr<bool> alive = alive_;
  listener_ = store_->add_listener(executor_, [this, alive](const Notification& n) {
    if (!alive.expired()) on_notification(n);
  });
  session_listener_ = store_->add_session_listener(executor_, [this, alive](SessionEvent e) {
    if (!alive.expired()) on_session_event(e);
  });
}

LeaderElection::~LeaderElection() {
  MAGNETAR_ASSERT(!loop_running_, "LeaderElection destroyed before stop() completed");
  store_->remove_listener(listener_);
  store_->remove_listener(session_listener_);
}

Task<Status> LeaderElection::start(std::string candidate_value) {
  if (running_) {
    co_return Status(Errc::kInvalidArgument, fmt::format("election on {} already started", path_));
  }
  Status valid = validate_path(path_);
  if (!valid.ok()) co_return valid;
  if (path_ == "/") co_return Status(Error::kInvalidPath, "cannot elect under the root node");

  value_ = std::move(candidate_value);
  running_ = true;
  stopping_ = false;
  out_of_session_ = false;
  // The first evaluation runs here, so that the caller learns the outcome (and errors).
  while (true) {
    auto step = co_await evaluate();
    if (!step.ok()) {
      if (!node_.empty()) {
        Status st = co_await store_->remove(node_);
        if (!st.ok() && !session_gone(st)) {
          log_.error("cannot delete candidate node {} after a failed start: {}", node_,
                     st.to_string());
        }
        node_.clear();
      }
      leading_ = false;
      watched_.clear();
      running_ = false;
      co_return step.status();
    }
    if (*step == Step::kWait) break;
  }

  loop_running_ = true;
  asio::co_spawn(executor_, run(), [this](std::exception_ptr error) {
    // The destructor asserts that this has run, so `this` is alive.
    loop_running_ = false;
    loop_done_->notify();
    if (error) {
      try {
        std::rethrow_exception(error);
      } catch (const std::exception& e) {
        log_.error("election loop failed: {}", e.what());
      }
    }
  });
  co_return Status::OK();
}

Task<Status> LeaderElection::stop() {
  if (!running_) co_return Status::OK();
  stopping_ = true;
  ++epoch_;  // whatever an evaluation in flight learns is stale now
  wakeup_->notify();
  while (loop_running_) co_await loop_done_->wait_until(Clock::time_point::max());

  leading_ = false;  // no callback: the caller asked for this
  Status result;
  if (!node_.empty()) {
    Status st = co_await store_->remove(node_);
    if (!st.ok() && !session_gone(st)) {
      // The node stays until the session ends and may even become leader meanwhile.
      log_.error("cannot delete candidate node {}: {}", node_, st.to_string());
      result = st;
    }
    node_.clear();
  }
  watched_.clear();
  out_of_session_ = false;
  stopping_ = false;
  running_ = false;
  co_return result;
}

Task<Result<std::optional<std::string>>> LeaderElection::leader_value() {
  auto owner = co_await internal::read_lowest(store_, path_, options_.prefix);
  if (!owner.ok()) co_return owner.status();
  if (!owner->has_value()) co_return std::optional<std::string>();
  co_return std::optional<std::string>(std::move((*owner)->value));
}

Task<void> LeaderElection::run() {
  auto delay = options_.retry_initial;
  while (!stopping_) {
    auto deadline = Clock::time_point::max();
    if (!out_of_session_) {
      auto step = co_await evaluate();
      if (stopping_) break;
      if (step.ok()) {
        delay = options_.retry_initial;
        if (*step == Step::kAgain) continue;
      } else if (step.status().code() == Error::kClosed) {
        // Our session ended with the store: whatever we led, we lead no more. Nothing to
        // retry; wait for stop().
        stop_leading("the metadata store was closed");
        node_.clear();
      } else {
        log_.warn("election step failed, retrying in {} ms: {}", delay.count(),
                  step.status().to_string());
        deadline = Clock::now() + delay;
        delay = std::min(delay * 2, options_.retry_max);
      }
    }
    co_await wakeup_->wait_until(deadline);
  }
}

Task<Result<LeaderElection::Step>> LeaderElection::evaluate() {
  if (stopping_ || out_of_session_) co_return Step::kWait;
  const uint64_t epoch = epoch_;
  const std::string prefix = options_.prefix;

  if (node_.empty()) {
    PutOptions options;
    options.ephemeral = true;
    options.sequential = true;
    auto created = co_await store_->put_recursive(join_path(path_, prefix), value_, options);
    if (!created.ok()) {
      if (internal::outcome_unknown(created.status())) {
        std::vector<std::string> keep;  // we use no candidate node right now
        co_await internal::remove_orphans(store_, path_, prefix, value_, std::move(keep), log_);
      }
      co_return created.status();
    }
    node_ = created->path;
    if (epoch != epoch_) {
      if (stopping_) co_return Step::kWait;  // stop() deletes node_
      // The session was lost meanwhile: the node belongs to the dead session, or to the
      // new one if the store re-established it before our create. Never leave it behind.
      Status st = co_await store_->remove(node_);
      if (!st.ok() && !session_gone(st)) {
        log_.error("cannot delete candidate node {} created across a session loss: {}", node_,
                   st.to_string());
      }
      node_.clear();
      co_return Step::kAgain;
    }
    log_.debug("entered the election as {}", node_);
  }

  auto listed = co_await internal::list_sequential(store_, path_, prefix);
  if (!listed.ok()) co_return listed.status();
  if (epoch != epoch_) co_return Step::kAgain;
  std::optional<size_t> index = internal::find_child(*listed, std::string(node_name(node_)));
  if (!index) {
    // Deleted by someone else (or with a session we have not heard about yet): enter again.
    stop_leading(fmt::format("candidate node {} disappeared", node_));
    node_.clear();
    co_return Step::kAgain;
  }

  if (*index == 0) {
    // Check our own node once more; this also makes ZooKeeper watch it, so that its
    // deletion ends our leadership at once.
    watched_ = node_;
    auto present = co_await store_->exists(node_);
    if (!present.ok()) co_return present.status();
    if (epoch != epoch_) co_return Step::kAgain;
    if (!*present) {
      stop_leading(fmt::format("candidate node {} disappeared", node_));
      node_.clear();
      co_return Step::kAgain;
    }
    become_leader();
    co_return Step::kWait;
  }

  // A lower candidate exists (normally never while we lead: sequence numbers only grow).
  stop_leading("a candidate with a lower sequence number exists");
  watched_ = join_path(path_, (*listed)[*index - 1].name);
  auto present = co_await store_->exists(watched_);
  if (!present.ok()) co_return present.status();
  if (epoch != epoch_) co_return Step::kAgain;
  co_return *present ? Step::kWait : Step::kAgain;
}

void LeaderElection::become_leader() {
  if (leading_) return;
  leading_ = true;
  log_.info("became leader as {}", node_);
  if (callback_) callback_(true);
}

void LeaderElection::stop_leading(const std::string& why) {
  if (!leading_) return;
  leading_ = false;
  log_.warn("no longer leader: {}", why);
  if (callback_) callback_(false);
}

void LeaderElection::on_notification(const Notification& n) {
  if (!running_ || stopping_) return;
  if (n.type == NotificationType::kDeleted && !node_.empty() && n.path == node_) {
    stop_leading(fmt::format("candidate node {} was deleted", node_));
  }
  if (!watched_.empty() && n.path == watched_) wakeup_->notify();
}

void LeaderElection::on_session_event(SessionEvent e) {
  if (!running_ || stopping_) return;
  switch (e) {
    case SessionEvent::kConnectionLost:
      return;  // the session may survive; kReconnected or kSessionLost follows
    case SessionEvent::kReconnected:
      break;  // same session, nodes intact: just re-check
    case SessionEvent::kSessionLost:
      ++epoch_;
      stop_leading("metadata session expired");
      node_.clear();
      watched_.clear();
      out_of_session_ = true;
      break;
    case SessionEvent::kSessionReestablished:
      if (!node_.empty() || leading_) {  // kSessionLost was not seen: same consequences
        ++epoch_;
        stop_leading("metadata session replaced");
        node_.clear();
        watched_.clear();
      }
      out_of_session_ = !options_.rejoin_after_session_loss;
      break;
  }
  wakeup_->notify();
}

}  // namespace magnetar::metadata
