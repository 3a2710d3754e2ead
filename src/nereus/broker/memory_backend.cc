#include "nereus/broker/memory_backend.h"

#include "nereus/proto/server_error.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <set>

namespace nereus::broker {

void append_hold::hold(append_callback done, result<position> r) {
    const std::lock_guard lock(mu_);
    held_.emplace_back(std::move(done), std::move(r));
}

std::size_t append_hold::release() {
    std::vector<std::pair<append_callback, result<position>>> run;
    {
        const std::lock_guard lock(mu_);
        run.swap(held_);
    }
    for (auto& [done, r] : run) {
        done(std::move(r));
    }
    return run.size();
}

std::size_t append_hold::held() const {
    const std::lock_guard lock(mu_);
    return held_.size();
}

namespace {

struct stored {
    std::shared_ptr<const std::vector<std::byte>> data;
    append_info info;
};

struct topic_data {
    std::mutex mu;
    std::vector<stored> entries;  // entry id = index
};

class memory_cursor final : public subscription_cursor {
public:
    memory_cursor(std::shared_ptr<topic_data> t,
                  std::uint64_t ledger_id,
                  std::string name,
                  bool durable,
                  std::uint64_t start)
        : t_(std::move(t)),
          ledger_id_(ledger_id),
          name_(std::move(name)),
          durable_(durable),
          mdo_(start),
          read_(start) {}

    const std::string& name() const override { return name_; }
    bool durable() const override { return durable_; }

    result<std::vector<dispatch_entry>> read(std::size_t max_entries) override {
        std::lock_guard lock(t_->mu);
        std::vector<dispatch_entry> out;
        read_ = std::max(read_, mdo_);
        while (out.size() < max_entries && read_ < t_->entries.size()) {
            const auto e = read_++;
            if (acked_.contains(e)) {
                continue;
            }
            const auto& s = t_->entries[e];
            dispatch_entry d;
            d.pos = {ledger_id_, e};
            d.publish_time = s.info.publish_time;
            d.batch_size = s.info.batch_size;
            if (auto it = partial_.find(e); it != partial_.end()) {
                d.remaining = it->second;
            }
            d.share(s.data);
            d.fence = fence_;
            out.push_back(std::move(d));
        }
        return out;
    }

    // In memory, under a mutex never held across I/O: never waits, so it is read().
    result<std::vector<dispatch_entry>> try_read(std::size_t max_entries) override {
        return read(max_entries);
    }

    void rewind() override {
        std::lock_guard lock(t_->mu);
        read_ = mdo_;
    }

    void ack(ack_fence f, std::uint64_t entry, ack_callback done) override {
        ack_outcome o;
        {
            std::lock_guard lock(t_->mu);
            o = ack_locked(f, entry);
        }
        done(o);
    }

    void ack_batch_index(ack_fence f,
                         std::uint64_t entry,
                         std::uint32_t batch_size,
                         std::span<const std::int64_t> remaining,
                         ack_callback done) override {
        ack_outcome o = ack_outcome::no_effect;
        {
            std::lock_guard lock(t_->mu);
            if (f != fence_) {
                o = ack_outcome::stale;
            } else if (entry >= mdo_ && entry < t_->entries.size() && !acked_.contains(entry)) {
                const std::size_t words = (batch_size + 63) / 64;
                auto& cur = partial_[entry];
                if (cur.empty()) {
                    cur.assign(words, 0);
                    for (std::uint32_t i = 0; i < batch_size; ++i) {
                        cur[i / 64] |= std::int64_t(std::uint64_t{1} << (i % 64));
                    }
                }
                bool changed = false;
                bool none_left = true;
                for (std::size_t w = 0; w < cur.size(); ++w) {
                    const std::int64_t keep = w < remaining.size() ? remaining[w] : 0;
                    const std::int64_t next = cur[w] & keep;
                    changed = changed || next != cur[w];
                    cur[w] = next;
                    none_left = none_left && next == 0;
                }
                if (none_left) {
                    partial_.erase(entry);
                    o = ack_locked(f, entry);
                } else {
                    o = changed ? ack_outcome::applied : ack_outcome::no_effect;
                }
            }
        }
        done(o);
    }

    void ack_cumulative(ack_fence f, std::uint64_t entry, ack_callback done) override {
        ack_outcome o = ack_outcome::no_effect;
        {
            std::lock_guard lock(t_->mu);
            if (f != fence_) {
                o = ack_outcome::stale;
            } else if (entry >= mdo_ && entry < t_->entries.size()) {
                mdo_ = entry + 1;
                acked_.erase(acked_.begin(), acked_.lower_bound(mdo_));
                partial_.erase(partial_.begin(), partial_.lower_bound(mdo_));
                compact_locked();
                o = ack_outcome::applied;
            }
        }
        done(o);
    }

    result<ack_fence> seek(const seek_target& target) override {
        std::lock_guard lock(t_->mu);
        const std::uint64_t end = t_->entries.size();
        std::uint64_t to = 0;
        switch (target.where) {
            case seek_target::kind::earliest:
                to = 0;
                break;
            case seek_target::kind::latest:
                to = end;
                break;
            case seek_target::kind::to_entry:
                to = std::min(target.entry_id, end);
                break;
            case seek_target::kind::to_time:
                to = end;
                for (std::uint64_t i = 0; i < end; ++i) {
                    if (t_->entries[i].info.publish_time >= target.publish_time) {
                        to = i;
                        break;
                    }
                }
                break;
            case seek_target::kind::clear_backlog:
                to = end;
                break;
            case seek_target::kind::skip: {
                // The next `count` unacked entries from the mark-delete position.
                to = mdo_;
                for (std::uint64_t n = 0; n < target.count && to < end; ++to) {
                    if (!acked_.contains(to)) {
                        ++n;
                    }
                }
                break;
            }
        }
        mdo_ = to;
        read_ = to;
        if (target.where == seek_target::kind::skip) {
            // Skip acks a prefix: individual acks above it stay.
            acked_.erase(acked_.begin(), acked_.lower_bound(mdo_));
            partial_.erase(partial_.begin(), partial_.lower_bound(mdo_));
            compact_locked();
            read_ = mdo_;
        } else {
            acked_.clear();
            partial_.clear();
        }
        redeliveries_.clear();
        ++fence_.epoch;
        return fence_;
    }

    ack_fence current_fence() const override {
        std::lock_guard lock(t_->mu);
        return fence_;
    }
    std::optional<position> mark_delete_position() const override {
        std::lock_guard lock(t_->mu);
        if (mdo_ == 0) {
            return std::nullopt;
        }
        return position{ledger_id_, mdo_ - 1};
    }
    std::uint64_t backlog() const override {
        std::lock_guard lock(t_->mu);
        const std::uint64_t end = t_->entries.size();
        return end > mdo_ ? end - mdo_ - acked_.size() : 0;
    }
    void set_connected(bool) override {}
    cursor_details details() const override {
        std::lock_guard lock(t_->mu);
        cursor_details d;
        d.mark_delete = mdo_;
        d.read_position = std::max(read_, mdo_);
        for (auto e : acked_) {
            if (!d.acked_ranges.empty() && d.acked_ranges.back().second == e) {
                d.acked_ranges.back().second = e + 1;
            } else {
                d.acked_ranges.emplace_back(e, e + 1);
            }
        }
        d.partly_acked_batches = partial_.size();
        d.fence = fence_;
        d.state = "ACTIVE";
        d.properties = properties_;
        return d;
    }
    result<void> set_properties(std::map<std::string, std::string> p) override {
        std::lock_guard lock(t_->mu);
        properties_ = std::move(p);
        return {};
    }
    void record_redelivery(std::uint64_t entry_id) override {
        std::lock_guard lock(t_->mu);
        redeliveries_.erase(redeliveries_.begin(), redeliveries_.lower_bound(mdo_));
        if (entry_id >= mdo_ && !acked_.contains(entry_id)) {
            ++redeliveries_[entry_id];
        }
    }
    std::uint32_t redelivery_count(std::uint64_t entry_id) const override {
        std::lock_guard lock(t_->mu);
        if (entry_id < mdo_ || acked_.contains(entry_id)) {
            return 0;
        }
        const auto it = redeliveries_.find(entry_id);
        return it == redeliveries_.end() ? 0 : it->second;
    }
    std::uint64_t next_read_position() override {
        std::lock_guard lock(t_->mu);
        read_ = std::max(read_, mdo_);
        return read_;
    }
    bool is_acked(std::uint64_t entry_id) const override {
        std::lock_guard lock(t_->mu);
        return entry_id < mdo_ || acked_.contains(entry_id);
    }
    void skip_read_to(std::uint64_t entry_id) override {
        std::lock_guard lock(t_->mu);
        read_ = std::max(read_, entry_id);
    }

private:
    // Requires: t_->mu held.
    ack_outcome ack_locked(ack_fence f, std::uint64_t entry) {
        if (f != fence_) {
            return ack_outcome::stale;
        }
        if (entry < mdo_ || entry >= t_->entries.size() || acked_.contains(entry)) {
            return ack_outcome::no_effect;
        }
        acked_.insert(entry);
        partial_.erase(entry);
        compact_locked();
        return ack_outcome::applied;
    }
    void compact_locked() {
        while (!acked_.empty() && *acked_.begin() == mdo_) {
            acked_.erase(acked_.begin());
            ++mdo_;
        }
    }

    std::shared_ptr<topic_data> t_;
    const std::uint64_t ledger_id_;
    const std::string name_;
    const bool durable_;
    std::uint64_t mdo_;   // first not-yet-acked entry
    std::uint64_t read_;  // next entry to read (in memory)
    std::set<std::uint64_t> acked_;
    std::map<std::uint64_t, std::vector<std::int64_t>> partial_;
    std::map<std::uint64_t, std::uint32_t> redeliveries_;  // cleared by seek
    std::map<std::string, std::string> properties_;
    ack_fence fence_{1, 1};
};

class memory_topic final : public topic_store {
public:
    memory_topic(std::string name,
                 std::uint64_t ledger_id,
                 std::error_code fail_appends,
                 std::shared_ptr<append_hold> hold)
        : name_(std::move(name)),
          ledger_id_(ledger_id),
          fail_appends_(fail_appends),
          hold_(std::move(hold)),
          data_(std::make_shared<topic_data>()) {}

    const std::string& name() const override { return name_; }
    std::uint64_t ledger_id() const override { return ledger_id_; }

    void append(std::span<const std::byte> entry,
                const append_info& info,
                append_callback done) override {
        if (fail_appends_) {
            done(nereus::error(fail_appends_));
            return;
        }
        if (deleted_.load()) {
            done(nereus::error(proto::error_kind::topic_not_found));
            return;
        }
        position p;
        {
            std::lock_guard lock(data_->mu);
            p = {ledger_id_, data_->entries.size()};
            data_->entries.push_back(
                {std::make_shared<const std::vector<std::byte>>(entry.begin(), entry.end()), info});
        }
        if (hold_) {
            hold_->hold(std::move(done), p);
            return;
        }
        done(p);
    }

    result<std::shared_ptr<subscription_cursor>> open_subscription(const std::string& name,
                                                                   const subscription_start& start,
                                                                   bool durable) override {
        std::lock_guard lock(mu_);
        if (durable) {
            if (auto it = subs_.find(name); it != subs_.end()) {
                return it->second;
            }
        }
        std::uint64_t at = 0;
        {
            std::lock_guard dl(data_->mu);
            const std::uint64_t end = data_->entries.size();
            switch (start.where) {
                case subscription_start::kind::latest:
                    at = end;
                    break;
                case subscription_start::kind::earliest:
                    at = 0;
                    break;
                case subscription_start::kind::at_entry:
                    at = std::min(start.entry_id, end);
                    break;
            }
        }
        auto c = std::make_shared<memory_cursor>(data_, ledger_id_, name, durable, at);
        if (!durable && start.where == subscription_start::kind::at_entry &&
            start.batch_index > 0 && at == start.entry_id) {
            // A reader starting inside a batch: the indexes below it count as acked.
            std::uint32_t size = 0;
            {
                std::lock_guard dl(data_->mu);
                size = at < data_->entries.size() ? data_->entries[at].info.batch_size : 0;
            }
            const auto index = static_cast<std::uint32_t>(start.batch_index);
            if (index < size) {
                std::vector<std::int64_t> remaining((size + 63) / 64, 0);
                for (std::uint32_t i = index; i < size; ++i) {
                    remaining[i / 64] |= std::int64_t(std::uint64_t{1} << (i % 64));
                }
                c->ack_batch_index(c->current_fence(), at, size, remaining, [](auto) {});
            }
        }
        if (durable) {
            subs_.emplace(name, c);
        }
        return c;
    }

    result<void> delete_subscription(const std::string& name) override {
        std::lock_guard lock(mu_);
        if (subs_.erase(name) == 0) {
            return nereus::error(proto::error_kind::subscription_not_found);
        }
        return {};
    }

    std::vector<std::string> subscription_names() const override {
        std::lock_guard lock(mu_);
        std::vector<std::string> out;
        for (const auto& [n, c] : subs_) {
            out.push_back(n);
        }
        return out;
    }

    std::optional<last_entry_info> last_entry() const override {
        std::lock_guard lock(data_->mu);
        if (data_->entries.empty()) {
            return std::nullopt;
        }
        return last_entry_info{{ledger_id_, data_->entries.size() - 1},
                               data_->entries.back().info.batch_size};
    }

    topic_details details() const override {
        std::lock_guard lock(data_->mu);
        return topic_details{ledger_id_, 0, data_->entries.size()};
    }
    // Admin delete: later appends through a store still held elsewhere fail.
    void mark_deleted() { deleted_ = true; }

    result<void> close() override { return {}; }

private:
    const std::string name_;
    const std::uint64_t ledger_id_;
    const std::error_code fail_appends_;
    const std::shared_ptr<append_hold> hold_;
    std::shared_ptr<topic_data> data_;
    std::atomic<bool> deleted_{false};
    mutable std::mutex mu_;
    std::map<std::string, std::shared_ptr<memory_cursor>> subs_;
};

class memory_backend final : public topic_backend {
public:
    explicit memory_backend(memory_backend_options o) : options_(o) {}

    result<std::shared_ptr<topic_store>> open_topic(const std::string& name, bool create) override {
        std::lock_guard lock(mu_);
        if (auto it = topics_.find(name); it != topics_.end()) {
            return it->second;
        }
        if (!create || !options_.auto_create) {
            return nereus::error(proto::error_kind::topic_not_found);
        }
        auto t = std::make_shared<memory_topic>(name, next_ledger_id_++, options_.fail_appends,
                                                options_.hold_appends);
        topics_.emplace(name, t);
        return t;
    }

    std::vector<std::string> topic_names() const override {
        std::lock_guard lock(mu_);
        std::vector<std::string> out;
        for (const auto& [n, t] : topics_) {
            out.push_back(n);
        }
        return out;
    }

    result<void> delete_topic(const std::string& name) override {
        std::lock_guard lock(mu_);
        auto it = topics_.find(name);
        if (it == topics_.end()) {
            return nereus::error(proto::error_kind::topic_not_found);
        }
        it->second->mark_deleted();
        topics_.erase(it);
        return {};
    }

    result<std::optional<std::string>> get_admin_record(const std::string& key) const override {
        std::lock_guard lock(mu_);
        if (auto it = records_.find(key); it != records_.end()) {
            return it->second;
        }
        return std::optional<std::string>();
    }
    result<bool> create_admin_record(const std::string& key, const std::string& value) override {
        std::lock_guard lock(mu_);
        return records_.emplace(key, value).second;
    }
    result<bool> replace_admin_record(const std::string& key,
                                      const std::string& expected,
                                      const std::string& value) override {
        std::lock_guard lock(mu_);
        auto it = records_.find(key);
        if (it == records_.end() || it->second != expected) {
            return false;
        }
        it->second = value;
        return true;
    }
    result<bool> remove_admin_record(const std::string& key) override {
        std::lock_guard lock(mu_);
        return records_.erase(key) > 0;
    }
    result<std::vector<std::pair<std::string, std::string>>> list_admin_records(
        const std::string& prefix) const override {
        std::lock_guard lock(mu_);
        std::vector<std::pair<std::string, std::string>> out;
        for (auto it = records_.lower_bound(prefix);
             it != records_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
            out.emplace_back(it->first, it->second);
        }
        return out;
    }

    result<void> put_object(const std::string& name, std::span<const std::byte> bytes) override {
        std::lock_guard lock(mu_);
        auto [it, created] = objects_.try_emplace(name, bytes.begin(), bytes.end());
        if (!created &&
            !std::equal(it->second.begin(), it->second.end(), bytes.begin(), bytes.end())) {
            return nereus::error(proto::error_kind::metadata_failure);
        }
        return {};
    }
    result<std::vector<std::byte>> get_object(const std::string& name) override {
        std::lock_guard lock(mu_);
        if (auto it = objects_.find(name); it != objects_.end()) {
            return it->second;
        }
        return nereus::error(proto::error_kind::metadata_failure);
    }
    result<void> remove_object(const std::string& name) override {
        std::lock_guard lock(mu_);
        objects_.erase(name);
        return {};
    }

private:
    const memory_backend_options options_;
    mutable std::mutex mu_;
    std::map<std::string, std::vector<std::byte>> objects_;
    std::map<std::string, std::shared_ptr<memory_topic>> topics_;
    std::map<std::string, std::string> records_;  // admin records
    std::uint64_t next_ledger_id_ = 1;
};

}  // namespace

std::unique_ptr<topic_backend> make_memory_backend(memory_backend_options options) {
    return std::make_unique<memory_backend>(options);
}

}  // namespace nereus::broker
