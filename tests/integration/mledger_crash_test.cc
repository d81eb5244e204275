// The managed ledger across a crash of its owner: a real ZooKeeper, three `magnetar bookie`
// processes and a managed-ledger owner (mledger_writer) SIGKILLed while it appends and
// acknowledges. The test then opens the managed ledger itself, as the next owner would:
//
//  - every entry the owner was told is stored is there, at the position it was told, in
//    order, and nothing is missing between them;
//  - no acknowledgement the owner was told is done (with every update persisted) is lost:
//    cursor positions never move backwards;
//  - nothing that was never acknowledged counts as acknowledged (with Pulsar's default
//    mark-delete rate limit too): lost acknowledgements only mean redelivery.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <charconv>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "cluster_fixture.h"
#include "ledger/bookkeeper.h"
#include "mledger/managed_ledger.h"
#include "testing/child_process.h"

#ifndef MLEDGER_WRITER
#error "tests/integration/CMakeLists.txt passes MLEDGER_WRITER, the writer executable"
#endif

namespace magnetar::mledger {
namespace {

using namespace std::chrono_literals;

// What the killed owner reported (see mledger_writer.cc).
struct Report {
  std::vector<Position> adds;  // adds[i]: the position of msg-i
  std::set<Position> acking, acked;
  std::vector<std::string> fatal;
  bool ready = false;
};

// A position as the writer printed it ("ledger:entry"), or nothing when the line is torn: the
// report is read while the writer is still writing, so its last line may end anywhere.
std::optional<Position> parse_position(const std::string& text) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) return std::nullopt;
  int64_t ledger = 0, entry = 0;
  const char* end = text.data() + text.size();
  auto [l_end, l_err] = std::from_chars(text.data(), text.data() + colon, ledger);
  if (l_err != std::errc{} || l_end != text.data() + colon || colon == 0) return std::nullopt;
  auto [e_end, e_err] = std::from_chars(text.data() + colon + 1, end, entry);
  if (e_err != std::errc{} || e_end != end || colon + 1 == text.size()) return std::nullopt;
  return Position{LedgerId{ledger}, EntryId{entry}};
}

Report read_report(const std::string& path) {
  Report r;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // no newline yet: a line still being written
    std::istringstream words(line);
    std::string kind;
    words >> kind;
    if (kind == "ADD") {
      int64_t i = 0;
      std::string pos;
      if (!(words >> i >> pos)) continue;  // torn line
      const auto position = parse_position(pos);
      if (!position) continue;
      if (i != static_cast<int64_t>(r.adds.size())) {
        r.fatal.push_back("ADD lines out of order: " + line);
        continue;
      }
      r.adds.push_back(*position);
    } else if (kind == "ACKING" || kind == "ACKED") {
      std::string pos;
      if (!(words >> pos)) continue;
      const auto position = parse_position(pos);
      if (position) (kind == "ACKING" ? r.acking : r.acked).insert(*position);
    } else if (kind == "FATAL") {
      r.fatal.push_back(line);
    } else if (kind == "READY") {
      r.ready = true;
    }
  }
  return r;
}

class ManagedLedgerCrashTest : public testing::ClusterFixture,
                               public ::testing::WithParamInterface<double> {
 protected:
  // Runs the writer until it has acknowledged `acks` positions, then SIGKILLs it.
  Report run_and_kill(const std::string& name, double rate, size_t acks) {
    const std::string log = (root_ / "writer.log").string();
    auto pid = testing::spawn_child({MLEDGER_WRITER, url_, name, fmt::format("{}", rate)}, log);
    EXPECT_TRUE(pid.ok()) << pid.status().to_string();
    if (!pid.ok()) return {};
    Report r;
    const auto deadline = std::chrono::steady_clock::now() + 120s;
    while (std::chrono::steady_clock::now() < deadline) {
      run_for(200ms);
      r = read_report(log);
      if (!r.fatal.empty() || r.acked.size() >= acks) break;
      if (testing::reap_child(*pid, false).has_value()) break;
    }
    ::kill(*pid, SIGKILL);
    testing::reap_child(*pid, true);
    r = read_report(log);  // the final state: everything it printed before dying
    return r;
  }
};

TEST_P(ManagedLedgerCrashTest, SigkilledOwnerLosesNothingAcknowledged) {
  const double rate = GetParam();
  const std::string name = "public/default/persistent/crash";
  ASSERT_NO_FATAL_FAILURE(start_bookies(3));
  Report r = run_and_kill(name, rate, 20000);
  ASSERT_TRUE(r.fatal.empty()) << r.fatal.front();
  ASSERT_TRUE(r.ready);
  ASSERT_GE(r.acked.size(), 20000u) << "the writer did not get far enough";

  ledger::BookKeeper bk(*store_, executor());
  ManagedLedgerFactory factory(*store_, bk);
  ManagedLedgerConfig config;
  config.ensemble_size = 3;
  config.write_quorum = 3;
  config.ack_quorum = 2;
  config.retention_time_minutes = -1;
  config.retention_size_mb = -1;
  auto opened = await(factory.open(name, config));
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  auto ml = *opened;
  EXPECT_GE(ml->ledgers().size(), 40u) << "the run should span many ledgers";

  // Every acknowledged add, at its position, in order, with nothing missing in between (the
  // log may hold more: adds stored but not yet reported).
  auto reader = ml->new_non_durable_cursor(ml->first_position());
  int64_t next = 0;
  while (true) {
    auto entries = await(reader->read(1000));
    ASSERT_TRUE(entries.ok()) << entries.status().to_string();
    if (entries->empty()) break;
    for (const Entry& e : *entries) {
      ASSERT_EQ(e.data.to_string(), fmt::format("msg-{}", next)) << "at " << e.position.to_string();
      if (next < static_cast<int64_t>(r.adds.size())) {
        ASSERT_EQ(e.position, r.adds[static_cast<size_t>(next)]) << "msg-" << next;
      }
      ++next;
    }
  }
  EXPECT_GE(next, static_cast<int64_t>(r.adds.size())) << "acknowledged adds are missing";

  auto cursor = ml->find_cursor("sub");
  ASSERT_TRUE(cursor);
  std::fprintf(stderr,
               "killed owner: %zu adds reported, %lld stored, %zu acks reported, %zu ledgers, "
               "recovered mark-delete %s, %lld ack ranges\n",
               r.adds.size(), static_cast<long long>(next), r.acked.size(), ml->ledgers().size(),
               cursor->mark_delete_position().to_string().c_str(),
               static_cast<long long>(cursor->acked_ranges()));
  // Nothing is acknowledged that the owner never asked to acknowledge (no loss).
  for (int64_t i = 0; i < next; ++i) {
    const Position p =
        i < static_cast<int64_t>(r.adds.size()) ? r.adds[static_cast<size_t>(i)] : Position{};
    if (!p.ledger_id.valid()) break;
    if (!r.acking.count(p)) {
      ASSERT_FALSE(cursor->is_acknowledged(p)) << "msg-" << i << " was never acknowledged";
    }
  }
  if (rate == 0) {
    // Every update persisted before completing: nothing completed is forgotten.
    for (const Position& p : r.acked) {
      ASSERT_TRUE(cursor->is_acknowledged(p)) << p.to_string() << " went backwards";
    }
  } else {
    // Rate-limited: acknowledgements of the last moments may be lost (redelivered).
    size_t lost = 0;
    for (const Position& p : r.acked) lost += cursor->is_acknowledged(p) ? 0 : 1;
    RecordProperty("acknowledgements_to_redeliver", static_cast<int>(lost));
    EXPECT_LT(lost, r.acked.size()) << "nothing at all was persisted";
  }
  (void)await(factory.close());
}

INSTANTIATE_TEST_SUITE_P(MarkDeleteRate, ManagedLedgerCrashTest, ::testing::Values(0.0, 1.0),
                         [](const ::testing::TestParamInfo<double>& info) {
                           return info.param == 0 ? std::string("EveryUpdatePersisted")
                                                  : std::string("RateLimited");
                         });

}  // namespace
}  // namespace magnetar::mledger
