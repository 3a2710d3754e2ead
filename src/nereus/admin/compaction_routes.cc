// Topic compaction (doc/compaction.md): PUT .../compaction starts one (202; 409 while one
// runs), GET .../compaction reports it as Pulsar's LongRunningProcessStatus
// {"status":"NOT_RUN|RUNNING|SUCCESS|ERROR","lastError":""}. On a partitioned topic both apply
// to every partition (GET: ERROR if any failed, else RUNNING if any runs, else SUCCESS if all
// succeeded, else NOT_RUN; lastError is the first partition's error).

#include "nereus/admin/errors.h"
#include "nereus/admin/routes.h"
#include "nereus/broker/topic_compaction.h"

#include <boost/json/object.hpp>

namespace nereus::admin {

namespace json = boost::json;

namespace {

constexpr std::string_view path = "/admin/v2/persistent/{tenant}/{namespace}/{topic}/compaction";

}  // namespace

void add_compaction_routes(router& r, admin_context& ctx) {
    r.add("PUT", path, [&ctx](const http_request&, const path_params& p) {
        auto name = topic_from(ctx, p);
        if (!name) {
            return name.error();
        }
        auto targets = open_targets(ctx, *name);
        if (!targets) {
            return targets.error();
        }
        std::size_t started = 0;
        for (auto& t : *targets) {
            if (t->compaction() && t->compaction()->trigger()) {
                ++started;
            }
        }
        if (started == 0) {
            return error_response(409, "Compaction already in progress");
        }
        return http_response{202, "application/json", ""};
    });
    r.add("GET", path, [&ctx](const http_request&, const path_params& p) {
        auto name = topic_from(ctx, p);
        if (!name) {
            return name.error();
        }
        auto targets = open_targets(ctx, *name);
        if (!targets) {
            return targets.error();
        }
        bool any_error = false, any_running = false, all_success = !targets->empty();
        std::string last_error;
        for (auto& t : *targets) {
            const auto st =
                t->compaction() ? t->compaction()->status() : broker::compaction_status{};
            any_error = any_error || st.state == broker::compaction_state::error;
            any_running = any_running || st.state == broker::compaction_state::running;
            all_success = all_success && st.state == broker::compaction_state::success;
            if (last_error.empty()) {
                last_error = st.last_error;
            }
        }
        const auto state = any_error     ? broker::compaction_state::error
                           : any_running ? broker::compaction_state::running
                           : all_success ? broker::compaction_state::success
                                         : broker::compaction_state::not_run;
        json::object o;
        o["status"] = broker::to_string(state);
        o["lastError"] = last_error;
        return json_response(200, o);
    });
}

}  // namespace nereus::admin
