#include "nereus/meta/memory_store.h"

#include <map>
#include <mutex>
#include <set>
#include <utility>

namespace nereus::meta {
namespace detail {

// Committer-thread-confined maps; only the fault injection fields are shared (mu_).
class memory_backend final : public backend {
public:
    result<std::optional<record>> read(const std::string& key) override {
        if (auto it = data_.find(key); it != data_.end()) {
            return it->second;
        }
        return std::optional<record>();
    }

    result<std::vector<keyed_record>> scan(const std::string& prefix) override {
        std::vector<keyed_record> out;
        for (auto it = data_.lower_bound(prefix);
             it != data_.end() && it->first.starts_with(prefix); ++it) {
            out.push_back(keyed_record{.key = it->first, .rec = it->second});
        }
        return out;
    }

    result<std::vector<std::string>> ephemeral_keys(session_id owner) override {
        std::vector<std::string> out;
        for (auto it = index_.lower_bound({owner, std::string()});
             it != index_.end() && it->first == owner; ++it) {
            out.push_back(it->second);
        }
        return out;
    }

    commit_status commit(const commit_batch& batch) override {
        fault f;
        {
            const std::lock_guard lock(mu_);
            if (faults_left_ > 0) {
                --faults_left_;
                f = fault_;
            }
        }
        if (f.ec && !f.applied) {
            return commit_status{.applied = false, .ec = f.ec};
        }
        for (const change& c : batch.changes) {
            if (c.old_owner != no_session && (!c.after || c.after->owner != c.old_owner)) {
                index_.erase({c.old_owner, c.key});
            }
            if (c.after) {
                if (c.after->owner != no_session) {
                    index_.insert({c.after->owner, c.key});
                }
                data_[c.key] = *c.after;
            } else {
                data_.erase(c.key);
            }
        }
        revision_ = batch.revision;
        next_session_ = batch.next_session;
        return commit_status{.applied = true, .ec = f.ec};
    }

    version recovered_revision() const override { return revision_; }
    std::uint64_t recovered_next_session() const override { return next_session_; }
    bool commit_failure_is_fatal() const override { return false; }

    void inject(bool applied, std::size_t count, std::error_code ec) {
        const std::lock_guard lock(mu_);
        fault_ = fault{.applied = applied, .ec = ec};
        faults_left_ = count;
    }

private:
    struct fault {
        bool applied = false;
        std::error_code ec;
    };

    std::map<std::string, record> data_;
    std::set<std::pair<session_id, std::string>> index_;
    version revision_ = 0;
    std::uint64_t next_session_ = 1;

    std::mutex mu_;
    fault fault_;
    std::size_t faults_left_ = 0;
};

}  // namespace detail

memory_store::memory_store(std::unique_ptr<detail::memory_backend> be,
                           detail::memory_backend* raw_backend,
                           memory_store_options options)
    : detail::local_store(std::move(be),
                          detail::local_store_options{.max_group = options.max_group}),
      backend_(raw_backend) {}

std::unique_ptr<memory_store> memory_store::open(memory_store_options options) {
    auto be = std::make_unique<detail::memory_backend>();
    auto* raw_backend = be.get();
    return std::unique_ptr<memory_store>(new memory_store(std::move(be), raw_backend, options));
}

void memory_store::inject_commit_failure(bool applied, std::size_t count, std::error_code ec) {
    backend_->inject(applied, count, ec);
}

}  // namespace nereus::meta
