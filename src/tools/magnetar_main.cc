// `magnetar`: the single server binary. Roles (standalone, broker, bookie, proxy) are added
// as subcommands as they are built; today it carries the protocol tooling.

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>

#include <google/protobuf/text_format.h>

#include "common/crc32c.h"
#include "protocol/batch.h"
#include "protocol/frame.h"

namespace {

constexpr const char* kVersion = "0.1.0";

// Prints every frame of a captured client<->broker byte stream (one direction), as text.
int decode_frames(const std::string& path, bool unpack) {
  using namespace magnetar;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "error: cannot read '%s'\n", path.c_str());
    return 1;
  }
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  protocol::FrameDecoder decoder;
  decoder.feed(Buffer::copy_of(bytes));
  int n = 0;
  google::protobuf::TextFormat::Printer printer;
  printer.SetSingleLineMode(true);
  while (true) {
    auto f = decoder.next();
    if (!f.ok()) {
      std::fprintf(stderr, "error: frame %d: %s\n", n, f.status().to_string().c_str());
      return 1;
    }
    if (!f->has_value()) break;
    const protocol::Frame& frame = **f;
    std::string text;
    printer.PrintToString(frame.command, &text);
    std::printf("frame %d: %s\n", n, text.c_str());
    if (frame.has_payload) {
      printer.PrintToString(frame.metadata, &text);
      std::printf("  metadata: %s\n  payload: %zu bytes%s\n", text.c_str(), frame.payload.size(),
                  frame.had_checksum ? " (checksum ok)" : " (no checksum)");
      if (unpack) {
        auto msgs = protocol::unpack_messages(frame.metadata, frame.payload,
                                              protocol::kDefaultMaxFrameSize);
        if (!msgs.ok()) {
          std::printf("  unpack failed: %s\n", msgs.status().to_string().c_str());
        } else {
          for (size_t i = 0; i < msgs->size(); ++i) {
            printer.PrintToString((*msgs)[i].metadata, &text);
            std::printf("  [%zu] %s (%zu bytes)\n", i, text.c_str(), (*msgs)[i].payload.size());
          }
        }
      }
    }
    ++n;
  }
  if (decoder.buffered_bytes() > 0) {
    std::fprintf(stderr, "warning: %zu trailing bytes do not form a whole frame\n",
                 decoder.buffered_bytes());
  }
  return 0;
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

  CLI11_PARSE(app, argc, argv);

  if (version->parsed()) {
    std::printf("magnetar %s\nprotocol: Pulsar binary protocol up to v21\ncrc32c: %s\n", kVersion,
                magnetar::crc32c::hardware_accelerated() ? "SSE4.2" : "portable");
    return 0;
  }
  if (decode->parsed()) return decode_frames(capture, unpack);
  return 0;
}
