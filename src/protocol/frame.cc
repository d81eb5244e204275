#include "protocol/frame.h"

#include <fmt/format.h>

#include "common/crc32c.h"
#include "common/endian.h"
#include "protocol/errors.h"

namespace magnetar::protocol {
namespace {

Status malformed(std::string what) { return Status(Error::kMalformedFrame, std::move(what)); }

bool is_payload_type(wire::BaseCommand::Type t) {
  return t == wire::BaseCommand::SEND || t == wire::BaseCommand::MESSAGE;
}

// Bounds-checked cursor over one frame's bytes.
class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), end_(p + n) {}
  size_t remaining() const { return static_cast<size_t>(end_ - p_); }
  const uint8_t* pos() const { return p_; }
  bool u16(uint16_t* v) {
    if (remaining() < 2) return false;
    *v = load_be16(p_);
    p_ += 2;
    return true;
  }
  bool u32(uint32_t* v) {
    if (remaining() < 4) return false;
    *v = load_be32(p_);
    p_ += 4;
    return true;
  }
  bool peek_u16(uint16_t* v) const {
    if (remaining() < 2) return false;
    *v = load_be16(p_);
    return true;
  }
  bool skip(size_t n) {
    if (remaining() < n) return false;
    p_ += n;
    return true;
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

// Parses the payload section (everything after the BaseCommand) of a SEND or MESSAGE.
Status decode_payload_section(const Buffer& frame, Reader& r, const DecoderOptions& options,
                              Frame& out) {
  out.has_payload = true;
  auto offset_of = [&](const uint8_t* p) { return static_cast<size_t>(p - frame.data()); };

  uint16_t magic = 0;
  if (r.peek_u16(&magic) && magic == kMagicBrokerEntryMetadata) {
    uint32_t bem_size = 0;
    r.skip(2);
    if (!r.u32(&bem_size) || bem_size > r.remaining()) {
      return malformed("broker entry metadata size exceeds the frame");
    }
    wire::BrokerEntryMetadata bem;
    if (!bem.ParseFromArray(r.pos(), static_cast<int>(bem_size))) {
      return Status(Error::kBadMetadata, "broker entry metadata does not parse");
    }
    out.broker_entry_metadata = std::move(bem);
    r.skip(bem_size);
  }

  // What follows is an entry: [magic + crc][metadataSize][metadata][payload].
  Buffer entry = frame.slice(offset_of(r.pos()), r.remaining());
  MAGNETAR_ASSIGN_OR_RETURN(EntryView view, parse_entry(entry));
  out.had_checksum = view.had_checksum;
  out.metadata_bytes = std::move(view.metadata_bytes);
  out.payload = std::move(view.payload);
  if (options.parse_metadata &&
      !out.metadata.ParseFromArray(out.metadata_bytes.data(),
                                   static_cast<int>(out.metadata_bytes.size()))) {
    return Status(Error::kBadMetadata, "message metadata does not parse or lacks required fields");
  }
  if (out.had_checksum) {
    out.entry = std::move(entry);
  } else {
    // Old clients (protocol < v6) send no checksum; stored entries always carry one.
    Buffer head = Buffer::allocate(6);
    store_be16(head.mutable_data(), kMagicCrc32c);
    store_be32(head.mutable_data() + 2, crc32c::value(entry.data(), entry.size()));
    BufferChain with_checksum(std::move(head));
    with_checksum.append(entry);
    out.entry = with_checksum.flatten();
  }
  return Status::OK();
}

}  // namespace

Result<Frame> decode_frame(const Buffer& frame, const DecoderOptions& options) {
  Frame out;
  MAGNETAR_TRY(decode_frame_into(frame, options, out));
  return out;
}

Status decode_frame_into(const Buffer& frame, const DecoderOptions& options, Frame& out) {
  Reader r(frame.data(), frame.size());
  uint32_t total_size = 0;
  if (!r.u32(&total_size)) return malformed("frame shorter than its length field");
  if (uint64_t{total_size} + 4 > options.max_frame_size) {
    return Status(Error::kFrameTooLarge, fmt::format("frame of {} bytes exceeds the maximum of {}",
                                                     uint64_t{total_size} + 4,
                                                     options.max_frame_size));
  }
  if (total_size != r.remaining()) {
    return malformed(fmt::format("frame length field says {} bytes, {} present", total_size,
                                 r.remaining()));
  }
  uint32_t command_size = 0;
  if (!r.u32(&command_size)) return malformed("frame ends before the command size");
  if (command_size > r.remaining()) {
    return malformed(fmt::format("command size {} exceeds the {} bytes left in the frame",
                                 command_size, r.remaining()));
  }
  // Everything but the command (which parsing clears first) back to a fresh frame's state.
  out.has_payload = false;
  out.had_checksum = false;
  out.broker_entry_metadata.reset();
  out.metadata.Clear();
  out.metadata_bytes = Buffer();
  out.payload = Buffer();
  out.entry = Buffer();
  if (!out.command.ParseFromArray(r.pos(), static_cast<int>(command_size))) {
    // A type this build does not know leaves the required `type` unset and fails here too;
    // tell the two apart for the error message.
    wire::BaseCommand partial;
    if (partial.ParsePartialFromArray(r.pos(), static_cast<int>(command_size)) &&
        !partial.has_type()) {
      return Status(Error::kUnknownCommand, "command of an unknown type");
    }
    return Status(Error::kBadCommand, "command does not parse or lacks required fields");
  }
  r.skip(command_size);
  if (is_payload_type(out.command.type())) {
    MAGNETAR_TRY(decode_payload_section(frame, r, options, out));
  }
  // Other commands carry nothing after the command; trailing bytes are ignored so that
  // a newer peer's additions do not break us.
  return Status::OK();
}

Result<std::optional<Frame>> FrameDecoder::next() {
  MAGNETAR_ASSIGN_OR_RETURN(Buffer whole, take_frame());
  if (whole.empty()) return std::optional<Frame>();
  Result<Frame> f = decode_frame(whole, options_);
  if (!f.ok()) {
    error_ = f.status();
    return error_;
  }
  return std::optional<Frame>(std::move(f).value());
}

Result<Frame*> FrameDecoder::next_frame() {
  MAGNETAR_ASSIGN_OR_RETURN(Buffer whole, take_frame());
  if (whole.empty()) return static_cast<Frame*>(nullptr);
  if (Status st = decode_frame_into(whole, options_, frame_); !st.ok()) {
    error_ = std::move(st);
    return error_;
  }
  return &frame_;
}

Result<Buffer> FrameDecoder::take_frame() {
  if (!error_.ok()) return error_;
  if (pending_.size() < 4) return Buffer();
  uint8_t len[4];
  pending_.copy_to(0, 4, len);
  uint64_t frame_size = uint64_t{load_be32(len)} + 4;
  if (frame_size > options_.max_frame_size) {
    error_ = Status(Error::kFrameTooLarge, fmt::format("frame of {} bytes exceeds the maximum of {}",
                                                       frame_size, options_.max_frame_size));
    return error_;
  }
  if (frame_size < 8) {
    error_ = malformed(fmt::format("frame length {} is too small", frame_size - 4));
    return error_;
  }
  if (pending_.size() < frame_size) return Buffer();
  return pending_.take_front(frame_size);  // never empty: at least 8 bytes
}

namespace {

// The sub-command of a BaseCommand is the field whose number equals the type.
bool has_sub_command(const wire::BaseCommand& command) {
  const auto* field = wire::BaseCommand::descriptor()->FindFieldByNumber(command.type());
  return field != nullptr && wire::BaseCommand::GetReflection()->HasField(command, field);
}

// [totalSize][commandSize][command] with `extra` bytes of room after it; returns the
// buffer and where the extra room starts.
Buffer command_header(const wire::BaseCommand& command, size_t total_after_command,
                      size_t extra_room, uint8_t** tail) {
  MAGNETAR_ASSERT(command.IsInitialized(), "encoding a command with required fields unset: " +
                                               command.InitializationErrorString());
  MAGNETAR_ASSERT(has_sub_command(command),
                  "encoding a " + wire::BaseCommand::Type_Name(command.type()) +
                      " command whose sub-command is missing (required fields unset)");
  size_t command_size = command.ByteSizeLong();
  Buffer b = Buffer::allocate(8 + command_size + extra_room);
  uint8_t* p = b.mutable_data();
  store_be32(p, static_cast<uint32_t>(4 + command_size + total_after_command));
  store_be32(p + 4, static_cast<uint32_t>(command_size));
  command.SerializeWithCachedSizesToArray(p + 8);
  *tail = p + 8 + command_size;
  return b;
}

}  // namespace

Buffer encode_command(const wire::BaseCommand& command) {
  uint8_t* tail = nullptr;
  return command_header(command, 0, 0, &tail);
}

BufferChain encode_entry(const wire::MessageMetadata& metadata, const BufferChain& payload) {
  MAGNETAR_ASSERT(metadata.IsInitialized(), "message metadata with required fields unset");
  size_t metadata_size = metadata.ByteSizeLong();
  Buffer head = Buffer::allocate(6 + 4 + metadata_size);
  uint8_t* p = head.mutable_data();
  store_be32(p + 6, static_cast<uint32_t>(metadata_size));
  metadata.SerializeWithCachedSizesToArray(p + 10);
  uint32_t crc = crc32c::extend(crc32c::value(p + 6, 4 + metadata_size), payload);
  store_be16(p, kMagicCrc32c);
  store_be32(p + 2, crc);
  BufferChain out(std::move(head));
  out.append(payload);
  return out;
}

BufferChain encode_payload_command(const wire::BaseCommand& command,
                                   const wire::MessageMetadata& metadata,
                                   const BufferChain& payload) {
  MAGNETAR_ASSERT(metadata.IsInitialized(), "message metadata with required fields unset");
  size_t metadata_size = metadata.ByteSizeLong();
  size_t after_command = 6 + 4 + metadata_size + payload.size();
  uint8_t* tail = nullptr;
  Buffer head = command_header(command, after_command, 6 + 4 + metadata_size, &tail);
  store_be32(tail + 6, static_cast<uint32_t>(metadata_size));
  metadata.SerializeWithCachedSizesToArray(tail + 10);
  uint32_t crc = crc32c::extend(crc32c::value(tail + 6, 4 + metadata_size), payload);
  store_be16(tail, kMagicCrc32c);
  store_be32(tail + 2, crc);
  BufferChain out(std::move(head));
  out.append(payload);
  return out;
}

BufferChain encode_with_entry(const wire::BaseCommand& command, const Buffer& entry,
                              const wire::BrokerEntryMetadata* broker_entry_metadata) {
  size_t bem_size = broker_entry_metadata ? broker_entry_metadata->ByteSizeLong() : 0;
  size_t bem_room = broker_entry_metadata ? 6 + bem_size : 0;
  uint8_t* tail = nullptr;
  Buffer head = command_header(command, bem_room + entry.size(), bem_room, &tail);
  if (broker_entry_metadata != nullptr) {
    store_be16(tail, kMagicBrokerEntryMetadata);
    store_be32(tail + 2, static_cast<uint32_t>(bem_size));
    broker_entry_metadata->SerializeWithCachedSizesToArray(tail + 6);
  }
  BufferChain out(std::move(head));
  out.append(entry);
  return out;
}

Result<EntryView> parse_entry(const Buffer& entry) {
  Reader r(entry.data(), entry.size());
  EntryView view;
  uint16_t magic = 0;
  uint32_t expected_crc = 0;
  if (r.peek_u16(&magic) && magic == kMagicCrc32c) {
    r.skip(2);
    if (!r.u32(&expected_crc)) return malformed("entry ends inside the checksum");
    view.had_checksum = true;
  }
  const uint8_t* checksummed = r.pos();
  uint32_t metadata_size = 0;
  if (!r.u32(&metadata_size) || metadata_size > r.remaining()) {
    return malformed("entry metadata size exceeds the entry");
  }
  if (view.had_checksum) {
    uint32_t actual = crc32c::value(checksummed, r.remaining() + 4);
    if (actual != expected_crc) {
      return Status(Error::kChecksumMismatch,
                    fmt::format("entry checksum mismatch: stored {:#010x}, computed {:#010x}",
                                expected_crc, actual));
    }
  }
  size_t metadata_offset = static_cast<size_t>(r.pos() - entry.data());
  view.metadata_bytes = entry.slice(metadata_offset, metadata_size);
  view.payload = entry.slice(metadata_offset + metadata_size);
  return view;
}

}  // namespace magnetar::protocol
