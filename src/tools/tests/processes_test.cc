#include "tools/processes.h"

#include <gtest/gtest.h>

#include <string>

namespace magnetar::tools {
namespace {

TEST(PortTakenLineTest, FindsOursAndTrimsTheLogPrefix) {
  const std::string log =
      "2026-12-07T04:09:10.100Z INFO  [broker] starting\n"
      "2026-12-07T04:09:10.188Z ERROR [broker] magnetar.unavailable: cannot listen on "
      "127.0.0.1:38371: Address already in use\n"
      "2026-12-07T04:09:10.190Z INFO  [broker] stopped\n";
  EXPECT_EQ(port_taken_line(log), "cannot listen on 127.0.0.1:38371: Address already in use");
}

TEST(PortTakenLineTest, FindsOtherServersWordingsInAnyCase) {
  EXPECT_EQ(port_taken_line("x\njava.net.BindException: Address already in use\ny"),
            "java.net.BindException: Address already in use");
  EXPECT_EQ(port_taken_line("listen tcp 127.0.0.1:2379: bind: address already in use"),
            "listen tcp 127.0.0.1:2379: bind: address already in use");
}

TEST(PortTakenLineTest, NothingWhenNoLineSaysSo) {
  EXPECT_EQ(port_taken_line(""), "");
  EXPECT_EQ(port_taken_line("cannot listen on 127.0.0.1:1: Permission denied\nAddress\n"), "");
  // The words split over two lines are not one line saying so.
  EXPECT_EQ(port_taken_line("Address already\nin use"), "");
}

TEST(PortTakenLineTest, ALongLineIsCut) {
  const std::string line = std::string(300, 'x') + " address already in use";
  const std::string found = port_taken_line(line + "\n");
  EXPECT_EQ(found, line.substr(0, 200) + "...");
}

}  // namespace
}  // namespace magnetar::tools
