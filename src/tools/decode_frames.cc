#include <google/protobuf/text_format.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "protocol/batch.h"
#include "protocol/frame.h"
#include "tools/commands.h"

namespace magnetar::tools {

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

}  // namespace magnetar::tools
