// The saga pages: the list (filters, search, counts per definition), one saga (its state
// diagram and timeline), and the confirmation of a retry or abort.
#pragma once

#include "db.hpp"
#include "diagram.hpp"

#include <optional>
#include <string>
#include <vector>

namespace once::console {

struct SagaCountRow {
    std::string name, status, n;   // per definition and status, n capped
};

struct SagaRow {
    std::string saga_id, name, version, status, step, attempts, created_at, updated_at, last_error;
};

struct SagaListModel {
    std::string name, status;   // filters; an unknown status is dropped
    std::string q;              // a saga id, or key=value of the saga's input
    bool by_id = false;         // q is a saga id
    std::vector<std::string> definitions;
    std::vector<SagaCountRow> counts;   // ordered by definition
    std::vector<SagaRow> rows;          // a page: kPage rows means there may be older ones
};

// `before`: "created_at|saga_id" of the last row of the previous page, or "".
SagaListModel load_saga_list(Tx& tx, const std::string& name, std::string status, const std::string& q,
                             const std::string& before);
std::string render_saga_list(const SagaListModel& m);

struct SagaHistoryRow {
    std::string at, from_status, to_status, step, event, reason, message_id;
};

struct SagaModel {
    std::string name, id;   // as asked for
    std::string definition_name, version, status, step, attempts, created_at, updated_at, input_text, data_text;
    std::optional<std::string> cause, last_error, deadline, finished_at;
    std::vector<SagaHistoryRow> history;
    std::vector<DiagramStep> steps;   // of its definition
    std::string csrf;
};

// None: no such saga.
std::optional<SagaModel> load_saga(Tx& tx, const std::string& name, const std::string& id);
// The diagram's path from the saga's history: every step whose action was sent or answered,
// every compensation that ran, and the node the saga is at now.
DiagramPath saga_path(const std::vector<SagaHistoryRow>& history, const std::string& status, const std::string& step);
std::string render_saga(const SagaModel& m);

struct SagaConfirmModel {
    std::string op;   // retry | abort
    std::string name, id;
    bool admin = false;
    std::string csrf;
};

std::string render_saga_confirm(const SagaConfirmModel& m);

}  // namespace once::console
