// Transactions are not supported: every transaction request is answered NotAllowedError
// with its request id, as a Pulsar broker with transactionCoordinatorEnabled=false does, so
// clients fail the call instead of waiting.

#include "broker/wire/connection.h"

namespace magnetar::broker {

bool Connection::handle_transaction(const wire::BaseCommand& cmd) {
  switch (cmd.type()) {
    case wire::BaseCommand::NEW_TXN: {
      auto r = make_command(wire::BaseCommand::NEW_TXN_RESPONSE);
      r.mutable_newtxnresponse()->set_request_id(cmd.newtxn().request_id());
      r.mutable_newtxnresponse()->set_error(wire::NotAllowedError);
      r.mutable_newtxnresponse()->set_message("transactions are not supported");
      write_command(r);
      return true;
    }
    // The other transaction requests: refused the same way.
#define MAGNETAR_REFUSE_TXN(TYPE, REQ, RESP_TYPE, RESP)                \
  case wire::BaseCommand::TYPE: {                                      \
    auto r = make_command(wire::BaseCommand::RESP_TYPE);               \
    r.mutable_##RESP()->set_request_id(cmd.REQ().request_id());        \
    r.mutable_##RESP()->set_error(wire::NotAllowedError);              \
    r.mutable_##RESP()->set_message("transactions are not supported"); \
    write_command(r);                                                  \
    return true;                                                       \
  }
      MAGNETAR_REFUSE_TXN(ADD_PARTITION_TO_TXN, addpartitiontotxn, ADD_PARTITION_TO_TXN_RESPONSE,
                          addpartitiontotxnresponse)
      MAGNETAR_REFUSE_TXN(ADD_SUBSCRIPTION_TO_TXN, addsubscriptiontotxn,
                          ADD_SUBSCRIPTION_TO_TXN_RESPONSE, addsubscriptiontotxnresponse)
      MAGNETAR_REFUSE_TXN(END_TXN, endtxn, END_TXN_RESPONSE, endtxnresponse)
      MAGNETAR_REFUSE_TXN(END_TXN_ON_PARTITION, endtxnonpartition, END_TXN_ON_PARTITION_RESPONSE,
                          endtxnonpartitionresponse)
      MAGNETAR_REFUSE_TXN(END_TXN_ON_SUBSCRIPTION, endtxnonsubscription,
                          END_TXN_ON_SUBSCRIPTION_RESPONSE, endtxnonsubscriptionresponse)
#undef MAGNETAR_REFUSE_TXN
    case wire::BaseCommand::TC_CLIENT_CONNECT_REQUEST: {
      auto r = make_command(wire::BaseCommand::TC_CLIENT_CONNECT_RESPONSE);
      r.mutable_tcclientconnectresponse()->set_request_id(
          cmd.tcclientconnectrequest().request_id());
      r.mutable_tcclientconnectresponse()->set_error(wire::NotAllowedError);
      r.mutable_tcclientconnectresponse()->set_message("transactions are not supported");
      write_command(r);
      return true;
    }
    default:
      return false;
  }
}

}  // namespace magnetar::broker
