#pragma once
// Leader election among processes (e.g. which broker runs the load manager), on ephemeral
// sequential nodes, so that it works on every MetadataStore backend:
//
//   <path>/candidate-NNNNNNNNNN   ephemeral, sequential; value = the candidate's value
//                                 (Options::prefix names them otherwise, e.g. "V_")
//
// The candidate with the lowest sequence number leads. Every other candidate watches only
// the candidate just below it, so a leader's exit wakes exactly one process (its successor
// becomes leader; a follower whose predecessor left just re-queues behind the next one).
// leader_value() reads the lowest candidate's value: what other processes use to find the
// leader (e.g. its URL).
//
// Session loss, as for ResourceLock: on SessionEvent::kSessionLost, or when our candidate
// node is deleted by someone else, a leader stops being leader at once: is_leader() turns
// false and the callback runs with `false` before any store call. The leader must stop its
// duties then; another candidate may lead already. After kSessionReestablished the election
// enters again as a new candidate (at the back of the queue) when
// Options::rejoin_after_session_loss is set (the default, as Pulsar's election does); the
// callback reports a later win. Otherwise it stays out until stop() and start() again.
//
// Threading: the election belongs to the executor passed to its constructor: call it from
// coroutines on that executor; the callback and the store listeners run there too. One
// background coroutine per started election (joined by stop()).
// Lifetime: `store` outlives the election. stop() must complete before destruction.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common/asio.h"
#include "common/logging.h"
#include "common/status.h"
#include "metadata/metadata_store.h"

namespace magnetar {
class Wakeup;
}  // namespace magnetar

namespace magnetar::metadata {

class LeaderElection {
 public:
  // true: this process just became leader; false: it just stopped being leader (lost its
  // session or its node). Not called by stop().
  using Callback = std::function<void(bool leading)>;

  struct Options {
    bool rejoin_after_session_loss = true;
    // Pause before re-trying after a store error (doubles up to retry_max).
    std::chrono::milliseconds retry_initial{100};
    std::chrono::milliseconds retry_max{5000};
    // Name prefix of the candidate nodes (BookKeeper's auditor election uses "V_").
    std::string prefix = "candidate-";
  };

  LeaderElection(MetadataStore* store, Executor executor, std::string path, Callback callback);
  LeaderElection(MetadataStore* store, Executor executor, std::string path, Callback callback,
                 Options options);
  ~LeaderElection();
  LeaderElection(const LeaderElection&) = delete;
  LeaderElection& operator=(const LeaderElection&) = delete;

  // Enters the election with `candidate_value` and evaluates it once: when start() returns
  // OK, is_leader() already tells whether this candidate won (the callback has run). Errors:
  // invalid path, a store error creating the candidate node, or already started.
  Task<Status> start(std::string candidate_value);

  // Leaves the election: stops the background coroutine and deletes the candidate node.
  // Afterwards is_leader() is false; the callback is not called. Idempotent.
  Task<Status> stop();

  bool is_leader() const { return leading_; }
  bool is_started() const { return running_; }
  const std::string& path() const { return path_; }
  // Our candidate node, empty while there is none.
  const std::string& candidate_node() const { return node_; }

  // The leader's value, read from the store (works for non-candidates too); nullopt when
  // there is no candidate at all.
  Task<Result<std::optional<std::string>>> leader_value();

 private:
  enum class Step { kWait, kAgain };

  // One evaluation: creates the candidate node when missing, then leads or watches the
  // predecessor. kAgain: evaluate again at once (the predecessor had already left).
  Task<Result<Step>> evaluate();
  Task<void> run();
  void become_leader();
  // Stops leading (if leading), calling the callback with false.
  void stop_leading(const std::string& why);
  void on_notification(const Notification& n);
  void on_session_event(SessionEvent e);

  MetadataStore* const store_;
  const Executor executor_;
  const std::string path_;
  const Callback callback_;
  const Options options_;
  const log::Logger log_;
  ListenerId listener_ = 0;
  ListenerId session_listener_ = 0;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);  // weak in listeners

  std::string value_;
  std::string node_;           // our candidate node, empty while none
  std::string watched_;        // node whose change triggers a re-evaluation
  bool running_ = false;       // between start() and the end of stop()
  bool loop_running_ = false;  // the background coroutine has not finished
  bool stopping_ = false;
  bool leading_ = false;
  bool out_of_session_ = false;  // lost the session; waiting for a new one (or stop)
  uint64_t epoch_ = 0;           // moves on session loss and stop: evaluations in flight are stale
  std::unique_ptr<Wakeup> wakeup_;     // wakes run()
  std::unique_ptr<Wakeup> loop_done_;  // wakes stop() when run() has finished
};

}  // namespace magnetar::metadata
