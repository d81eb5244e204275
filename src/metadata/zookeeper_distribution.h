#pragma once
// How to run Debian's ZooKeeper server (package `zookeeper`): the jars of its classpath, the
// main class and a JVM command line, for the processes that start ZooKeeper themselves
// (`magnetar cluster up`, the test fixtures).

#include <string>
#include <vector>

#include "common/status.h"

namespace magnetar::metadata {

// The server's classpath from /usr/share/java with its log4j 1.2 backend; kNotFound names
// every missing jar (install the `zookeeper` package).
Result<std::string> zookeeper_classpath();

// log4j 1.2 settings sending every line to stdout (which the caller redirects to a log file).
std::string zookeeper_log4j_properties();

// `java ... QuorumPeerMain <dir>/zoo.cfg`, reading <dir>/log4j.properties; small heap and a
// fast start, as a development or test server wants. `jute_max_buffer`: the largest packet.
std::vector<std::string> zookeeper_command(const std::string& java_binary,
                                           const std::string& classpath, const std::string& dir,
                                           size_t jute_max_buffer);

}  // namespace magnetar::metadata
