// `magnetar`: the single server binary. Roles (standalone, broker, bookie, proxy) are added
// as subcommands as they are built; today it carries the protocol tooling.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "common/crc32c.h"
#include "tools/commands.h"

namespace {

constexpr const char* kVersion = "0.1.0";

void add_server_options(CLI::App* cmd, magnetar::tools::ServerArgs& args) {
  cmd->add_option("-c,--conf", args.conf, "Configuration file (key=value lines)");
  cmd->add_option("--set", args.sets, "Override one key: --set key=value (repeatable)");
  cmd->add_flag("--print-conf-template", args.print_template,
                "Print every configuration key with its default and exit");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Magnetar: a Pulsar-compatible messaging and streaming server", "magnetar"};
  app.require_subcommand(1);
  app.set_version_flag("--version", kVersion);

  auto* version = app.add_subcommand("version", "Print the version and build facts");

  std::string capture;
  bool unpack = false;
  auto* decode = app.add_subcommand(
      "decode-frames", "Print every Pulsar protocol frame in a captured byte stream (one direction)");
  decode->add_option("file", capture, "File holding the raw TCP payload bytes")->required();
  decode->add_flag("--unpack", unpack, "Also decompress and split batched payloads");

  magnetar::tools::ServerArgs bookie_args;
  auto* bookie = app.add_subcommand("bookie", "Run a bookie (BookKeeper-style storage server)");
  add_server_options(bookie, bookie_args);

  CLI11_PARSE(app, argc, argv);

  if (version->parsed()) {
    std::printf("magnetar %s\nprotocol: Pulsar binary protocol up to v21\ncrc32c: %s\n", kVersion,
                magnetar::crc32c::hardware_accelerated() ? "SSE4.2" : "portable");
    return 0;
  }
  if (decode->parsed()) return magnetar::tools::decode_frames(capture, unpack);
  if (bookie->parsed()) return magnetar::tools::run_bookie(bookie_args);
  return 0;
}
