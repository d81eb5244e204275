#include "bookie/cookie.h"

#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace magnetar::bookie {
namespace {

std::string random_instance_id() {
  std::random_device rd;
  return fmt::format("{:016x}{:016x}", (uint64_t{rd()} << 32) | rd(), (uint64_t{rd()} << 32) | rd());
}

Status refuse(std::string why) {
  return Status(Errc::kInvalidArgument, "bookie refuses to start: " + std::move(why));
}

}  // namespace

std::string Cookie::to_json() const {
  nlohmann::json j = {{"layoutVersion", 1},
                      {"bookieId", bookie_id},
                      {"journalDirs", journal_dirs},
                      {"ledgerDirs", ledger_dirs},
                      {"instanceId", instance_id}};
  return j.dump();
}

Result<Cookie> Cookie::from_json(std::string_view text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status(Errc::kCorruption, "cookie is not JSON");
  Cookie c;
  try {
    c.bookie_id = j.at("bookieId").get<std::string>();
    c.journal_dirs = j.at("journalDirs").get<std::vector<std::string>>();
    c.ledger_dirs = j.at("ledgerDirs").get<std::vector<std::string>>();
    c.instance_id = j.at("instanceId").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    return Status(Errc::kCorruption, fmt::format("cookie lacks a field: {}", e.what()));
  }
  return c;
}

Status check_and_stamp_cookie(const BookieConfig& config, metadata::MetadataStore& store,
                              Env& env) {
  using metadata::PutOptions;
  // The cluster's instance id: created by the first bookie.
  auto instance = run_sync<Result<std::optional<metadata::GetResult>>>(
      [&]() { return store.get("/ledgers/INSTANCEID"); });
  if (!instance.ok()) return instance.status();
  std::string instance_id;
  if (instance->has_value()) {
    instance_id = (*instance)->value;
  } else {
    std::string fresh = random_instance_id();
    auto put = run_sync<Result<metadata::PutResult>>(
        [&]() { return store.put_recursive("/ledgers/INSTANCEID", fresh, PutOptions{-1, false, false}); });
    if (put.ok()) {
      instance_id = fresh;
    } else if (put.status().is(Errc::kBadVersion)) {  // another bookie won the race
      auto again = run_sync<Result<std::optional<metadata::GetResult>>>(
          [&]() { return store.get("/ledgers/INSTANCEID"); });
      if (!again.ok() || !again->has_value()) return refuse("cannot read /ledgers/INSTANCEID");
      instance_id = (*again)->value;
    } else {
      return put.status();
    }
  }

  Cookie mine{config.bookie_id(), config.journal_directories, config.ledger_directories,
              instance_id};
  std::vector<std::string> dirs = config.journal_directories;
  dirs.insert(dirs.end(), config.ledger_directories.begin(), config.ledger_directories.end());

  std::string meta_path = "/ledgers/cookies/" + config.bookie_id();
  auto stored = run_sync<Result<std::optional<metadata::GetResult>>>(
      [&]() { return store.get(meta_path); });
  if (!stored.ok()) return stored.status();

  std::vector<std::string> stamped, missing;
  for (const std::string& dir : dirs) {
    std::string file = dir + "/current/VERSION";
    if (!env.exists(file)) {
      missing.push_back(dir);
      continue;
    }
    MAGNETAR_ASSIGN_OR_RETURN(std::string text, env.read_small_file(file));
    auto c = Cookie::from_json(text);
    if (!c.ok()) return refuse(fmt::format("cookie in '{}' is unreadable: {}", file, c.status().message()));
    if (!(*c == mine)) {
      return refuse(fmt::format("the cookie in '{}' belongs to bookie '{}' of instance '{}' with "
                                "other directories; this is bookie '{}' of instance '{}'",
                                dir, c->bookie_id, c->instance_id, mine.bookie_id, instance_id));
    }
    stamped.push_back(dir);
  }

  if (stored->has_value()) {
    auto c = Cookie::from_json((*stored)->value);
    if (!c.ok() || !(*c == mine)) {
      return refuse(fmt::format("the cookie at {} does not match this bookie's configuration "
                                "(bookie id, directories or instance)",
                                meta_path));
    }
    if (!missing.empty()) {
      return refuse(fmt::format("directory '{}' has no cookie but the metadata store knows this "
                                "bookie: the disk was wiped or replaced (decommission the bookie "
                                "and let its ledgers re-replicate, then delete {})",
                                missing.front(), meta_path));
    }
    return Status::OK();
  }
  if (!stamped.empty()) {
    return refuse(fmt::format("directory '{}' has a cookie but the metadata store has none at {}: "
                              "the metadata store was reset or this is another cluster",
                              stamped.front(), meta_path));
  }
  // A new bookie: stamp every directory, then the metadata store.
  for (const std::string& dir : dirs) {
    MAGNETAR_TRY(env.create_dirs(dir + "/current"));
    MAGNETAR_TRY(env.write_file_atomically(dir + "/current/VERSION", mine.to_json()));
  }
  auto put = run_sync<Result<metadata::PutResult>>(
      [&]() { return store.put_recursive(meta_path, mine.to_json(), PutOptions{-1, false, false}); });
  return put.status();
}

}  // namespace magnetar::bookie
