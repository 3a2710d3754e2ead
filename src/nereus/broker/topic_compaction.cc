#include "nereus/broker/topic_compaction.h"

#include "nereus/broker/blocking_pool.h"
#include "nereus/broker/compactor.h"
#include "nereus/broker/logger.h"
#include "nereus/broker/partitioned_topics.h"
#include "nereus/proto/server_error.h"

#include <charconv>
#include <chrono>
#include <sstream>

namespace nereus::broker {

namespace {

constexpr std::size_t read_batch = 256;

std::int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

bool parse_u64(std::string_view s, std::uint64_t& out) {
    const auto* end = s.data() + s.size();
    auto [p, ec] = std::from_chars(s.data(), end, out);
    return ec == std::errc() && p == end;
}

}  // namespace

const char* to_string(compaction_state s) noexcept {
    switch (s) {
        case compaction_state::not_run:
            return "NOT_RUN";
        case compaction_state::running:
            return "RUNNING";
        case compaction_state::success:
            return "SUCCESS";
        case compaction_state::error:
            return "ERROR";
    }
    return "ERROR";
}

topic_compaction::topic_compaction(std::string topic,
                                   std::shared_ptr<topic_store> store,
                                   topic_backend& backend,
                                   blocking_pool* pool)
    : topic_(std::move(topic)), store_(std::move(store)), backend_(backend), pool_(pool) {}

std::string topic_compaction::record_key(const std::string& topic) {
    return "compaction/" + escape_key_component(topic);
}

// "v1 ledger=<id> end=<end> object=<name>" (doc/format/compaction.md).
std::optional<topic_compaction::record> topic_compaction::parse_record(const std::string& text) {
    std::istringstream in(text);
    std::string word;
    if (!(in >> word) || word != "v1") {
        return std::nullopt;
    }
    record r;
    r.text = text;
    bool ledger = false;
    bool end = false;
    while (in >> word) {
        const auto eq = word.find('=');
        if (eq == std::string::npos) {
            return std::nullopt;
        }
        const std::string_view k(word.data(), eq);
        const std::string_view v(word.data() + eq + 1, word.size() - eq - 1);
        if (k == "ledger") {
            ledger = parse_u64(v, r.ledger_id);
        } else if (k == "end") {
            end = parse_u64(v, r.end);
        } else if (k == "object") {
            r.object = std::string(v);
        }
        // Other keys (entries=, keys=, bytes=) are informational.
    }
    if (!ledger || !end || r.object.empty()) {
        return std::nullopt;
    }
    return r;
}

void topic_compaction::set_before_publish_hook(std::function<result<void>()> hook) {
    std::lock_guard lock(mu_);
    before_publish_ = std::move(hook);
}

compaction_status topic_compaction::status() const {
    std::lock_guard lock(mu_);
    return status_;
}

bool topic_compaction::trigger() {
    {
        std::lock_guard lock(mu_);
        if (status_.state == compaction_state::running) {
            return false;
        }
        status_.state = compaction_state::running;
        status_.last_error.clear();
    }
    auto self = shared_from_this();
    auto job = [self] {
        (void)self->run_body();
    };
    if (pool_ != nullptr) {
        pool_->post(std::move(job));
    } else {
        job();
    }
    return true;
}

result<void> topic_compaction::run() {
    {
        std::lock_guard lock(mu_);
        if (status_.state == compaction_state::running) {
            return nereus::error(proto::error_kind::consumer_busy);
        }
        status_.state = compaction_state::running;
        status_.last_error.clear();
    }
    return run_body();
}

result<void> topic_compaction::load_locked() {
    {
        std::lock_guard lock(mu_);
        if (loaded_) {
            return {};
        }
    }
    auto text = backend_.get_admin_record(record_key(topic_));
    if (!text) {
        return nereus::error(text.error());
    }
    std::shared_ptr<const compacted_view> v;
    std::optional<record> rec;
    if (*text) {
        rec = parse_record(**text);
        if (!rec) {
            NEREUS_LOG(broker_log(), err, "compaction record unreadable topic={} value={}", topic_,
                       **text);
            return nereus::error(proto::error_kind::metadata_failure);
        }
        if (rec->ledger_id == store_->ledger_id()) {
            auto bytes = backend_.get_object(rec->object);
            if (!bytes) {
                return nereus::error(bytes.error());
            }
            auto decoded = decode_compacted_view(*bytes);
            if (!decoded || decoded->end != rec->end || decoded->ledger_id != rec->ledger_id) {
                NEREUS_LOG(broker_log(), err, "compaction snapshot invalid topic={} object={}",
                           topic_, rec->object);
                return nereus::error(proto::error_kind::metadata_failure);
            }
            v = std::make_shared<const compacted_view>(std::move(*decoded));
        }
        // A record of an older incarnation of the topic (deleted, created again) is kept as
        // the CAS base and otherwise ignored.
    }
    std::lock_guard lock(mu_);
    view_ = std::move(v);
    record_ = std::move(rec);
    loaded_ = true;
    return {};
}

result<std::shared_ptr<const compacted_view>> topic_compaction::view() {
    {
        std::lock_guard lock(mu_);
        if (loaded_) {
            return view_;
        }
    }
    std::lock_guard load(load_mu_);
    NEREUS_TRY(load_locked());
    std::lock_guard lock(mu_);
    return view_;
}

compaction_info topic_compaction::info() {
    compaction_info out;
    auto v = view();
    std::lock_guard lock(mu_);
    out.last_removed = last_removed_;
    out.last_success_ms = last_success_ms_;
    if (v && *v) {
        const auto& view = **v;
        out.has_view = true;
        out.ledger_id = view.ledger_id;
        out.end = view.end;
        out.entries = view.entries.size();
        out.keys = view.keys;
        out.bytes = view.data_bytes();
        out.object = record_ ? record_->object : std::string();
    }
    return out;
}

result<void> topic_compaction::run_body() {
    std::string what;
    auto fail = [&](const std::error_code& ec) -> result<void> {
        NEREUS_LOG(broker_log(), warn, "compaction failed topic={} at={} error={}", topic_, what,
                   ec.message());
        std::lock_guard lock(mu_);
        status_.state = compaction_state::error;
        status_.last_error = what + ": " + ec.message();
        return nereus::error(ec);
    };
    // One run at a time (the running state); load_mu_ only while loading, so a subscription
    // waiting for the first load does not wait for the whole run.
    what = "load";
    {
        std::lock_guard load(load_mu_);
        if (auto r = load_locked(); !r) {
            return fail(r.error());
        }
    }
    std::shared_ptr<const compacted_view> prev;
    std::optional<record> prev_rec;
    {
        std::lock_guard lock(mu_);
        prev = view_;
        prev_rec = record_;
    }
    const std::uint64_t ledger_id = store_->ledger_id();
    // The barrier: every entry below `end` is in the new view, every later one after it.
    const std::uint64_t end = store_->details().end;
    const std::uint64_t prev_end = prev ? prev->end : 0;

    what = "open cursor";
    subscription_start start;
    start.where = subscription_start::kind::earliest;
    auto cur = store_->open_subscription(cursor_name, start, true);
    if (!cur) {
        return fail(cur.error());
    }
    auto& c = **cur;

    compaction_result res;
    if (end > prev_end) {
        what = "read";
        std::vector<compaction_input> in;
        c.rewind();
        bool done = false;
        while (!done) {
            auto r = c.read(read_batch);
            if (!r) {
                return fail(r.error());
            }
            if (r->empty()) {
                break;
            }
            for (auto& e : *r) {
                if (e.pos.entry_id >= end) {
                    done = true;
                    break;
                }
                if (e.pos.entry_id >= prev_end) {
                    // A copy of its own: the view outlives the cursor read's buffer the
                    // entry points into (dispatch_entry::bytes).
                    in.push_back(compaction_input{e.pos.entry_id, e.publish_time, e.batch_size,
                                                  std::make_shared<const std::vector<std::byte>>(
                                                      e.bytes.begin(), e.bytes.end())});
                }
                done = e.pos.entry_id + 1 >= end;
            }
        }
        res = compact(prev ? *prev : compacted_view{}, in, ledger_id, end);
    } else {
        // Nothing new since the last run: the view stays.
        std::lock_guard lock(mu_);
        status_.state = compaction_state::success;
        last_removed_ = 0;
        last_success_ms_ = now_ms();
        return {};
    }

    what = "put snapshot";
    const std::string object = "compaction/" + std::to_string(ledger_id) + "/" +
                               std::to_string(end) + "-" + std::to_string(now_ms());
    const auto bytes = encode_compacted_view(res.view);
    if (auto r = backend_.put_object(object, bytes); !r) {
        return fail(r.error());
    }
    std::function<result<void>()> hook;
    {
        std::lock_guard lock(mu_);
        hook = before_publish_;
    }
    what = "publish";
    if (hook) {
        if (auto r = hook(); !r) {
            return fail(r.error());
        }
    }
    record next;
    next.ledger_id = ledger_id;
    next.end = end;
    next.object = object;
    next.text = "v1 ledger=" + std::to_string(ledger_id) + " end=" + std::to_string(end) +
                " object=" + object + " entries=" + std::to_string(res.view.entries.size()) +
                " keys=" + std::to_string(res.view.keys) + " bytes=" + std::to_string(bytes.size());
    const auto key = record_key(topic_);
    auto cas = prev_rec ? backend_.replace_admin_record(key, prev_rec->text, next.text)
                        : backend_.create_admin_record(key, next.text);
    if (!cas) {
        // Unknown outcome: the next load reads whichever record is there.
        std::lock_guard lock(mu_);
        loaded_ = false;
        return fail(cas.error());
    }
    if (!*cas) {
        (void)backend_.remove_object(object);
        return fail(make_error_code(proto::error_kind::metadata_failure));
    }
    auto view = std::make_shared<const compacted_view>(std::move(res.view));
    {
        std::lock_guard lock(mu_);
        view_ = view;
        record_ = next;
        status_.state = compaction_state::success;
        last_removed_ = res.messages_removed;
        last_success_ms_ = now_ms();
    }
    // Entries below the horizon are in the snapshot: the cursor lets them go.
    c.ack_cumulative(c.current_fence(), end - 1, [topic = topic_](result<ack_outcome> r) {
        if (!r) {
            NEREUS_LOG(broker_log(), warn, "compaction cursor ack failed topic={} error={}", topic,
                       r.error().message());
        }
    });
    if (prev_rec && prev_rec->object != object) {
        (void)backend_.remove_object(prev_rec->object);
    }
    NEREUS_LOG(broker_log(), info,
               "compaction done topic={} horizon={}:{} entries={} keys={} removed={} skipped={}",
               topic_, ledger_id, end - 1, view->entries.size(), view->keys, res.messages_removed,
               res.skipped);
    return {};
}

}  // namespace nereus::broker
