#pragma once
// The dispatch cursor of a subscription whose consumer reads compacted (read_compacted, as
// Pulsar's readCompacted): what lies up to the topic's compaction horizon is read from the
// compacted ledger (the latest message of each key, with its original position), the rest
// from the topic. Off, it is the subscription's plain cursor.
//
// Positions are the topic's, so acknowledgements, redeliveries and seeks work as ever. A
// consumer starting at the earliest message (a new subscription at Earliest, a reader at
// MessageId.earliest) also gets the compacted messages of ledgers retention already deleted,
// as Pulsar's readers of compacted topics do.
//
// Threading: on the topic's loop, like the dispatcher.

#include <memory>
#include <optional>
#include <vector>

#include "broker/service/dispatch_cursor.h"

namespace magnetar::broker {

class TopicCompaction;

class CompactedDispatchCursor final : public DispatchCursor,
                                      public std::enable_shared_from_this<CompactedDispatchCursor> {
 public:
  CompactedDispatchCursor(std::shared_ptr<mledger::ManagedLedger> ml,
                          std::shared_ptr<mledger::ManagedCursor> cursor,
                          std::shared_ptr<TopicCompaction> compaction);

  // Whether reads go through the compacted ledger (the first consumer's read_compacted).
  void set_read_compacted(bool on, bool from_earliest);
  bool read_compacted() const { return enabled_; }

  Task<Result<std::vector<mledger::Entry>>> read_or_wait(int max) override;
  Task<std::optional<mledger::Entry>> read_at(mledger::Position p) override;
  bool is_acknowledged(mledger::Position p) const override;
  bool has_more_entries() const override;
  void seek(mledger::Position p) override;
  void rewind() override;
  void cancel_wait() override;

 private:
  Task<Result<std::vector<mledger::Entry>>> compacted_read(int max);
  Task<std::optional<mledger::Entry>> compacted_read_at(mledger::Position p);
  // Where the next compacted read starts (the first entry >= it).
  mledger::Position compacted_from() const;
  void leave_compacted(mledger::Position horizon);

  const std::shared_ptr<mledger::ManagedLedger> ml_;
  const std::shared_ptr<mledger::ManagedCursor> cursor_;
  const std::shared_ptr<TopicCompaction> compaction_;
  const std::shared_ptr<DispatchCursor> inner_;
  bool enabled_ = false;
  std::optional<mledger::Position> from_;  // set while reading the compacted ledger
  int64_t hint_ = -1;                      // index to read on from (-1: search)
  // Started at the earliest message: until the mark-delete moves from where it started, a
  // rewind starts over at the compacted ledger's first entry.
  bool from_earliest_ = false;
  mledger::Position earliest_mark_delete_;
};

}  // namespace magnetar::broker
