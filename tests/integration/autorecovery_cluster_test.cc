// Auto-recovery across real processes: a ZooKeeper JVM and four `magnetar bookie` processes
// with autoRecoveryDaemonEnabled=true (each runs an auditor candidate and a replication
// worker). Closed E=3 Qw=2 Qa=2 ledgers written from this process lose a SIGKILLed bookie;
// once its ZooKeeper session expires the elected auditor (possibly re-elected, when the
// victim was the auditor) marks its ledgers and the workers re-replicate them. Checked from
// the ledger metadata and by reading every entry back; the shell's whoisauditor and
// listunderreplicated run as `magnetar bookkeeper` processes.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <csignal>
#include <cstdio>
#include <memory>
#include <string>

#include "cluster_fixture.h"
#include "ledger/bookkeeper.h"
#include "testing/child_process.h"

namespace magnetar::ledger {
namespace {

using namespace std::chrono_literals;
using magnetar::testing::Settings;
using Clock = std::chrono::steady_clock;

std::string entry_text(int64_t ledger, int64_t e) {
  return fmt::format("autorecovery-{}-{:05d}-", ledger, e) + std::string(100, 'a' + e % 26);
}

// Runs `magnetar bookkeeper --set metadataStoreUrl=<url> <args>`; its stdout and exit code.
std::pair<int, std::string> shell(const std::string& url, const std::string& args) {
  const std::string command =
      fmt::format("{} bookkeeper --set metadataStoreUrl={} {} 2>&1", MAGNETAR_BINARY, url, args);
  FILE* p = ::popen(command.c_str(), "r");
  if (!p) return {-1, ""};
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

class AutoRecoveryClusterTest : public testing::ClusterFixture {
 protected:
  // `count` closed ledgers (E=3 Qw=2 Qa=2) of `entries` entries each (entry_text); their ids,
  // and in `member` the bookie at ensemble position `position` of the first one.
  std::vector<int64_t> write_closed_ledgers(BookKeeper& bk, int count, int64_t entries,
                                            size_t position, std::string& member) {
    std::vector<int64_t> ids;
    for (int n = 0; n < count; ++n) {
      auto lh = await(bk.create(3, 2, 2, "pw"));
      if (!lh.ok()) {
        ADD_FAILURE() << lh.status().to_string();
        return ids;
      }
      const int64_t id = (*lh)->id().value();
      for (int64_t e = 0; e < entries; ++e) {
        BufferChain p(Buffer::copy_of(entry_text(id, e)));
        EXPECT_TRUE(await((*lh)->add(std::move(p))).ok());
      }
      EXPECT_TRUE(await((*lh)->close()).ok());
      if (member.empty()) member = (*lh)->metadata().segments[0].ensemble[position];
      ids.push_back(id);
    }
    return ids;
  }
};

TEST_F(AutoRecoveryClusterTest, AKilledBookiesLedgersAreReReplicatedByTheBookiesThemselves) {
  const Settings recovery = {{"autoRecoveryDaemonEnabled", "true"},
                             {"lostBookieRecoveryDelay", "0"},
                             {"openLedgerRereplicationGracePeriod", "1000"},
                             {"rwRereplicateBackoffMs", "500"},
                             {"ensemblePlacementPolicy", "Default"}};
  ASSERT_NO_FATAL_FAILURE(start_bookies(4, recovery));
  BookKeeper bk(*store_, executor());
  std::vector<std::pair<int64_t, int64_t>> ledgers;  // id, entries
  std::string victim_id;
  for (int n = 0; n < 3; ++n) {
    auto lh = await(bk.create(3, 2, 2, "pw"));
    ASSERT_TRUE(lh.ok()) << lh.status().to_string();
    const int64_t id = (*lh)->id().value();
    const int64_t count = 200 + 50 * n;
    for (int64_t e = 0; e < count; ++e) {
      BufferChain p(Buffer::copy_of(entry_text(id, e)));
      ASSERT_TRUE(await((*lh)->add(std::move(p))).ok());
    }
    ASSERT_TRUE(await((*lh)->close()).ok());
    if (victim_id.empty()) victim_id = (*lh)->metadata().segments[0].ensemble[0];
    ledgers.emplace_back(id, count);
  }

  auto [rc, who] = shell(url_, "whoisauditor");
  ASSERT_EQ(rc, 0) << who;
  ASSERT_NE(who.find("Auditor: 127.0.0.1:"), std::string::npos) << who;

  const auto killed = Clock::now();
  bookie(victim_id)->kill();
  auto names_victim = [&]() {
    for (const auto& [id, count] : ledgers) {
      auto md = await(bk.read_metadata(LedgerId{id}));
      if (!md.ok()) return true;
      for (const auto& s : md->segments) {
        if (std::find(s.ensemble.begin(), s.ensemble.end(), victim_id) != s.ensemble.end()) {
          return true;
        }
      }
    }
    return false;
  };
  bool recovered = false;
  while (Clock::now() - killed < 90s) {
    if (!names_victim()) {
      recovered = true;
      break;
    }
    run_for(200ms);
  }
  ASSERT_TRUE(recovered) << "ledger metadata still names " << victim_id << " after 90 s";
  const double seconds = std::chrono::duration<double>(Clock::now() - killed).count();
  std::fprintf(stderr,
               "[ timing ] auto-recovery across processes: bookie %s SIGKILLed, its ledgers "
               "re-replicated %.1f s later (ZooKeeper session timeout 4 s)\n",
               victim_id.c_str(), seconds);

  for (const auto& [id, count] : ledgers) {
    auto reader = await(bk.open(LedgerId{id}, "pw", false));
    ASSERT_TRUE(reader.ok()) << reader.status().to_string();
    auto all = await((*reader)->read(EntryId{0}, EntryId{count - 1}));
    ASSERT_TRUE(all.ok()) << "ledger " << id << ": " << all.status().to_string();
    for (int64_t e = 0; e < count; ++e) {
      ASSERT_EQ((*all)[static_cast<size_t>(e)].payload.view(), entry_text(id, e));
    }
  }
  // Every marker completed; an auditor is elected among the survivors.
  bool drained = false;
  std::string listed;
  for (int i = 0; i < 50 && !drained; ++i) {
    auto [lrc, out] = shell(url_, "listunderreplicated -pmr");
    listed = out;
    // Log lines aside (the shell's configuration), no ledger id is listed.
    bool listed_ledger = false;
    for (size_t at = 0; at < out.size();) {
      const size_t end = std::min(out.find('\n', at), out.size());
      const std::string line = out.substr(at, end - at);
      if (!line.empty() && std::all_of(line.begin(), line.end(), ::isdigit)) listed_ledger = true;
      at = end + 1;
    }
    drained = lrc == 0 && !listed_ledger;
    if (!drained) run_for(200ms);
  }
  EXPECT_TRUE(drained) << listed;
  auto [rc2, who2] = shell(url_, "whoisauditor");
  EXPECT_EQ(rc2, 0) << who2;
  EXPECT_EQ(who2.find(victim_id), std::string::npos) << who2;
}

// `magnetar bookkeeper recover <bookie>` without any auto-recovery running: the shell itself
// copies a dead bookie's fragments and rewrites the metadata.
TEST_F(AutoRecoveryClusterTest, TheShellsRecoverReReplicatesADeadBookiesLedgersNow) {
  ASSERT_NO_FATAL_FAILURE(start_bookies(4));
  BookKeeper bk(*store_, executor());
  std::string victim_id;
  std::vector<std::pair<int64_t, int64_t>> ledgers;
  for (int64_t id : write_closed_ledgers(bk, 2, 120, 1, victim_id)) ledgers.emplace_back(id, 120);
  ASSERT_FALSE(HasFailure());
  bookie(victim_id)->kill();
  ASSERT_TRUE(wait_for_registration(victim_id, false, 20s));
  auto [qrc, query] = shell(url_, "recover -query " + victim_id);
  ASSERT_EQ(qrc, 0) << query;
  EXPECT_NE(query.find(fmt::format("ledgerID: {}", ledgers[0].first)), std::string::npos) << query;
  auto [rc, out] = shell(url_, "recover " + victim_id);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("Recovered"), std::string::npos) << out;
  for (const auto& [id, count] : ledgers) {
    auto md = await(bk.read_metadata(LedgerId{id}));
    ASSERT_TRUE(md.ok());
    for (const auto& s : md->segments) {
      EXPECT_EQ(std::count(s.ensemble.begin(), s.ensemble.end(), victim_id), 0) << "ledger " << id;
    }
    auto reader = await(bk.open(LedgerId{id}, "pw", false));
    ASSERT_TRUE(reader.ok());
    auto all = await((*reader)->read(EntryId{0}, EntryId{count - 1}));
    ASSERT_TRUE(all.ok()) << "ledger " << id << ": " << all.status().to_string();
    for (int64_t e = 0; e < count; ++e) {
      ASSERT_EQ((*all)[static_cast<size_t>(e)].payload.view(), entry_text(id, e));
    }
  }
  auto [arc, status] = shell(url_, "autorecovery -disable");
  EXPECT_EQ(arc, 0) << status;
  EXPECT_NE(status.find("Autorecovery is disabled."), std::string::npos) << status;
  auto [src, shown] = shell(url_, "autorecovery -status");
  EXPECT_NE(shown.find("Autorecovery is disabled."), std::string::npos) << shown;
}

// decommissionbookie with a standalone `magnetar autorecovery` process whose auditor would
// wait an hour (lostBookieRecoveryDelay=3600): only the shell's markers move the copies.
TEST_F(AutoRecoveryClusterTest, DecommissionBookieWaitsUntilAutoRecoveryMovedEveryCopy) {
  ASSERT_NO_FATAL_FAILURE(start_bookies(4));
  BookKeeper bk(*store_, executor());
  std::string victim_id;
  const std::vector<int64_t> ids = write_closed_ledgers(bk, 2, 100, 2, victim_id);
  ASSERT_FALSE(HasFailure());
  const std::string log = (root_ / "autorecovery.log").string();
  auto pid = testing::spawn_child(
      {MAGNETAR_BINARY, "autorecovery", "--set", "metadataStoreUrl=" + url_, "--set",
       "httpServerEnabled=false", "--set", "lostBookieRecoveryDelay=3600", "--set",
       "rwRereplicateBackoffMs=500", "--set", "ensemblePlacementPolicy=Default", "--set",
       "metadataStoreSessionTimeoutMillis=4000"},
      log);
  ASSERT_TRUE(pid.ok()) << pid.status().to_string();
  struct Reaper {
    pid_t pid;
    ~Reaper() {
      ::kill(pid, SIGTERM);
      testing::reap_child(pid, true);
    }
  } reaper{*pid};
  bool elected = false;
  for (int i = 0; i < 100 && !elected; ++i) {
    elected = shell(url_, "whoisauditor").first == 0;
    if (!elected) run_for(200ms);
  }
  ASSERT_TRUE(elected) << testing::file_tail(log, 20);

  auto [busy_rc, busy] = shell(url_, "decommissionbookie -bookieid " + victim_id);
  EXPECT_EQ(busy_rc, 1) << busy;
  EXPECT_NE(busy.find("still registered"), std::string::npos) << busy;

  bookie(victim_id)->kill();
  ASSERT_TRUE(wait_for_registration(victim_id, false, 20s));
  const auto began = Clock::now();
  auto [rc, out] = testing::run_command(fmt::format(
      "timeout 90 {} bookkeeper --set metadataStoreUrl={} decommissionbookie -bookieid {}",
      MAGNETAR_BINARY, url_, victim_id));
  ASSERT_EQ(rc, 0) << out << "\n" << testing::file_tail(log, 30);
  EXPECT_NE(out.find("Decommission of bookie " + victim_id + " completed"), std::string::npos)
      << out;
  std::fprintf(stderr, "[ timing ] decommissionbookie of %s took %.1f s\n", victim_id.c_str(),
               std::chrono::duration<double>(Clock::now() - began).count());
  for (int64_t id : ids) {
    auto md = await(bk.read_metadata(LedgerId{id}));
    ASSERT_TRUE(md.ok());
    for (const auto& s : md->segments) {
      EXPECT_EQ(std::count(s.ensemble.begin(), s.ensemble.end(), victim_id), 0) << "ledger " << id;
    }
    auto reader = await(bk.open(LedgerId{id}, "pw", false));
    ASSERT_TRUE(reader.ok());
    auto all = await((*reader)->read(EntryId{0}, EntryId{99}));
    ASSERT_TRUE(all.ok()) << "ledger " << id << ": " << all.status().to_string();
  }
  EXPECT_FALSE(await(store_->exists("/ledgers/cookies/" + victim_id)).value());
}

}  // namespace
}  // namespace magnetar::ledger
