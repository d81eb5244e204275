#pragma once
// A blocking Pulsar binary-protocol client for protocol-level tests: plain POSIX sockets and
// poll(), no event loop, so a test can speak to a broker frame by frame, inspect every frame
// it gets back, and send malformed input (send_raw).
//
// Receiving. Frames are read from the socket only inside the receive calls. Every waiting
// call (receive(type), response(), the helpers) takes the first *matching* frame and keeps
// every other frame, in arrival order, for later calls: waiting for a SEND_RECEIPT does not
// lose a MESSAGE that arrived first. receive() with no filter returns the oldest kept frame.
// PINGs from the broker are answered with PONG while reading and never kept
// (Options::auto_pong). Frames are decoded with protocol::FrameDecoder: payload frames have
// their checksum verified and their MessageMetadata parsed; a frame that does not decode
// fails the connection (every later receive returns that error).
//
// Errors, as Status:
//   - an ERROR response, SEND_ERROR or a Failed lookup: category "pulsar" whose codes are the
//     wire::ServerError values; the message starts with the ServerError name, then the
//     broker's text. server_error_of() gets the ServerError back; Status::is() works through
//     the mapping onto the generic conditions (TopicNotFound is Errc::kNotFound, ...).
//   - nothing matching within the timeout: Errc::kTimeout.
//   - the connection closed (by the broker or close()) or reset: Errc::kUnavailable.
//   - a frame that does not decode: the protocol::Error from the decoder.
//   - a response of an unexpected type: Errc::kInternal.
//
// Timeouts: every `Timeout` argument left empty means Options::timeout; helpers without one
// use Options::timeout per wait. Sends also give up (kTimeout) after Options::timeout when
// the broker stops reading.
//
// Not thread-safe: one client belongs to one test thread.

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "common/buffer.h"
#include "common/status.h"
#include "proto/pulsar_api.pb.h"
#include "protocol/batch.h"
#include "protocol/frame.h"
#include "protocol/server_errors.h"

namespace magnetar::testing {

// ---------------------------------------------------------------------------------------------
// Broker errors as Status values (protocol/server_errors.h)

using protocol::server_error_category;
using protocol::server_error_of;
using protocol::server_error_status;

// ---------------------------------------------------------------------------------------------

// One MESSAGE frame, its entry split and checked.
struct ReceivedMessage {
  uint64_t consumer_id = 0;
  wire::MessageIdData id;  // as the broker sent it (normally ledger and entry only)
  uint32_t redelivery_count = 0;
  std::vector<int64_t> ack_set;
  wire::MessageMetadata metadata;
  Buffer payload;             // the entry's payload as sent: compressed and/or a whole batch
  bool had_checksum = false;  // the frame carried [0x0e01][crc32c] (verified when present)
  std::optional<wire::BrokerEntryMetadata> broker_entry_metadata;
  Buffer entry;  // [magic][crc][metadataSize][metadata][payload] (a checksum added if absent)

  // The individual messages, decompressed: a batch's N, or the one of a non-batched entry.
  Result<std::vector<protocol::SingleMessage>> unpack() const;
};

class PulsarTestClient {
 public:
  // An empty timeout means Options::timeout.
  using Timeout = std::optional<std::chrono::milliseconds>;

  struct Options {
    std::string host = "127.0.0.1";  // a name or address (getaddrinfo)
    int port = 0;
    int protocol_version = 21;  // CONNECT.protocol_version
    std::string client_version = "magnetar-test";
    std::chrono::milliseconds timeout{5000};      // default for every wait, connect and send
    bool handshake = true;                        // connect() sends CONNECT and waits for CONNECTED
    std::optional<std::string> auth_method;       // CONNECT.auth_method_name, e.g. "token"
    std::string auth_data;                        // CONNECT.auth_data (sent with auth_method only)
    bool supports_broker_entry_metadata = false;  // FeatureFlags of CONNECT
    bool supports_auth_refresh = false;           // FeatureFlags of CONNECT
    bool auto_pong = true;  // answer broker PINGs with PONG (false: PINGs are kept as frames)
    uint32_t max_frame_size = protocol::kDefaultMaxFrameSize;  // larger received frames fail
  };

  // Opens a TCP connection and, unless options.handshake is false, does the CONNECT
  // handshake: answers AUTH_CHALLENGEs with options.auth_method/auth_data and returns once
  // CONNECTED arrived. An ERROR instead of CONNECTED is returned as its Status.
  static Result<std::unique_ptr<PulsarTestClient>> connect(Options options);

  PulsarTestClient(const PulsarTestClient&) = delete;
  PulsarTestClient& operator=(const PulsarTestClient&) = delete;
  ~PulsarTestClient();

  // Sends CONNECT (see connect_command()) and waits for CONNECTED; for clients created with
  // handshake = false.
  Status handshake();
  // The CONNECT that handshake() sends, built from the options.
  wire::BaseCommand connect_command() const;
  // The broker's CONNECTED (an empty message before the handshake).
  const wire::CommandConnected& connected() const { return connected_; }
  const Options& options() const { return options_; }

  // 1, 2, 3, ... unique on this client.
  uint64_t next_request_id() { return next_request_id_++; }
  // PINGs answered automatically so far.
  uint64_t pings_answered() const { return pings_answered_; }
  // Frames received and kept for later receive calls.
  size_t kept_frames() const { return kept_.size(); }
  // The socket, for tests that need something unusual (shutdown(), socket options); -1 once
  // closed.
  int fd() const { return fd_; }
  // Closes the socket now; later calls return kUnavailable.
  void close();

  // ---- Raw I/O --------------------------------------------------------------------------

  // A simple command. Asserts all proto2 required fields are set (protocol::encode_command).
  Status send(const wire::BaseCommand& command);
  // A payload command (SEND) with [0x0e01][crc32c] always written.
  Status send_payload(const wire::BaseCommand& command, const wire::MessageMetadata& metadata,
                      const BufferChain& payload);
  // Arbitrary bytes, for garbage and framing tests.
  Status send_raw(std::string_view bytes);

  // The next frame: the oldest kept one, else the next from the socket.
  Result<protocol::Frame> receive(Timeout timeout = {});
  // The next frame of `type` (frames of other types are kept, in order).
  Result<protocol::Frame> receive(wire::BaseCommand::Type type, Timeout timeout = {});
  // The next frame for which `match` holds (others are kept, in order).
  Result<protocol::Frame> receive_if(const std::function<bool(const protocol::Frame&)>& match,
                                     Timeout timeout = {});
  // The response to `request_id`: SUCCESS, ERROR, PRODUCER_SUCCESS, LOOKUP_RESPONSE,
  // PARTITIONED_METADATA_RESPONSE, GET_LAST_MESSAGE_ID_RESPONSE, ACK_RESPONSE, ... (any
  // broker->client response carrying a request id). An ERROR is returned as a frame here.
  Result<protocol::Frame> response(uint64_t request_id, Timeout timeout = {});
  // send() then response(); an ERROR response becomes its Status.
  Result<protocol::Frame> request(const wire::BaseCommand& command, uint64_t request_id,
                                  Timeout timeout = {});
  // True when the broker closes (or resets) the connection within `timeout`. Frames that
  // arrive meanwhile are kept; bytes after an undecodable frame are discarded.
  bool closed_by_peer(Timeout timeout = {});

  // ---- Helpers: send, wait, turn errors into Status ---------------------------------------

  // LOOKUP; a Failed response becomes its Status. Redirect and Connect are returned as is.
  Result<wire::CommandLookupTopicResponse> lookup(const std::string& topic,
                                                  bool authoritative = false);
  // PARTITIONED_METADATA; a Failed response becomes its Status.
  Result<wire::CommandPartitionedTopicMetadataResponse> partitioned_metadata(
      const std::string& topic);

  // PRODUCER; returns the first PRODUCER_SUCCESS (for WaitForExclusive it may say
  // producer_ready = false: wait for the second with response(request_id)). The producer's
  // name is remembered for post_message().
  Result<wire::CommandProducerSuccess> create_producer(
      const std::string& topic, uint64_t producer_id, std::optional<std::string> name = {},
      wire::ProducerAccessMode mode = wire::Shared);
  // The same with a command built by the caller (request_id assigned here when unset).
  Result<wire::CommandProducerSuccess> create_producer(wire::CommandProducer producer);

  // SEND of one non-batched message without waiting. The metadata is a copy of
  // `metadata_template` (if any) with sequence_id set, and producer_name (the one the broker
  // gave create_producer, else "magnetar-test") and publish_time (now) unless it has them.
  Status post_message(uint64_t producer_id, uint64_t sequence_id, std::string_view payload,
                      const wire::MessageMetadata* metadata_template = nullptr);
  // SEND of an uncompressed batch (protocol::BatchBuilder) of payloads.size() messages with
  // sequence ids sequence_id, sequence_id + 1, ...: num_messages_in_batch and num_messages
  // are the count, highest_sequence_id the last id.
  Status post_batch(uint64_t producer_id, uint64_t sequence_id,
                    const std::vector<std::string>& payloads);
  // Waits for the SEND_RECEIPT (or SEND_ERROR, returned as its Status) of
  // (producer_id, sequence_id); for a batch, sequence_id is its first id.
  Result<wire::CommandSendReceipt> send_receipt(uint64_t producer_id, uint64_t sequence_id,
                                                Timeout timeout = {});
  // post_message() + send_receipt().
  Result<wire::CommandSendReceipt> send_message(
      uint64_t producer_id, uint64_t sequence_id, std::string_view payload,
      const wire::MessageMetadata* metadata_template = nullptr);
  // post_batch() + send_receipt().
  Result<wire::CommandSendReceipt> send_batch(uint64_t producer_id, uint64_t sequence_id,
                                              const std::vector<std::string>& payloads);

  // SUBSCRIBE; waits for SUCCESS (an ERROR becomes its Status). `start`, if given, is
  // copied into start_message_id (readers: durable = false, Exclusive).
  Status subscribe(const std::string& topic, const std::string& subscription,
                   wire::CommandSubscribe::SubType type, uint64_t consumer_id,
                   wire::CommandSubscribe::InitialPosition initial = wire::CommandSubscribe::Latest,
                   bool durable = true, const wire::MessageIdData* start = nullptr);
  // The same with a command built by the caller (request_id assigned here when unset).
  Status subscribe(wire::CommandSubscribe subscribe);
  // FLOW (no response).
  Status flow(uint64_t consumer_id, uint32_t permits);
  // The next MESSAGE, for any consumer (other frames are kept).
  Result<ReceivedMessage> receive_message(Timeout timeout = {});
  // ACK of `ids` (Individual, or Cumulative). With a request_id, waits for the ACK_RESPONSE
  // and returns its error, if any, as a Status; without, returns once sent.
  Status ack(uint64_t consumer_id, const std::vector<wire::MessageIdData>& ids,
             bool cumulative = false, std::optional<uint64_t> request_id = {});
  // REDELIVER_UNACKNOWLEDGED_MESSAGES (no response); empty `ids`: all of the consumer's.
  Status redeliver_unacknowledged(uint64_t consumer_id,
                                  const std::vector<wire::MessageIdData>& ids = {});
  // SEEK to a message id; waits for SUCCESS.
  Status seek(uint64_t consumer_id, const wire::MessageIdData& id);
  // GET_LAST_MESSAGE_ID; waits for its response.
  Result<wire::CommandGetLastMessageIdResponse> get_last_message_id(uint64_t consumer_id);
  // UNSUBSCRIBE, CLOSE_PRODUCER, CLOSE_CONSUMER; each waits for SUCCESS.
  Status unsubscribe(uint64_t consumer_id, bool force = false);
  Status close_producer(uint64_t producer_id);
  Status close_consumer(uint64_t consumer_id);
  // PING; waits for the PONG.
  Status ping();

 private:
  using Clock = std::chrono::steady_clock;

  explicit PulsarTestClient(Options options);

  Status open_socket();
  Clock::time_point deadline(Timeout timeout) const;
  // Writes every byte of `chain` (gathered) or fails.
  Status write_all(const BufferChain& chain);
  // The next frame from the socket (never from kept_), answering PINGs when auto_pong.
  Result<protocol::Frame> read_frame(Clock::time_point deadline);
  // One recv() into the decoder (or discarded): OK with bytes read or the peer closed,
  // kTimeout, or kUnavailable.
  Status read_some(Clock::time_point deadline, bool discard);

  Options options_;
  int fd_ = -1;
  bool peer_closed_ = false;
  protocol::FrameDecoder decoder_;
  std::deque<protocol::Frame> kept_;
  wire::CommandConnected connected_;
  uint64_t next_request_id_ = 1;
  uint64_t pings_answered_ = 0;
  std::map<uint64_t, std::string> producer_names_;  // producer id -> name from the broker
};

}  // namespace magnetar::testing
