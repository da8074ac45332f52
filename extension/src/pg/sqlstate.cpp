#include "sqlstate.hpp"

#include "postgres_headers.hpp"

namespace once::pg {

int sqlstate_for(ErrorCode code) {
    switch (code) {
        case ErrorCode::invalid_argument:       return ERRCODE_INVALID_PARAMETER_VALUE;       // 22023
        case ErrorCode::invalid_json:           return ERRCODE_INVALID_TEXT_REPRESENTATION;   // 22P02
        case ErrorCode::invalid_key:            return MAKE_SQLSTATE('O', 'N', '1', '0', '1');
        case ErrorCode::request_mismatch:       return MAKE_SQLSTATE('O', 'N', '1', '0', '2');
        case ErrorCode::key_busy:               return MAKE_SQLSTATE('O', 'N', '1', '0', '3');
        case ErrorCode::key_not_held:           return MAKE_SQLSTATE('O', 'N', '1', '0', '4');
        case ErrorCode::invalid_command_result: return MAKE_SQLSTATE('O', 'N', '1', '0', '5');
        case ErrorCode::key_ambiguous:      return MAKE_SQLSTATE('O', 'N', '1', '0', '6');
        case ErrorCode::invalid_topic:          return MAKE_SQLSTATE('O', 'N', '2', '0', '1');
        case ErrorCode::payload_too_large:      return MAKE_SQLSTATE('O', 'N', '2', '0', '2');
        case ErrorCode::invalid_payload:        return MAKE_SQLSTATE('O', 'N', '2', '0', '3');
        case ErrorCode::invalid_headers:        return MAKE_SQLSTATE('O', 'N', '2', '0', '4');
        case ErrorCode::invalid_message_key:    return MAKE_SQLSTATE('O', 'N', '2', '0', '5');
        case ErrorCode::invalid_batch:          return MAKE_SQLSTATE('O', 'N', '2', '0', '6');
        case ErrorCode::message_not_found:      return MAKE_SQLSTATE('O', 'N', '2', '0', '7');
        case ErrorCode::invalid_relay:          return MAKE_SQLSTATE('O', 'N', '2', '0', '8');
        case ErrorCode::invalid_interval:       return MAKE_SQLSTATE('O', 'N', '2', '0', '9');
        case ErrorCode::invalid_policy:         return MAKE_SQLSTATE('O', 'N', '2', '1', '0');
        case ErrorCode::invalid_message_ids:    return MAKE_SQLSTATE('O', 'N', '2', '1', '1');
        case ErrorCode::message_id_conflict:    return MAKE_SQLSTATE('O', 'N', '2', '1', '2');
        case ErrorCode::claim_unsettled:        return MAKE_SQLSTATE('O', 'N', '2', '1', '3');
        case ErrorCode::reserved_header:        return MAKE_SQLSTATE('O', 'N', '2', '1', '4');
        case ErrorCode::publish_denied:         return MAKE_SQLSTATE('O', 'N', '2', '1', '5');
        case ErrorCode::key_held_by_prepared:   return MAKE_SQLSTATE('O', 'N', '2', '1', '6');
        case ErrorCode::invalid_trace_context:  return MAKE_SQLSTATE('O', 'N', '2', '1', '7');
        case ErrorCode::invalid_topic_pattern:  return MAKE_SQLSTATE('O', 'N', '3', '0', '1');
        case ErrorCode::invalid_inbox_source:   return MAKE_SQLSTATE('O', 'N', '3', '0', '2');
        case ErrorCode::invalid_message_id:     return MAKE_SQLSTATE('O', 'N', '3', '0', '3');
        case ErrorCode::invalid_handler:        return MAKE_SQLSTATE('O', 'N', '3', '0', '4');
        case ErrorCode::handler_unavailable:    return MAKE_SQLSTATE('O', 'N', '3', '0', '5');
        case ErrorCode::untrusted_function:     return MAKE_SQLSTATE('O', 'N', '3', '0', '6');
        case ErrorCode::saga_invalid_definition: return MAKE_SQLSTATE('O', 'N', '4', '0', '1');
        case ErrorCode::saga_not_found:          return MAKE_SQLSTATE('O', 'N', '4', '0', '2');
        case ErrorCode::saga_unknown_step:       return MAKE_SQLSTATE('O', 'N', '4', '0', '3');
        case ErrorCode::saga_input_mismatch:     return MAKE_SQLSTATE('O', 'N', '4', '0', '4');
        case ErrorCode::saga_invalid_state:      return MAKE_SQLSTATE('O', 'N', '4', '0', '5');
        case ErrorCode::saga_invalid_reply:      return MAKE_SQLSTATE('O', 'N', '4', '0', '6');
        case ErrorCode::saga_start_denied:       return MAKE_SQLSTATE('O', 'N', '4', '0', '7');
        case ErrorCode::saga_ambiguous:          return MAKE_SQLSTATE('O', 'N', '4', '0', '8');
        case ErrorCode::sql_version_mismatch:    return MAKE_SQLSTATE('O', 'N', '0', '0', '1');
        case ErrorCode::internal:               return ERRCODE_INTERNAL_ERROR;                // XX000
    }
    return ERRCODE_INTERNAL_ERROR;
}

}  // namespace once::pg
