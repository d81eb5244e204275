#pragma once
// One set of test certificates (tls_certs.h) for a whole gtest suite, in
// "<tmp>/magnetar-<name>-<pid>". Mix into a fixture and call make_suite_certs(name) from its
// SetUpTestSuite and remove_suite_certs() from its TearDownTestSuite; tests read certs_ (the
// files) and dir_ (for paths of files that do not exist).

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "testing/tls_certs.h"

namespace magnetar::testing {

class TlsSuiteCerts {
 protected:
  static void make_suite_certs(const std::string& name) {
    dir_ = new std::string((std::filesystem::temp_directory_path() /
                            ("magnetar-" + name + "-" + std::to_string(::getpid())))
                               .string());
    auto made = make_test_certs(*dir_);
    ASSERT_TRUE(made.ok()) << made.status().to_string();
    certs_ = new TestCerts(*made);
  }
  static void remove_suite_certs() {
    if (dir_ != nullptr) std::filesystem::remove_all(*dir_);
    delete certs_;
    delete dir_;
    certs_ = nullptr;
    dir_ = nullptr;
  }

  static inline std::string* dir_ = nullptr;
  static inline TestCerts* certs_ = nullptr;
};

}  // namespace magnetar::testing
