#pragma once
// `magnetar standalone` as a child process of a test, on free ports under a directory of the
// test's; start() waits for "standalone ready", kill() is a SIGKILL, start() again restarts
// it over the same data and ports.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "common/ports.h"
#include "testing/child_process.h"

#ifndef MAGNETAR_BINARY
#error "tests/integration/CMakeLists.txt passes MAGNETAR_BINARY, the magnetar executable"
#endif

namespace magnetar::testing {

using namespace std::chrono_literals;

class Standalone {
 public:
  // `settings`: extra `--set key=value` pairs; `args`: more arguments (flags, --conf FILE).
  explicit Standalone(std::filesystem::path dir, std::vector<std::string> settings = {},
                      std::vector<std::string> args = {})
      : dir_(std::move(dir)), settings_(std::move(settings)), args_(std::move(args)) {
    pick_ports();
  }
  ~Standalone() { kill(); }

  // Starts it and waits for "standalone ready" in this run's log. A first start over no data,
  // without arguments that could name a port, whose port was taken between picking and
  // listening (another pick landed on it: see Region::start in src/tools/dr_drill.cc) starts
  // again on other ports, the failed start's data removed: the bookie's cookie names its port.
  ::testing::AssertionResult start() {
    const bool fresh = !std::filesystem::exists(dir_ / "standalone");
    for (int attempt = 1;; ++attempt) {
      auto started = start_once();
      if (started || !fresh || !args_.empty() || !move_when_a_port_is_taken_ || attempt == 3 ||
          !port_taken_) {
        return started;
      }
      std::error_code ec;
      std::filesystem::remove_all(dir_ / "standalone", ec);
      pick_ports();
    }
  }
  // For a test that takes one of the picked ports itself to see the start fail.
  void keep_ports_when_taken() { move_when_a_port_is_taken_ = false; }
  void kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    testing::reap_child(pid_, true);
    pid_ = -1;
  }
  int port() const { return port_; }
  int web_port() const { return web_port_; }
  int bookie_port() const { return bookie_port_; }
  void set_args(std::vector<std::string> args) { args_ = std::move(args); }
  // The bookie's port is its identity (the cookie in its directories names it): a restart over
  // the same data keeps it.
  void set_bookie_port(int port) { bookie_port_ = port; }
  // Everything the process logged (all runs).
  std::string log() const {
    std::ifstream in(dir_ / "standalone.log");
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

 private:
  void pick_ports() {
    auto ports = pick_free_ports(3);
    if (!ports.ok()) return;  // the start fails on port 0 and says so
    port_ = (*ports)[0];
    web_port_ = (*ports)[1];
    bookie_port_ = (*ports)[2];
  }

  ::testing::AssertionResult start_once() {
    port_taken_ = false;
    const std::string log = (dir_ / "standalone.log").string();
    std::error_code ec;
    const auto before = std::filesystem::exists(log) ? std::filesystem::file_size(log, ec) : 0;
    std::vector<std::string> args = {MAGNETAR_BINARY, "standalone",
                                     "--data-dir",    dir_.string(),
                                     "--set",         fmt::format("brokerServicePort={}", port_),
                                     "--set",         fmt::format("webServicePort={}", web_port_),
                                     "--set",         fmt::format("bookiePort={}", bookie_port_),
                                     "--set",         "bindAddress=127.0.0.1",
                                     "--set",         "journalMaxGroupWaitMSec=1"};
    for (const auto& s : settings_) {
      args.push_back("--set");
      args.push_back(s);
    }
    args.insert(args.end(), args_.begin(), args_.end());
    auto pid = testing::spawn_child(std::move(args), log, dir_.string());
    if (!pid.ok()) return ::testing::AssertionFailure() << pid.status().to_string();
    pid_ = *pid;
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < deadline) {
      std::ifstream in(log);
      in.seekg(static_cast<std::streamoff>(before));
      std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
      if (text.find("standalone ready") != std::string::npos) {
        return ::testing::AssertionSuccess();
      }
      if (testing::reap_child(pid_, false).has_value()) {
        pid_ = -1;
        port_taken_ = text.find("Address already in use") != std::string::npos;
        return ::testing::AssertionFailure() << "standalone exited:\n" << text;
      }
      std::this_thread::sleep_for(50ms);
    }
    return ::testing::AssertionFailure() << "standalone not ready in 30 s";
  }

  std::filesystem::path dir_;
  std::vector<std::string> settings_;
  std::vector<std::string> args_;
  int port_ = 0, web_port_ = 0, bookie_port_ = 0;
  pid_t pid_ = -1;
  bool move_when_a_port_is_taken_ = true;
  bool port_taken_ = false;
};

}  // namespace magnetar::testing
