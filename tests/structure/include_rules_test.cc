// The include rule holds in this tree, and the checker does catch a broken one.

#include "include_rules.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

namespace magnetar::structure {
namespace {

namespace fs = std::filesystem;

std::string describe(const std::vector<Violation>& violations) {
  std::string out;
  for (const auto& v : violations) {
    out += v.file + ":" + std::to_string(v.line) + ": " + v.why +
           (v.include.empty() ? "" : " (\"" + v.include + "\")") + "\n";
  }
  return out;
}

// A throwaway tree with one source file.
class FakeTree {
 public:
  FakeTree() : root_(fs::temp_directory_path() / ("include-rules-" + std::to_string(::getpid()))) {
    fs::remove_all(root_);
  }
  ~FakeTree() { fs::remove_all(root_); }
  void write(const std::string& rel, const std::string& text) {
    const fs::path p = root_ / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  const fs::path& root() const { return root_; }

 private:
  fs::path root_;
};

TEST(IncludeRules, HoldInThisTree) {
  const auto violations = check_includes(MAGNETAR_SOURCE_DIR);
  EXPECT_TRUE(violations.empty()) << describe(violations);
}

TEST(IncludeRules, AServiceFileIncludingAWireHeaderIsAViolation) {
  FakeTree tree;
  tree.write("src/broker/service/topic.cc",
             "#include \"broker/service/topic.h\"\n#include \"broker/wire/connection.h\"\n");
  const auto violations = check_includes(tree.root());
  ASSERT_EQ(violations.size(), 1u) << describe(violations);
  EXPECT_EQ(violations[0].file, "src/broker/service/topic.cc");
  EXPECT_EQ(violations[0].line, 2);
  EXPECT_EQ(violations[0].include, "broker/wire/connection.h");
}

TEST(IncludeRules, UpwardAndSidewaysIncludesAreViolations) {
  FakeTree tree;
  tree.write("src/broker/wire/a.cc", "#include \"broker/admin/broker_routes.h\"\n");
  tree.write("src/broker/namespace/b.cc", "#include \"broker/service/topic.h\"\n");
  tree.write("src/client/c.cc", "#include \"broker/broker.h\"\n");
  tree.write("src/common/d.h", "#include \"net/stream.h\"\n");
  tree.write("src/broker/service/e.cc",
             "#include \"http/http_server.h\"\n#include \"net/tls.h\"\n");
  EXPECT_EQ(check_includes(tree.root()).size(), 6u) << describe(check_includes(tree.root()));
}

TEST(IncludeRules, DownwardIncludesTestsAndSameFolderIncludesAreFine) {
  FakeTree tree;
  tree.write("src/broker/wire/a.cc",
             "#include \"broker/service/topic.h\"\n#include \"net/stream.h\"\n#include \"x.h\"\n");
  tree.write("src/broker/service/tests/t.cc", "#include \"broker/wire/connection.h\"\n");
  tree.write("src/broker/broker.cc", "#include \"broker/wire/connection.h\"\n");
  const auto violations = check_includes(tree.root());
  EXPECT_TRUE(violations.empty()) << describe(violations);
}

TEST(IncludeRules, AModuleMissingFromTheTableIsAViolation) {
  FakeTree tree;
  tree.write("src/newthing/a.cc", "#include \"common/status.h\"\n");
  const auto violations = check_includes(tree.root());
  ASSERT_EQ(violations.size(), 1u);
  EXPECT_NE(violations[0].why.find("newthing"), std::string::npos);
}

TEST(IncludeRules, ModulesOfPaths) {
  EXPECT_EQ(module_of("broker/service/topic.h"), "broker/service");
  EXPECT_EQ(module_of("broker/broker.h"), "broker");
  EXPECT_EQ(module_of("magnetar/client.h"), "client");
  EXPECT_EQ(module_of("proto/pulsar_api.pb.h"), "proto");
  EXPECT_EQ(module_of("common/status.h"), "common");
}

}  // namespace
}  // namespace magnetar::structure
