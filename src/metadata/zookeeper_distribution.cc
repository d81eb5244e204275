#include "metadata/zookeeper_distribution.h"

#include <fmt/format.h>
#include <unistd.h>

namespace magnetar::metadata {

namespace {

constexpr const char* kJarDir = "/usr/share/java";
// The jars QuorumPeerMain loads from (found with -Xlog:class+load on a standalone server and a
// 3-server ensemble): Debian binds slf4j to log4j 1.2 and ships no logback. zookeeper.jar's
// manifest Class-Path adds the optional rest (netty for TLS, jetty and jackson for the admin
// server, commons-cli for the tools) when present.
constexpr const char* kJars[] = {
    "zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar",   "slf4j-log4j12.jar",
    "log4j-1.2.jar", "metrics-core.jar",   "snappy-java.jar",
};
constexpr const char* kMainClass = "org.apache.zookeeper.server.quorum.QuorumPeerMain";

}  // namespace

Result<std::string> zookeeper_classpath() {
  std::string classpath;
  std::string missing;
  for (const char* jar : kJars) {
    std::string path = fmt::format("{}/{}", kJarDir, jar);
    if (::access(path.c_str(), R_OK) != 0) {
      missing += " " + path;
      continue;
    }
    if (!classpath.empty()) classpath += ':';
    classpath += path;
  }
  if (!missing.empty()) {
    return Status(Errc::kNotFound, "ZooKeeper jars missing (apt-get install zookeeper):" + missing);
  }
  return classpath;
}

std::string zookeeper_log4j_properties() {
  return "log4j.rootLogger=INFO, OUT\n"
         "log4j.appender.OUT=org.apache.log4j.ConsoleAppender\n"
         "log4j.appender.OUT.Target=System.out\n"
         "log4j.appender.OUT.layout=org.apache.log4j.PatternLayout\n"
         "log4j.appender.OUT.layout.ConversionPattern="
         "%d{ISO8601} %-5p [myid:%X{myid}] [%t] %c{1} - %m%n\n";
}

std::vector<std::string> zookeeper_command(const std::string& java_binary,
                                           const std::string& classpath, const std::string& dir,
                                           size_t jute_max_buffer) {
  return {
      java_binary,
      "-Xmx256m",
      "-XX:+UseSerialGC",
      "-XX:TieredStopAtLevel=1",
      "-Xshare:auto",
      "-XX:-UsePerfData",  // no hsperfdata files in /tmp
      "-XX:ErrorFile=" + dir + "/hs_err_pid%p.log",
      "-Djava.net.preferIPv4Stack=true",
      fmt::format("-Djute.maxbuffer={}", jute_max_buffer),
      fmt::format("-Dzookeeper.jute.maxbuffer={}", jute_max_buffer),
      "-Dlog4j.configuration=file:" + dir + "/log4j.properties",
      "-Dzookeeper.jmx.log4j.disable=true",
      "-cp",
      classpath,
      kMainClass,
      dir + "/zoo.cfg",
  };
}

}  // namespace magnetar::metadata
