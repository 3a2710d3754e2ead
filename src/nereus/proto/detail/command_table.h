#pragma once

// X-macro over every command our .proto describes: X(command_type enumerator, BaseCommand
// accessor, Pulsar's enumerator, also its printed name). Internal to proto/ .cc files (needs
// pulsar_api.pb.h for accessors).

#define NEREUS_PROTO_COMMANDS(X)                                                               \
    X(connect, connect, CONNECT)                                                               \
    X(connected, connected, CONNECTED)                                                         \
    X(subscribe, subscribe, SUBSCRIBE)                                                         \
    X(producer, producer, PRODUCER)                                                            \
    X(send, send, SEND)                                                                        \
    X(send_receipt, send_receipt, SEND_RECEIPT)                                                \
    X(send_error, send_error, SEND_ERROR)                                                      \
    X(message, message, MESSAGE)                                                               \
    X(ack, ack, ACK)                                                                           \
    X(flow, flow, FLOW)                                                                        \
    X(unsubscribe, unsubscribe, UNSUBSCRIBE)                                                   \
    X(success, success, SUCCESS)                                                               \
    X(error, error, ERROR)                                                                     \
    X(close_producer, close_producer, CLOSE_PRODUCER)                                          \
    X(close_consumer, close_consumer, CLOSE_CONSUMER)                                          \
    X(producer_success, producer_success, PRODUCER_SUCCESS)                                    \
    X(ping, ping, PING)                                                                        \
    X(pong, pong, PONG)                                                                        \
    X(redeliver_unacknowledged_messages, redeliverunacknowledgedmessages,                      \
      REDELIVER_UNACKNOWLEDGED_MESSAGES)                                                       \
    X(partitioned_metadata, partitionmetadata, PARTITIONED_METADATA)                           \
    X(partitioned_metadata_response, partitionmetadataresponse, PARTITIONED_METADATA_RESPONSE) \
    X(lookup, lookuptopic, LOOKUP)                                                             \
    X(lookup_response, lookuptopicresponse, LOOKUP_RESPONSE)                                   \
    X(consumer_stats, consumerstats, CONSUMER_STATS)                                           \
    X(consumer_stats_response, consumerstatsresponse, CONSUMER_STATS_RESPONSE)                 \
    X(reached_end_of_topic, reachedendoftopic, REACHED_END_OF_TOPIC)                           \
    X(seek, seek, SEEK)                                                                        \
    X(get_last_message_id, getlastmessageid, GET_LAST_MESSAGE_ID)                              \
    X(get_last_message_id_response, getlastmessageidresponse, GET_LAST_MESSAGE_ID_RESPONSE)    \
    X(active_consumer_change, active_consumer_change, ACTIVE_CONSUMER_CHANGE)                  \
    X(get_topics_of_namespace, gettopicsofnamespace, GET_TOPICS_OF_NAMESPACE)                  \
    X(get_topics_of_namespace_response, gettopicsofnamespaceresponse,                          \
      GET_TOPICS_OF_NAMESPACE_RESPONSE)                                                        \
    X(get_schema, getschema, GET_SCHEMA)                                                       \
    X(get_schema_response, getschemaresponse, GET_SCHEMA_RESPONSE)                             \
    X(auth_challenge, authchallenge, AUTH_CHALLENGE)                                           \
    X(auth_response, authresponse, AUTH_RESPONSE)                                              \
    X(ack_response, ackresponse, ACK_RESPONSE)                                                 \
    X(get_or_create_schema, getorcreateschema, GET_OR_CREATE_SCHEMA)                           \
    X(get_or_create_schema_response, getorcreateschemaresponse, GET_OR_CREATE_SCHEMA_RESPONSE) \
    X(tc_client_connect_request, tcclientconnectrequest, TC_CLIENT_CONNECT_REQUEST)            \
    X(tc_client_connect_response, tcclientconnectresponse, TC_CLIENT_CONNECT_RESPONSE)
