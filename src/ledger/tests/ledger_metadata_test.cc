#include "ledger/ledger_metadata.h"

#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>

namespace magnetar::ledger {
namespace {

std::vector<std::string> ensemble(std::initializer_list<int> ids) {
  std::vector<std::string> out;
  for (int id : ids) out.push_back("bookie-" + std::to_string(id) + ":3181");
  return out;
}

// A closed ledger with three segments (two ensemble changes) and Pulsar's custom metadata.
LedgerMetadata closed_ledger() {
  LedgerMetadata m;
  m.ledger_id = 42;
  m.ensemble_size = 3;
  m.write_quorum = 2;
  m.ack_quorum = 2;
  m.state = LedgerState::kClosed;
  m.last_entry_id = 99;
  m.length = 123456;
  m.digest = DigestType::kCrc32c;
  m.password = std::string("p\0w\xff", 4);  // raw bytes, not text
  m.ctime_ms = 1700000000123;
  m.custom = {{"application", "pulsar"},
              {"component", "managed-ledger"},
              {"pulsar/managed-ledger", "public/default/persistent/t\xc3\xa9st"}};
  m.segments = {{0, ensemble({1, 2, 3})}, {10, ensemble({1, 4, 3})}, {25, ensemble({5, 4, 3})}};
  return m;
}

LedgerMetadata open_ledger() {
  LedgerMetadata m;
  m.ledger_id = 7;
  m.ensemble_size = 2;
  m.write_quorum = 2;
  m.ack_quorum = 1;
  m.segments = {{0, ensemble({1, 2})}};
  return m;
}

std::string hex(std::string_view bytes) {
  std::string out;
  for (char c : bytes) {
    static constexpr char kDigits[] = "0123456789abcdef";
    out.push_back(kDigits[static_cast<unsigned char>(c) >> 4]);
    out.push_back(kDigits[static_cast<unsigned char>(c) & 0x0f]);
  }
  return out;
}

TEST(LedgerMetadataTest, JsonRoundTripKeepsSegmentsCustomAndBinaryPassword) {
  const LedgerMetadata m = closed_ledger();
  ASSERT_TRUE(m.validate().ok()) << m.validate().to_string();
  auto back = LedgerMetadata::from_json(m.to_json());
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(*back, m);
  EXPECT_EQ(back->segments.size(), 3u);
  EXPECT_EQ(back->password.size(), 4u);
}

TEST(LedgerMetadataTest, JsonRoundTripOfEveryState) {
  for (LedgerState state : {LedgerState::kOpen, LedgerState::kInRecovery}) {
    LedgerMetadata m = open_ledger();
    m.state = state;
    m.digest = DigestType::kDummy;
    auto back = LedgerMetadata::from_json(m.to_json());
    ASSERT_TRUE(back.ok()) << back.status().to_string();
    EXPECT_EQ(*back, m);
  }
  LedgerMetadata empty_closed = open_ledger();
  empty_closed.state = LedgerState::kClosed;  // closed with no entries: last entry -1
  auto back = LedgerMetadata::from_json(empty_closed.to_json());
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->last_entry_id, -1);
}

TEST(LedgerMetadataTest, JsonHasTheDocumentedShape) {
  auto j = nlohmann::json::parse(closed_ledger().to_json());
  EXPECT_EQ(j["format_version"], 1);
  EXPECT_EQ(j["state"], "CLOSED");
  EXPECT_EQ(j["last_entry_id"], 99);
  EXPECT_EQ(j["digest"], "CRC32C");
  EXPECT_EQ(j["password_hex"], "700077ff");
  EXPECT_EQ(j["segments"][1]["first_entry_id"], 10);
  EXPECT_EQ(j["segments"][1]["ensemble"][1], "bookie-4:3181");
  EXPECT_EQ(j["custom"]["application"], "pulsar");

  auto open = nlohmann::json::parse(open_ledger().to_json());
  EXPECT_EQ(open["state"], "OPEN");
  EXPECT_FALSE(open.contains("last_entry_id"));  // written only when closed
  EXPECT_FALSE(open.contains("length"));
}

TEST(LedgerMetadataTest, GarbageIsCorruption) {
  for (std::string_view text :
       {"", "not json", "{", "[]", "42", "\"x\"", "{}", "{\"format_version\":1}",
        "{\"format_version\":\"1\"}", "\xff\xfe"}) {
    auto r = LedgerMetadata::from_json(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_TRUE(r.status().is(Errc::kCorruption)) << r.status().to_string();
  }
}

TEST(LedgerMetadataTest, EachMissingFieldIsNamed) {
  const auto full = nlohmann::json::parse(closed_ledger().to_json());
  for (const char* field : {"ledger_id", "ensemble_size", "write_quorum", "ack_quorum", "state",
                            "last_entry_id", "length", "digest", "password_hex", "ctime_ms",
                            "custom", "segments"}) {
    auto j = full;
    j.erase(field);
    auto r = LedgerMetadata::from_json(j.dump());
    ASSERT_FALSE(r.ok()) << field;
    EXPECT_TRUE(r.status().is(Errc::kCorruption)) << r.status().to_string();
    EXPECT_NE(r.status().message().find(field), std::string::npos) << r.status().to_string();
  }
}

TEST(LedgerMetadataTest, MistypedFieldsAreCorruption) {
  const auto full = nlohmann::json::parse(closed_ledger().to_json());
  auto with = [&](const char* key, nlohmann::json value) {
    auto j = full;
    j[key] = std::move(value);
    return LedgerMetadata::from_json(j.dump());
  };
  const std::vector<std::pair<const char*, nlohmann::json>> cases = {
      {"ledger_id", "42"},
      {"ledger_id", -1},
      {"ensemble_size", 3.5},
      {"ensemble_size", int64_t{1} << 40},
      {"state", "BOGUS"},
      {"digest", "HMAC"},
      {"password_hex", "abc"},
      {"password_hex", "zz"},
      {"custom", nlohmann::json::array()},
      {"custom", {{"k", 1}}},
      {"segments", "b1:3181"},
      {"segments", {{{"first_entry_id", 0}, {"ensemble", {1, 2, 3}}}}},
      {"segments", {{{"first_entry_id", 0}}}},
      {"last_entry_id", -2},
      {"length", nullptr},
  };
  for (const auto& [key, value] : cases) {
    auto r = with(key, value);
    ASSERT_FALSE(r.ok()) << key << " = " << value.dump();
    EXPECT_TRUE(r.status().is(Errc::kCorruption)) << r.status().to_string();
  }
  auto ledger_id_size = [&]() {
    auto j = full;
    j["ledger_id"] = std::numeric_limits<uint64_t>::max();
    return LedgerMetadata::from_json(j.dump());
  }();
  EXPECT_TRUE(ledger_id_size.status().is(Errc::kCorruption));
}

TEST(LedgerMetadataTest, CloseFieldsOnAnOpenLedgerAreCorruption) {
  auto j = nlohmann::json::parse(open_ledger().to_json());
  j["last_entry_id"] = 5;
  auto r = LedgerMetadata::from_json(j.dump());
  EXPECT_TRUE(r.status().is(Errc::kCorruption)) << r.status().to_string();
}

TEST(LedgerMetadataTest, InvalidQuorumsAreRejected) {
  struct Quorums {
    int e, qw, qa;
  };
  for (Quorums q : {Quorums{3, 2, 3}, Quorums{2, 3, 2}, Quorums{3, 2, 0}, Quorums{0, 0, 0}}) {
    LedgerMetadata m = closed_ledger();
    m.ensemble_size = q.e;
    m.write_quorum = q.qw;
    m.ack_quorum = q.qa;
    Status st = m.validate();
    EXPECT_TRUE(st.is(Errc::kInvalidArgument)) << q.e << q.qw << q.qa << " " << st.to_string();
    auto r = LedgerMetadata::from_json(m.to_json());
    EXPECT_TRUE(r.status().is(Errc::kCorruption)) << r.status().to_string();
  }
}

TEST(LedgerMetadataTest, ValidateChecksSegments) {
  auto check_rejects = [](LedgerMetadata m, std::string_view why) {
    Status st = m.validate();
    EXPECT_TRUE(st.is(Errc::kInvalidArgument)) << why << ": " << st.to_string();
    EXPECT_TRUE(LedgerMetadata::from_json(m.to_json()).status().is(Errc::kCorruption)) << why;
  };
  LedgerMetadata m = closed_ledger();
  m.segments.clear();
  check_rejects(m, "no segments");

  m = closed_ledger();
  m.segments[0].first_entry_id = 1;
  check_rejects(m, "first segment not at 0");

  m = closed_ledger();
  m.segments[2].first_entry_id = 10;
  check_rejects(m, "first ids not strictly increasing");

  m = closed_ledger();
  m.segments[1].ensemble.pop_back();
  check_rejects(m, "ensemble smaller than E");

  m = closed_ledger();
  m.segments[1].ensemble[2] = m.segments[1].ensemble[0];
  check_rejects(m, "bookie twice in an ensemble");

  m = closed_ledger();
  m.segments[1].ensemble[2] = "";
  check_rejects(m, "empty bookie id");

  m = closed_ledger();
  m.last_entry_id = 23;  // the last segment starts at 25 > 23 + 1
  check_rejects(m, "segment after the end of a closed ledger");

  m = closed_ledger();
  m.last_entry_id = 24;  // closed right after an ensemble change: empty last segment is fine
  EXPECT_TRUE(m.validate().ok()) << m.validate().to_string();

  m = open_ledger();
  m.length = 10;  // to_json would drop it, so only validate() can notice
  EXPECT_TRUE(m.validate().is(Errc::kInvalidArgument));

  m = closed_ledger();
  m.ledger_id = -1;
  check_rejects(m, "negative ledger id");

  m = closed_ledger();
  m.custom["bad"] = "\xc3";  // truncated UTF-8
  EXPECT_TRUE(m.validate().is(Errc::kInvalidArgument));
}

TEST(LedgerMetadataTest, NewerFormatIsNotSupported) {
  auto j = nlohmann::json::parse(closed_ledger().to_json());
  j["format_version"] = 2;
  auto r = LedgerMetadata::from_json(j.dump());
  EXPECT_TRUE(r.status().is(Errc::kNotSupported)) << r.status().to_string();
}

TEST(LedgerMetadataTest, UnknownFieldsAreIgnored) {
  auto j = nlohmann::json::parse(closed_ledger().to_json());
  j["ctoken"] = 12345;
  auto r = LedgerMetadata::from_json(j.dump());
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(*r, closed_ledger());
}

TEST(LedgerMetadataTest, EnsembleForPicksTheSegmentAcrossBoundaries) {
  const LedgerMetadata m = closed_ledger();  // segments at 0, 10, 25
  EXPECT_EQ(m.ensemble_for(0), ensemble({1, 2, 3}));
  EXPECT_EQ(m.ensemble_for(9), ensemble({1, 2, 3}));
  EXPECT_EQ(m.ensemble_for(10), ensemble({1, 4, 3}));
  EXPECT_EQ(m.ensemble_for(24), ensemble({1, 4, 3}));
  EXPECT_EQ(m.ensemble_for(25), ensemble({5, 4, 3}));
  EXPECT_EQ(m.ensemble_for(std::numeric_limits<int64_t>::max()), ensemble({5, 4, 3}));
}

TEST(LedgerMetadataTest, WriteSetStripesRoundRobinOnTheAbsoluteEntryId) {
  const LedgerMetadata m = closed_ledger();  // E=3, Qw=2
  EXPECT_EQ(m.write_set(0), (std::vector<int>{0, 1}));
  EXPECT_EQ(m.write_set(1), (std::vector<int>{1, 2}));
  EXPECT_EQ(m.write_set(2), (std::vector<int>{2, 0}));
  EXPECT_EQ(m.write_set(3), (std::vector<int>{0, 1}));
  // Entry 10 opens the second segment but its write set still uses 10 % 3 = 1.
  EXPECT_EQ(m.write_set(10), (std::vector<int>{1, 2}));
  EXPECT_EQ(m.ensemble_for(10)[m.write_set(10)[0]], "bookie-4:3181");
  // No overflow near the top of the id space: INT64_MAX % 3 == 1.
  EXPECT_EQ(m.write_set(std::numeric_limits<int64_t>::max()), (std::vector<int>{1, 2}));

  LedgerMetadata wide = m;
  wide.ensemble_size = 4;
  wide.write_quorum = 3;
  EXPECT_EQ(wide.write_set(2), (std::vector<int>{2, 3, 0}));
  LedgerMetadata no_striping = m;
  no_striping.write_quorum = 3;
  EXPECT_EQ(no_striping.write_set(5), (std::vector<int>{2, 0, 1}));
}

TEST(LedgerMetadataTest, MasterKeyIsSha1OfLedgerAndPassword) {
  LedgerMetadata m = open_ledger();
  // printf ledger | sha1sum
  EXPECT_EQ(hex(m.master_key()), "850bf1071c5e3d8c24235676f8816ae0cbe2f14f");
  m.password = "secret";
  // printf ledgersecret | sha1sum
  EXPECT_EQ(hex(m.master_key()), "e793cbc379107648537183605cd361d3bb789a39");
  EXPECT_EQ(m.master_key().size(), 20u);
}

TEST(LedgerMetadataTest, LedgerPathsFollowBookKeepersHierarchicalLayout) {
  EXPECT_EQ(ledger_path(0), "/ledgers/00/0000/L0000");
  EXPECT_EQ(ledger_path(42), "/ledgers/00/0000/L0042");
  EXPECT_EQ(ledger_path(1234567890), "/ledgers/12/3456/L7890");
  EXPECT_EQ(ledger_path(2147483646), "/ledgers/21/4748/L3646");
  // From 2^31 - 1 on: 19 digits, split 3/4/4/4/4.
  EXPECT_EQ(ledger_path(2147483647), "/ledgers/000/0000/0021/4748/L3647");
  const int64_t max = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(ledger_path(max), "/ledgers/922/3372/0368/5477/L5807");
}

TEST(LedgerMetadataTest, FlatLedgerPathsOfEarlierVersionsParseBack) {
  EXPECT_EQ(metadata::flat_ledger_path(42), "/ledgers/L0000000000000000042");
  const int64_t max = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(metadata::flat_ledger_path(max), "/ledgers/L9223372036854775807");
  for (int64_t id : {int64_t{0}, int64_t{42}, int64_t{1} << 40, max}) {
    std::string path = metadata::flat_ledger_path(id);
    EXPECT_EQ(ledger_id_from_node_name(path.substr(sizeof("/ledgers/") - 1)), id);
  }
  for (std::string_view other : {"available", "cookies", "INSTANCEID", "LAYOUT", "idgen",
                                 "topology", "00", "000", "L42", "L000000000000000004x",
                                 "L9999999999999999999", "l0000000000000000042"}) {
    EXPECT_FALSE(ledger_id_from_node_name(other).has_value()) << other;
  }
}

}  // namespace
}  // namespace magnetar::ledger
