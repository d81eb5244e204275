// Auto-recovery end to end, in-process: real bookies (journal, storage, TCP) on 127.0.0.1, a
// memory: store, auto-recovery services each with their own session and thread. Ledgers
// written with E=3 Qw=2 Qa=2 (closed ones and one still open) lose a bookie; the auditor marks
// them, workers copy the missing fragments to replacements and rewrite the metadata. The test
// checks the metadata itself (no segment names the dead bookie), reads the copies straight
// from the replacement bookies, and reads entries back through the ledger client with the
// other original bookies down too.

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <set>

#include "autorecovery/auditor.h"
#include "autorecovery/autorecovery.h"
#include "autorecovery/underreplication.h"
#include "ledger/bookkeeper.h"
#include "ledger/tests/ledger_test_support.h"
#include "protocol/bookie_entry.h"
#include "testing/test_name.h"

namespace magnetar::autorecovery {
namespace {

using ledger::test::Cluster;
using magnetar::testing::test_name;
using Clock = std::chrono::steady_clock;

std::string payload_of(int64_t ledger, int64_t entry) {
  return "ledger-" + std::to_string(ledger) + "-entry-" + std::to_string(entry) +
         std::string(static_cast<size_t>(entry % 50), 'x');
}

AutoRecoveryConfig fast_config() {
  AutoRecoveryConfig config;
  config.daemon_enabled = true;
  config.lost_bookie_recovery_delay_s = 0;
  config.open_ledger_grace_ms = 1000;  // 30 s in production; the writer here is idle
  config.backoff_ms = 300;
  config.entry_batch_size = 16;
  config.placement_policy = "Default";
  return config;
}

// One auto-recovery instance: its own store session (its votes and locks die with it).
struct Instance {
  std::shared_ptr<metadata::MetadataStore> store;
  std::unique_ptr<AutoRecoveryService> service;
  std::string id;
};

Instance start_instance(Cluster& c, const std::string& id, const AutoRecoveryConfig& config) {
  Instance out;
  out.id = id;
  out.store = c.await(metadata::open_store(c.url())).value();
  auto started = AutoRecoveryService::start(config, out.store, id);
  EXPECT_TRUE(started.ok()) << started.status().to_string();
  if (started.ok()) out.service = std::move(started).value();
  return out;
}

void stop_instance(Cluster& c, Instance& i) {
  if (i.service) i.service->stop();
  i.service.reset();
  if (i.store) (void)c.await(i.store->close());
}

struct Written {
  int64_t id;
  int64_t entries;
  std::vector<std::string> original;  // first segment's ensemble
};

// Every ledger's metadata; true when none names `dead` and no marker is left.
Task<Result<bool>> recovered(metadata::MetadataStore& store, ledger::BookKeeper& bk,
                             std::vector<int64_t> ids, std::string dead) {
  UnderreplicationManager urm(store, "checker");
  auto markers = co_await urm.list();
  if (!markers.ok()) co_return markers.status();
  if (!markers->empty()) co_return false;
  for (int64_t id : ids) {
    auto md = co_await bk.read_metadata(LedgerId{id});
    if (!md.ok()) co_return md.status();
    for (const auto& s : md->segments) {
      if (std::find(s.ensemble.begin(), s.ensemble.end(), dead) != s.ensemble.end()) co_return false;
    }
  }
  co_return true;
}

// Waits (turning the test's loop) until `done` yields true; returns the seconds it took.
double wait_recovered(Cluster& c, ledger::BookKeeper& bk, const std::vector<int64_t>& ids,
                      const std::string& dead, std::chrono::seconds limit, Clock::time_point from) {
  while (Clock::now() - from < limit) {
    auto r = c.await(recovered(c.store(), bk, ids, dead));
    if (r.ok() && *r) return std::chrono::duration<double>(Clock::now() - from).count();
    c.loop().run_for(std::chrono::milliseconds(100));
  }
  return -1;
}

// The copy of entry `e` on `bookie`, read with the bookie protocol and digest-checked.
Task<Result<std::string>> read_copy(ledger::BookKeeper& bk, std::string bookie, int64_t ledger,
                                    int64_t e) {
  bookie_wire::ReadRequest read;
  read.set_ledger_id(ledger);
  read.set_entry_id(e);
  auto r = co_await bk.client().read(std::move(bookie), std::move(read));
  if (!r.ok()) co_return r.status();
  if (r->status != bookie_wire::OK) {
    co_return Status(Errc::kNotFound, bookie_wire::BookieStatus_Name(r->status));
  }
  auto payload = protocol::unpack_entry(r->entry, ledger, e, nullptr);
  if (!payload.ok()) co_return payload.status();
  co_return std::string(payload->view());
}

TEST(AutoRecoveryTest, ALostBookiesLedgersAreCopiedToReplacementsClosedAndOpenOnes) {
  Cluster c(test_name());
  for (int i = 0; i < 6; ++i) c.add_bookie();
  ledger::BookKeeper bk(c.store(), c.executor());

  // The open ledger first: the bookie to lose is in its (only) ensemble.
  std::vector<Written> ledgers;
  auto open = c.await(bk.create(3, 2, 2, "pw"));
  ASSERT_TRUE(open.ok()) << open.status().to_string();
  for (int64_t e = 0; e < 149; ++e) {
    BufferChain p(Buffer::copy_of(payload_of((*open)->id().value(), e)));
    ASSERT_TRUE(c.await((*open)->add(std::move(p))).ok());
  }
  ledgers.push_back({(*open)->id().value(), 149, (*open)->metadata().segments[0].ensemble});
  const std::string dead = ledgers[0].original[1];
  int closed_with_dead = 0;
  for (int n = 0; n < 8; ++n) {
    auto lh = c.await(bk.create(3, 2, 2, "pw"));
    ASSERT_TRUE(lh.ok()) << lh.status().to_string();
    const int64_t id = (*lh)->id().value();
    const int64_t count = 100 + 37 * n;
    for (int64_t e = 0; e < count; ++e) {
      BufferChain p(Buffer::copy_of(payload_of(id, e)));
      ASSERT_TRUE(c.await((*lh)->add(std::move(p))).ok());
    }
    ASSERT_TRUE(c.await((*lh)->close()).ok());
    const auto& ens = (*lh)->metadata().segments[0].ensemble;
    closed_with_dead += std::count(ens.begin(), ens.end(), dead) ? 1 : 0;
    ledgers.push_back({id, count, ens});
  }
  std::vector<int64_t> ids;
  for (const auto& w : ledgers) ids.push_back(w.id);

  // Two instances: one audits, both replicate (their locks keep them off each other's ledgers).
  Instance a = start_instance(c, "10.9.9.1:3181", fast_config());
  Instance b = start_instance(c, "10.9.9.2:3181", fast_config());
  ASSERT_TRUE(a.service && b.service);
  ASSERT_TRUE(c.loop().run_until([&] { return a.service->is_auditor(); }));
  EXPECT_FALSE(b.service->is_auditor());
  EXPECT_EQ(c.await(current_auditor(c.store())).value(), "10.9.9.1:3181");

  const auto killed = Clock::now();
  c.find(dead)->stop();
  c.unregister(dead);
  const double seconds = wait_recovered(c, bk, ids, dead, std::chrono::seconds(60), killed);
  ASSERT_GE(seconds, 0) << "ledgers still name " << dead << " or are still marked after 60 s";
  std::printf("auto-recovery: %d ledgers held copies on the lost bookie (1 open, %d closed); "
              "re-replicated and the metadata rewritten %.2f s after the bookie's loss "
              "(open ledger grace 1 s)\n",
              1 + closed_with_dead, closed_with_dead, seconds);
  RecordProperty("recovery_seconds", std::to_string(seconds));

  // From the metadata: every ledger closed (the open one by the worker's recovery), no
  // segment naming the dead bookie; each replaced position's copies are on its replacement.
  int64_t copies_checked = 0;
  for (const auto& w : ledgers) {
    auto md = c.await(bk.read_metadata(LedgerId{w.id}));
    ASSERT_TRUE(md.ok()) << md.status().to_string();
    EXPECT_EQ(md->state, ledger::LedgerState::kClosed) << "ledger " << w.id;
    EXPECT_EQ(md->last_entry_id, w.entries - 1) << "ledger " << w.id;
    for (size_t si = 0; si < md->segments.size(); ++si) {
      const auto& seg = md->segments[si];
      const int64_t end = si + 1 < md->segments.size() ? md->segments[si + 1].first_entry_id - 1
                                                       : md->last_entry_id;
      for (int p = 0; p < 3; ++p) {
        if (si != 0 || w.original[static_cast<size_t>(p)] != dead) continue;
        const std::string& replacement = seg.ensemble[static_cast<size_t>(p)];
        EXPECT_EQ(std::count(w.original.begin(), w.original.end(), replacement), 0);
        for (int64_t e = seg.first_entry_id; e <= end; ++e) {
          auto ws = md->write_set(e);
          if (std::find(ws.begin(), ws.end(), p) == ws.end()) continue;
          auto copy = c.await(read_copy(bk, replacement, w.id, e));
          ASSERT_TRUE(copy.ok()) << "ledger " << w.id << " entry " << e << " on " << replacement
                                 << ": " << copy.status().to_string();
          EXPECT_EQ(*copy, payload_of(w.id, e));
          ++copies_checked;
        }
      }
    }
    // Every entry reads back through the client.
    auto reader = c.await(bk.open(LedgerId{w.id}, "pw", false));
    ASSERT_TRUE(reader.ok()) << reader.status().to_string();
    auto all = c.await((*reader)->read(EntryId{0}, EntryId{w.entries - 1}));
    ASSERT_TRUE(all.ok()) << "ledger " << w.id << ": " << all.status().to_string();
    for (int64_t e = 0; e < w.entries; ++e) {
      ASSERT_EQ((*all)[static_cast<size_t>(e)].payload.view(), payload_of(w.id, e));
    }
  }
  EXPECT_GT(copies_checked, 100);
  auto& registry = metrics::default_registry();
  const std::string exposed = registry.expose();
  EXPECT_NE(exposed.find("magnetar_autorecovery_rereplicated_entries_total"), std::string::npos);
  EXPECT_NE(exposed.find("magnetar_autorecovery_ledgers_marked_total"), std::string::npos);

  // The copies are real: with the open ledger's other original bookies down as well, every
  // entry stored at the dead bookie's position reads back, from its replacement alone.
  stop_instance(c, a);
  stop_instance(c, b);
  const Written& w = ledgers[0];
  for (int p : {0, 2}) c.find(w.original[static_cast<size_t>(p)])->stop();
  auto md = c.await(bk.read_metadata(LedgerId{w.id})).value();
  auto reader = c.await(bk.open(LedgerId{w.id}, "pw", false));
  ASSERT_TRUE(reader.ok()) << reader.status().to_string();
  int read_alone = 0;
  for (int64_t e = 0; e < w.entries; ++e) {
    if (md.segments.size() > 1 && e >= md.segments[1].first_entry_id) break;
    auto ws = md.write_set(e);
    if (std::find(ws.begin(), ws.end(), 1) == ws.end()) continue;
    auto one = c.await((*reader)->read(EntryId{e}, EntryId{e}));
    ASSERT_TRUE(one.ok()) << "entry " << e << ": " << one.status().to_string();
    EXPECT_EQ(one->front().payload.view(), payload_of(w.id, e));
    ++read_alone;
  }
  EXPECT_GT(read_alone, 50);
}

TEST(AutoRecoveryTest, TheNextInstanceIsElectedAuditorAndRecoversALaterLoss) {
  Cluster c(test_name());
  for (int i = 0; i < 4; ++i) c.add_bookie();
  ledger::BookKeeper bk(c.store(), c.executor());
  auto lh = c.await(bk.create(3, 2, 2, ""));
  ASSERT_TRUE(lh.ok()) << lh.status().to_string();
  const int64_t id = (*lh)->id().value();
  for (int64_t e = 0; e < 60; ++e) {
    BufferChain p(Buffer::copy_of(payload_of(id, e)));
    ASSERT_TRUE(c.await((*lh)->add(std::move(p))).ok());
  }
  ASSERT_TRUE(c.await((*lh)->close()).ok());
  const std::string dead = (*lh)->metadata().segments[0].ensemble[2];

  Instance first = start_instance(c, "10.9.9.1:3181", fast_config());
  ASSERT_TRUE(first.service);
  ASSERT_TRUE(c.loop().run_until([&] { return first.service->is_auditor(); }));
  Instance second = start_instance(c, "10.9.9.2:3181", fast_config());
  ASSERT_TRUE(second.service);
  EXPECT_FALSE(second.service->is_auditor());
  stop_instance(c, first);  // its vote goes with its session
  ASSERT_TRUE(c.loop().run_until([&] { return second.service->is_auditor(); },
                                 std::chrono::seconds(10)));
  EXPECT_EQ(c.await(current_auditor(c.store())).value(), "10.9.9.2:3181");

  const auto killed = Clock::now();
  c.find(dead)->stop();
  c.unregister(dead);
  const double seconds = wait_recovered(c, bk, {id}, dead, std::chrono::seconds(30), killed);
  ASSERT_GE(seconds, 0) << "not recovered by the re-elected auditor's instance";
  std::printf("auto-recovery after re-election: recovered in %.2f s\n", seconds);
  auto reader = c.await(bk.open(LedgerId{id}, "", false));
  ASSERT_TRUE(reader.ok());
  auto all = c.await((*reader)->read(EntryId{0}, EntryId{59}));
  ASSERT_TRUE(all.ok()) << all.status().to_string();
  stop_instance(c, second);
}

// A live writer that replaced the lost bookie itself keeps its ledger while the worker copies
// the earlier fragment under it (as BookKeeper's does): the writer's next metadata updates (an
// ensemble change of its own, then its close) find the version changed and write on top of
// the worker's replacement instead of taking it for a fencing.
TEST(AutoRecoveryTest, AnOpenLedgersEarlierFragmentIsCopiedUnderItsLiveWriter) {
  Cluster c(test_name());
  for (int i = 0; i < 5; ++i) c.add_bookie();
  ledger::BookKeeper bk(c.store(), c.executor());
  auto lh = c.await(bk.create(3, 2, 2, "pw"));
  ASSERT_TRUE(lh.ok()) << lh.status().to_string();
  const int64_t id = (*lh)->id().value();
  auto add = [&](int64_t from, int64_t to) {
    for (int64_t e = from; e < to; ++e) {
      BufferChain p(Buffer::copy_of(payload_of(id, e)));
      ASSERT_TRUE(c.await((*lh)->add(std::move(p))).ok()) << "entry " << e;
    }
  };
  add(0, 60);
  const std::string dead = (*lh)->metadata().segments[0].ensemble[0];
  c.find(dead)->stop();
  c.unregister(dead);
  add(60, 120);  // the writer changes its ensemble on its own
  ASSERT_EQ((*lh)->metadata().segments.size(), 2u);
  Instance only = start_instance(c, "10.9.9.1:3181", fast_config());
  ASSERT_TRUE(only.service);
  const double seconds =
      wait_recovered(c, bk, {id}, dead, std::chrono::seconds(30), Clock::now());
  ASSERT_GE(seconds, 0) << "the open ledger still names " << dead;
  std::printf("auto-recovery: an open ledger's earlier fragment re-replicated under its live "
              "writer in %.2f s\n",
              seconds);
  // The writer still names the lost bookie in its own copy of the metadata; its next ensemble
  // change must keep the worker's replacement.
  const std::string replacement =
      c.await(bk.read_metadata(LedgerId{id})).value().segments[0].ensemble[0];
  std::string second;  // a bookie of the writer's ensemble, not the worker's replacement
  for (const auto& b : (*lh)->metadata().segments.back().ensemble) {
    if (b != replacement && second.empty()) second = b;
  }
  c.find(second)->stop();
  c.unregister(second);
  add(120, 180);
  ASSERT_TRUE(c.await((*lh)->close()).ok());
  auto md = c.await(bk.read_metadata(LedgerId{id})).value();
  EXPECT_EQ(md.state, ledger::LedgerState::kClosed);
  EXPECT_EQ(md.last_entry_id, 179);
  ASSERT_EQ(md.segments.size(), 3u);
  EXPECT_EQ(md.segments[0].ensemble[0], replacement);
  EXPECT_EQ(std::count(md.segments[2].ensemble.begin(), md.segments[2].ensemble.end(), second), 0);
  auto reader = c.await(bk.open(LedgerId{id}, "pw", false));
  ASSERT_TRUE(reader.ok());
  auto all = c.await((*reader)->read(EntryId{0}, EntryId{179}));
  ASSERT_TRUE(all.ok()) << all.status().to_string();
  for (int64_t e = 0; e < 180; ++e) {
    EXPECT_EQ((*all)[static_cast<size_t>(e)].payload.view(), payload_of(id, e)) << e;
  }
  stop_instance(c, only);
}

TEST(AutoRecoveryTest, TheAuditorWaitsTheLiveLostBookieRecoveryDelay) {
  Cluster c(test_name());
  for (int i = 0; i < 4; ++i) c.add_bookie();
  ledger::BookKeeper bk(c.store(), c.executor());
  auto lh = c.await(bk.create(3, 2, 2, ""));
  ASSERT_TRUE(lh.ok());
  const int64_t id = (*lh)->id().value();
  for (int64_t e = 0; e < 10; ++e) {
    BufferChain p(Buffer::copy_of(payload_of(id, e)));
    ASSERT_TRUE(c.await((*lh)->add(std::move(p))).ok());
  }
  ASSERT_TRUE(c.await((*lh)->close()).ok());
  const std::string dead = (*lh)->metadata().segments[0].ensemble[0];
  AutoRecoveryConfig config = fast_config();
  config.lost_bookie_recovery_delay_s = 3600;  // the node created from it says 3600
  UnderreplicationManager urm(c.store(), "test");
  ASSERT_TRUE(c.await(urm.ensure_layout()).ok());
  ASSERT_TRUE(c.await(urm.set_replication_enabled(false)).ok());  // keep the marker visible
  Instance only = start_instance(c, "10.9.9.1:3181", config);
  ASSERT_TRUE(only.service);
  ASSERT_TRUE(c.loop().run_until([&] { return only.service->is_auditor(); }));
  c.find(dead)->stop();
  c.unregister(dead);
  c.loop().run_for(std::chrono::seconds(2));
  EXPECT_FALSE(c.await(urm.get(id)).value().has_value()) << "marked before the delay passed";
  ASSERT_TRUE(c.await(urm.set_lost_bookie_recovery_delay(0)).ok());  // operator shortens it
  ASSERT_TRUE(c.loop().run_until(
      [&] {
        auto m = c.await(urm.get(id));
        return m.ok() && m->has_value();
      },
      std::chrono::seconds(10)));
  auto marker = c.await(urm.get(id)).value();
  EXPECT_EQ(marker->data.replicas, std::vector<std::string>{dead});
  stop_instance(c, only);
}

}  // namespace
}  // namespace magnetar::autorecovery
