// CONNECT: the protocol version both sides speak and the broker's limits.

#include <fmt/format.h>

#include <algorithm>

#include "broker/wire/connection.h"
#include "common/version.h"

namespace magnetar::broker {

namespace {
constexpr int kMaxProtocolVersion = 21;
}  // namespace

void Connection::handle_connect(const wire::CommandConnect& connect) {
  protocol_version_ = std::min(kMaxProtocolVersion, connect.protocol_version());
  broker_entry_metadata_ =
      connect.has_feature_flags() && connect.feature_flags().supports_broker_entry_metadata();
  connected_ = true;
  auto cmd = make_command(wire::BaseCommand::CONNECTED);
  auto* c = cmd.mutable_connected();
  c->set_server_version(fmt::format("Pulsar Server (Magnetar {})", kVersion));
  c->set_protocol_version(protocol_version_);
  c->set_max_message_size(config_.max_message_size);
  write_command(cmd);
  log_ = log_.with("client", connect.client_version());
  log_.debug("connected, protocol version {}", protocol_version_);
}

}  // namespace magnetar::broker
