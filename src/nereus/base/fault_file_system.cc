#include "nereus/base/fault_file_system.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <thread>

namespace nereus {
namespace {

// [lo, hi) byte ranges changed since the last sync, merged.
using range_set = std::map<std::uint64_t, std::uint64_t>;

void add_range(range_set& rs, std::uint64_t lo, std::uint64_t hi) {
    if (lo >= hi) {
        return;
    }
    auto it = rs.upper_bound(lo);
    if (it != rs.begin()) {
        auto prev = std::prev(it);
        if (prev->second >= lo) {
            lo = prev->first;
            hi = std::max(hi, prev->second);
            it = rs.erase(prev);
        }
    }
    while (it != rs.end() && it->first <= hi) {
        hi = std::max(hi, it->second);
        it = rs.erase(it);
    }
    rs.emplace(lo, hi);
}

struct inode {
    bool is_dir = false;
    // Files.
    std::vector<std::byte> data;     // what readers see
    std::vector<std::byte> durable;  // what survives power loss
    range_set dirty;                 // ranges of `data` not yet in `durable`
    bool size_dirty = false;         // data.size() != durable.size() pending
    // Directories.
    std::map<std::string, std::shared_ptr<inode>> entries;
    std::map<std::string, std::shared_ptr<inode>> durable_entries;
};

std::vector<std::string> split_path(const std::string& path) {
    std::vector<std::string> parts;
    std::size_t i = 0;
    while (i <= path.size()) {
        const std::size_t j = std::min(path.find('/', i), path.size());
        std::string part = path.substr(i, j - i);
        if (part == "..") {
            if (!parts.empty()) {
                parts.pop_back();
            }
        } else if (!part.empty() && part != ".") {
            parts.push_back(std::move(part));
        }
        i = j + 1;
    }
    return parts;
}

tl::unexpected<std::error_code> sys(std::errc e) {
    return error(std::make_error_code(e));
}

}  // namespace

struct fault_file_system::state {
    struct write_fault {
        std::string match;
        std::errc code;
        std::uint64_t keep;
        int count;
    };
    struct sync_fault {
        std::string match;
        int count;
    };
    struct sync_delay {
        std::string match;
        std::chrono::microseconds delay;
        int count;
    };

    mutable std::mutex mu;
    std::shared_ptr<inode> root = std::make_shared<inode>();
    std::uint64_t generation = 0;  // bumped by every restart; stale handles fail
    bool is_crashed = false;
    bool nowait_reads = true;  // read_at_nowait serves bytes (set_nowait_reads)
    std::vector<write_fault> write_faults;
    std::vector<sync_fault> sync_faults;
    std::vector<sync_delay> sync_delays;
    std::optional<std::uint64_t> space_limit;
    std::optional<std::uint64_t> crash_budget;
    std::uint64_t syncs = 0;
    std::uint64_t dir_syncs = 0;
    std::uint64_t written = 0;
    std::size_t handles = 0;

    state() { root->is_dir = true; }

    // Requires: mu held. Resolves a path to its inode, or nullptr.
    std::shared_ptr<inode> lookup(const std::string& path) const {
        auto node = root;
        for (const auto& part : split_path(path)) {
            if (!node->is_dir) {
                return nullptr;
            }
            auto it = node->entries.find(part);
            if (it == node->entries.end()) {
                return nullptr;
            }
            node = it->second;
        }
        return node;
    }

    // Requires: mu held. The directory holding `path` and the last component.
    std::pair<std::shared_ptr<inode>, std::string> parent_of(const std::string& path) const {
        auto parts = split_path(path);
        if (parts.empty()) {
            return {nullptr, ""};
        }
        std::string name = parts.back();
        parts.pop_back();
        auto node = root;
        for (const auto& part : parts) {
            auto it = node->entries.find(part);
            if (it == node->entries.end() || !it->second->is_dir) {
                return {nullptr, name};
            }
            node = it->second;
        }
        return {node, name};
    }

    std::uint64_t used() const {
        std::uint64_t total = 0;
        walk(root, [&](const inode& n) { total += n.data.size(); });
        return total;
    }

    template <class F>
    static void walk(const std::shared_ptr<inode>& n, F&& f) {
        if (n->is_dir) {
            for (const auto& [name, child] : n->entries) {
                walk(child, f);
            }
        } else {
            f(*n);
        }
    }

    // Requires: mu held. Whether a sync of `path` is due to fail; consumes one count.
    bool take_sync_fault(const std::string& path) {
        for (auto& f : sync_faults) {
            if (f.count > 0 && path.find(f.match) != std::string::npos) {
                --f.count;
                return true;
            }
        }
        return false;
    }

    // Sleeps when a sync of `path` is due to be slow (consumes one count). Requires: mu NOT
    // held (a slow disk must not stall every other call).
    void maybe_delay_sync(const std::string& path) {
        std::chrono::microseconds d{0};
        {
            const std::lock_guard lock(mu);
            for (auto& f : sync_delays) {
                if (f.count > 0 && path.find(f.match) != std::string::npos) {
                    --f.count;
                    d = f.delay;
                    break;
                }
            }
        }
        if (d.count() > 0) {
            std::this_thread::sleep_for(d);
        }
    }

    static void sync_file(inode& n) {
        n.durable.resize(n.data.size());
        for (const auto& [lo, hi] : n.dirty) {
            const auto end = std::min<std::uint64_t>(hi, n.data.size());
            if (lo < end) {
                std::memcpy(n.durable.data() + lo, n.data.data() + lo, end - lo);
            }
        }
        n.dirty.clear();
        n.size_dirty = false;
    }

    // Requires: mu held. Replaces the visible image by the durable one (or a random mix).
    void restart(bool keep_cache, std::mt19937_64* rng) {
        if (!keep_cache) {
            revert_dir(*root, rng);
        }
        ++generation;
        is_crashed = false;
        write_faults.clear();
        sync_faults.clear();
        sync_delays.clear();
        space_limit.reset();
        crash_budget.reset();
    }

    static void revert_file(inode& n, std::mt19937_64* rng) {
        if (rng == nullptr) {
            n.data = n.durable;
        } else {
            std::vector<std::byte> out = n.durable;
            const bool keep_size = ((*rng)() & 1U) != 0;
            out.resize(keep_size ? n.data.size() : n.durable.size(), std::byte{0});
            for (const auto& [lo, hi] : n.dirty) {
                const auto end = std::min<std::uint64_t>(hi, std::min(out.size(), n.data.size()));
                if (lo >= end) {
                    continue;
                }
                switch ((*rng)() % 3) {
                    case 0:  // dropped: old bytes stay
                        break;
                    case 1:  // kept
                        std::memcpy(out.data() + lo, n.data.data() + lo, end - lo);
                        break;
                    default: {  // torn: a prefix of the new bytes reached the disk
                        const std::uint64_t cut = lo + (*rng)() % (end - lo + 1);
                        std::memcpy(out.data() + lo, n.data.data() + lo, cut - lo);
                        break;
                    }
                }
            }
            n.data = std::move(out);
        }
        n.durable = n.data;
        n.dirty.clear();
        n.size_dirty = false;
    }

    static void revert_dir(inode& d, std::mt19937_64* rng) {
        if (rng == nullptr) {
            d.entries = d.durable_entries;
        } else {
            std::map<std::string, std::shared_ptr<inode>> out;
            std::vector<std::string> names;
            for (const auto& e : d.entries) {
                names.push_back(e.first);
            }
            for (const auto& e : d.durable_entries) {
                names.push_back(e.first);
            }
            std::sort(names.begin(), names.end());
            names.erase(std::unique(names.begin(), names.end()), names.end());
            for (const auto& name : names) {
                auto cur = d.entries.find(name);
                auto dur = d.durable_entries.find(name);
                const bool take_current = ((*rng)() & 1U) != 0;
                const auto& pick = take_current ? cur : dur;
                const auto& map = take_current ? d.entries : d.durable_entries;
                if (pick != map.end()) {
                    out.emplace(name, pick->second);
                }
            }
            d.entries = std::move(out);
        }
        d.durable_entries = d.entries;
        for (auto& [name, child] : d.entries) {
            if (child->is_dir) {
                revert_dir(*child, rng);
            } else {
                revert_file(*child, rng);
            }
        }
    }
};

namespace {

class mem_file final : public file {
public:
    mem_file(std::shared_ptr<fault_file_system::state> s,
             std::shared_ptr<inode> n,
             std::string path,
             bool writable)
        : s_(std::move(s)),
          n_(std::move(n)),
          path_(std::move(path)),
          writable_(writable),
          generation_(s_->generation) {
        ++s_->handles;  // constructed under s_->mu
    }
    ~mem_file() override {
        const std::lock_guard lock(s_->mu);
        --s_->handles;
    }

    result<void> write_at(std::uint64_t offset, bytes_view data) override {
        const bytes_view parts[] = {data};
        return writev_at(offset, parts);
    }

    result<void> writev_at(std::uint64_t offset, std::span<const bytes_view> parts) override {
        const std::lock_guard lock(s_->mu);
        NEREUS_TRY(check(true));
        std::uint64_t total = 0;
        for (const auto& p : parts) {
            total += p.size();
        }
        // How much of this write lands before a fault stops it.
        std::uint64_t allowed = total;
        std::optional<std::error_code> fail;
        for (auto& f : s_->write_faults) {
            if (f.count > 0 && path_.find(f.match) != std::string::npos) {
                --f.count;
                allowed = std::min(allowed, f.keep);
                fail = std::make_error_code(f.code);
                break;
            }
        }
        if (s_->space_limit) {
            const std::uint64_t used = s_->used();
            const std::uint64_t end = offset + total;
            const std::uint64_t growth = end > n_->data.size() ? end - n_->data.size() : 0;
            if (used + growth > *s_->space_limit) {
                const std::uint64_t room = *s_->space_limit > used ? *s_->space_limit - used : 0;
                const std::uint64_t fits =
                    offset >= n_->data.size()
                        ? (room > offset - n_->data.size() ? room - (offset - n_->data.size()) : 0)
                        : n_->data.size() - offset + room;
                if (fits < allowed) {
                    allowed = fits;
                    fail = std::make_error_code(std::errc::no_space_on_device);
                }
            }
        }
        bool crash = false;
        if (s_->crash_budget) {
            if (*s_->crash_budget < allowed) {
                allowed = *s_->crash_budget;
                crash = true;
            }
            *s_->crash_budget -= allowed;
        }
        // Apply the first `allowed` bytes.
        const std::uint64_t old_size = n_->data.size();
        if (allowed > 0) {
            if (offset + allowed > n_->data.size()) {
                n_->data.resize(offset + allowed, std::byte{0});
            }
            std::uint64_t pos = offset;
            std::uint64_t left = allowed;
            for (const auto& p : parts) {
                const std::uint64_t n = std::min<std::uint64_t>(p.size(), left);
                if (n > 0) {
                    std::memcpy(n_->data.data() + pos, p.data(), n);
                }
                pos += n;
                left -= n;
                if (left == 0) {
                    break;
                }
            }
            add_range(n_->dirty, std::min(old_size, offset), offset + allowed);
            s_->written += allowed;
        }
        if (crash) {
            s_->is_crashed = true;
            return sys(std::errc::io_error);
        }
        if (fail) {
            return error(*fail);
        }
        return {};
    }

    result<std::size_t> read_at(std::uint64_t offset, std::span<std::byte> out) override {
        const std::lock_guard lock(s_->mu);
        NEREUS_TRY(check(false));
        if (offset >= n_->data.size()) {
            return std::size_t{0};
        }
        const auto n = std::min<std::uint64_t>(out.size(), n_->data.size() - offset);
        std::memcpy(out.data(), n_->data.data() + offset, n);
        return static_cast<std::size_t>(n);
    }

    // Memory is this file system's page cache: served as read_at, unless set_nowait_reads(false).
    result<std::size_t> read_at_nowait(std::uint64_t offset, std::span<std::byte> out) override {
        {
            const std::lock_guard lock(s_->mu);
            if (!s_->nowait_reads) {
                return error(std::errc::operation_would_block);
            }
        }
        return read_at(offset, out);
    }

    result<void> sync() override {
        s_->maybe_delay_sync(path_);
        const std::lock_guard lock(s_->mu);
        NEREUS_TRY(check(false));
        if (s_->take_sync_fault(path_)) {
            // Linux after a writeback error: the pages are clean, the disk does not have them.
            n_->dirty.clear();
            n_->size_dirty = false;
            return sys(std::errc::io_error);
        }
        fault_file_system::state::sync_file(*n_);
        ++s_->syncs;
        return {};
    }

    result<std::uint64_t> size() override {
        const std::lock_guard lock(s_->mu);
        NEREUS_TRY(check(false));
        return static_cast<std::uint64_t>(n_->data.size());
    }

    result<void> truncate(std::uint64_t size) override {
        const std::lock_guard lock(s_->mu);
        NEREUS_TRY(check(true));
        const std::uint64_t old = n_->data.size();
        n_->data.resize(size, std::byte{0});
        if (size > old) {
            add_range(n_->dirty, old, size);
        }
        n_->size_dirty = true;
        return {};
    }

    result<void> preallocate(std::uint64_t /*size*/) override {
        const std::lock_guard lock(s_->mu);
        return check(true);
    }

private:
    // Requires: s_->mu held.
    result<void> check(bool write) const {
        if (generation_ != s_->generation) {
            return sys(std::errc::bad_file_descriptor);
        }
        if (s_->is_crashed) {
            return sys(std::errc::io_error);
        }
        if (write && !writable_) {
            return sys(std::errc::bad_file_descriptor);
        }
        return {};
    }

    std::shared_ptr<fault_file_system::state> s_;
    std::shared_ptr<inode> n_;
    std::string path_;
    bool writable_;
    std::uint64_t generation_;
};

}  // namespace

fault_file_system::fault_file_system() : s_(std::make_shared<state>()) {}
fault_file_system::~fault_file_system() = default;

void fault_file_system::fail_writes(std::string path_substring,
                                    std::errc code,
                                    std::uint64_t keep_bytes,
                                    int count) {
    const std::lock_guard lock(s_->mu);
    s_->write_faults.push_back({std::move(path_substring), code, keep_bytes, count});
}

void fault_file_system::set_nowait_reads(bool served) {
    const std::lock_guard lock(s_->mu);
    s_->nowait_reads = served;
}

void fault_file_system::fail_syncs(std::string path_substring, int count) {
    const std::lock_guard lock(s_->mu);
    s_->sync_faults.push_back({std::move(path_substring), count});
}

void fault_file_system::delay_syncs(std::string path_substring,
                                    std::chrono::microseconds delay,
                                    int count) {
    const std::lock_guard lock(s_->mu);
    s_->sync_delays.push_back({std::move(path_substring), delay, count});
}

void fault_file_system::set_space_limit(std::optional<std::uint64_t> bytes) {
    const std::lock_guard lock(s_->mu);
    s_->space_limit = bytes;
}

void fault_file_system::crash_after_bytes(std::uint64_t n) {
    const std::lock_guard lock(s_->mu);
    s_->crash_budget = n;
}

void fault_file_system::crash_now() {
    const std::lock_guard lock(s_->mu);
    s_->is_crashed = true;
}

bool fault_file_system::crashed() const {
    const std::lock_guard lock(s_->mu);
    return s_->is_crashed;
}

void fault_file_system::power_loss() {
    const std::lock_guard lock(s_->mu);
    s_->restart(false, nullptr);
}

void fault_file_system::power_loss_torn(std::uint64_t seed) {
    const std::lock_guard lock(s_->mu);
    std::mt19937_64 rng(seed);
    s_->restart(false, &rng);
}

void fault_file_system::process_crash() {
    const std::lock_guard lock(s_->mu);
    s_->restart(true, nullptr);
}

std::uint64_t fault_file_system::sync_count() const {
    const std::lock_guard lock(s_->mu);
    return s_->syncs;
}
std::uint64_t fault_file_system::dir_sync_count() const {
    const std::lock_guard lock(s_->mu);
    return s_->dir_syncs;
}
std::uint64_t fault_file_system::bytes_written() const {
    const std::lock_guard lock(s_->mu);
    return s_->written;
}
std::size_t fault_file_system::open_files() const {
    const std::lock_guard lock(s_->mu);
    return s_->handles;
}
std::uint64_t fault_file_system::used_bytes() const {
    const std::lock_guard lock(s_->mu);
    return s_->used();
}

#define NEREUS_FAULT_FS_CHECK()              \
    do {                                     \
        if (s_->is_crashed) {                \
            return sys(std::errc::io_error); \
        }                                    \
    } while (false)

result<std::unique_ptr<file>> fault_file_system::open(const std::string& path, open_mode mode) {
    const std::lock_guard lock(s_->mu);
    NEREUS_FAULT_FS_CHECK();
    auto node = s_->lookup(path);
    if (node && node->is_dir) {
        return sys(std::errc::is_a_directory);
    }
    if (node && mode == open_mode::create_exclusive) {
        return sys(std::errc::file_exists);
    }
    if (!node) {
        if (mode == open_mode::read_only || mode == open_mode::read_write) {
            return sys(std::errc::no_such_file_or_directory);
        }
        auto [dir, name] = s_->parent_of(path);
        if (!dir || name.empty()) {
            return sys(std::errc::no_such_file_or_directory);
        }
        node = std::make_shared<inode>();
        dir->entries[name] = node;
    }
    return std::unique_ptr<file>(
        std::make_unique<mem_file>(s_, node, path, mode != open_mode::read_only));
}

result<void> fault_file_system::remove(const std::string& path) {
    const std::lock_guard lock(s_->mu);
    NEREUS_FAULT_FS_CHECK();
    auto [dir, name] = s_->parent_of(path);
    if (!dir) {
        return sys(std::errc::no_such_file_or_directory);
    }
    auto it = dir->entries.find(name);
    if (it == dir->entries.end()) {
        return sys(std::errc::no_such_file_or_directory);
    }
    if (it->second->is_dir) {
        return sys(std::errc::is_a_directory);
    }
    dir->entries.erase(it);
    return {};
}

result<void> fault_file_system::rename(const std::string& from, const std::string& to) {
    const std::lock_guard lock(s_->mu);
    NEREUS_FAULT_FS_CHECK();
    return rename_locked(from, to, /*replace=*/true);
}

// Under s_->mu, so rename_noreplace's "does `to` exist" and the rename are one atomic step
// (as renameat2(RENAME_NOREPLACE) is): two concurrent calls to one target never both succeed.
result<void> fault_file_system::rename_locked(const std::string& from,
                                              const std::string& to,
                                              bool replace) {
    auto [fdir, fname] = s_->parent_of(from);
    auto [tdir, tname] = s_->parent_of(to);
    if (!fdir || !tdir || tname.empty()) {
        return sys(std::errc::no_such_file_or_directory);
    }
    auto it = fdir->entries.find(fname);
    if (it == fdir->entries.end()) {
        return sys(std::errc::no_such_file_or_directory);
    }
    auto node = it->second;
    auto existing = tdir->entries.find(tname);
    if (existing != tdir->entries.end()) {
        if (!replace) {
            return sys(std::errc::file_exists);
        }
        if (existing->second->is_dir != node->is_dir) {
            return sys(node->is_dir ? std::errc::not_a_directory : std::errc::is_a_directory);
        }
    }
    fdir->entries.erase(it);
    tdir->entries[tname] = node;
    return {};
}

result<void> fault_file_system::rename_noreplace(const std::string& from, const std::string& to) {
    const std::lock_guard lock(s_->mu);
    NEREUS_FAULT_FS_CHECK();
    return rename_locked(from, to, /*replace=*/false);
}

result<void> fault_file_system::create_dir(const std::string& path) {
    const std::lock_guard lock(s_->mu);
    NEREUS_FAULT_FS_CHECK();
    auto [dir, name] = s_->parent_of(path);
    if (name.empty()) {
        return sys(std::errc::file_exists);  // the root
    }
    if (!dir) {
        return sys(std::errc::no_such_file_or_directory);
    }
    if (dir->entries.count(name) != 0) {
        return sys(std::errc::file_exists);
    }
    auto node = std::make_shared<inode>();
    node->is_dir = true;
    dir->entries[name] = node;
    return {};
}

result<void> fault_file_system::create_dirs(const std::string& path) {
    const auto parts = split_path(path);
    std::string cur;
    for (const auto& part : parts) {
        const std::string parent = cur.empty() ? "/" : cur;
        cur = cur + "/" + part;
        auto r = create_dir(cur);
        if (!r && r.error() != std::errc::file_exists) {
            return r;
        }
        if (r) {
            NEREUS_TRY(sync_dir(parent));
        }
    }
    return {};
}

result<void> fault_file_system::remove_dir(const std::string& path) {
    const std::lock_guard lock(s_->mu);
    NEREUS_FAULT_FS_CHECK();
    auto [dir, name] = s_->parent_of(path);
    if (!dir) {
        return sys(std::errc::no_such_file_or_directory);
    }
    auto it = dir->entries.find(name);
    if (it == dir->entries.end()) {
        return sys(std::errc::no_such_file_or_directory);
    }
    if (!it->second->is_dir) {
        return sys(std::errc::not_a_directory);
    }
    if (!it->second->entries.empty()) {
        return sys(std::errc::directory_not_empty);
    }
    dir->entries.erase(it);
    return {};
}

result<void> fault_file_system::sync_dir(const std::string& path) {
    s_->maybe_delay_sync(path);
    const std::lock_guard lock(s_->mu);
    NEREUS_FAULT_FS_CHECK();
    auto node = s_->lookup(path);
    if (!node) {
        return sys(std::errc::no_such_file_or_directory);
    }
    if (!node->is_dir) {
        return sys(std::errc::not_a_directory);
    }
    if (s_->take_sync_fault(path)) {
        return sys(std::errc::io_error);
    }
    node->durable_entries = node->entries;
    ++s_->dir_syncs;
    return {};
}

result<void> fault_file_system::sync_all(const std::string& path) {
    s_->maybe_delay_sync(path);
    const std::lock_guard lock(s_->mu);
    NEREUS_FAULT_FS_CHECK();
    if (!s_->lookup(path)) {
        return sys(std::errc::no_such_file_or_directory);
    }
    if (s_->take_sync_fault(path)) {
        return sys(std::errc::io_error);
    }
    // Every inode reachable from the root (an unlinked file has no name left to make durable).
    std::vector<inode*> todo{s_->root.get()};
    while (!todo.empty()) {
        inode* n = todo.back();
        todo.pop_back();
        if (n->is_dir) {
            n->durable_entries = n->entries;
            for (auto& [name, child] : n->entries) {
                todo.push_back(child.get());
            }
        } else if (!n->dirty.empty() || n->size_dirty) {
            fault_file_system::state::sync_file(*n);
        }
    }
    ++s_->dir_syncs;
    return {};
}

result<std::vector<std::string>> fault_file_system::list_dir(const std::string& path) {
    const std::lock_guard lock(s_->mu);
    NEREUS_FAULT_FS_CHECK();
    auto node = s_->lookup(path);
    if (!node) {
        return sys(std::errc::no_such_file_or_directory);
    }
    if (!node->is_dir) {
        return sys(std::errc::not_a_directory);
    }
    std::vector<std::string> names;
    names.reserve(node->entries.size());
    for (const auto& e : node->entries) {
        names.push_back(e.first);
    }
    return names;  // std::map keeps them sorted
}

result<bool> fault_file_system::exists(const std::string& path) {
    const std::lock_guard lock(s_->mu);
    NEREUS_FAULT_FS_CHECK();
    return s_->lookup(path) != nullptr;
}

result<bool> fault_file_system::is_dir(const std::string& path) {
    const std::lock_guard lock(s_->mu);
    NEREUS_FAULT_FS_CHECK();
    auto node = s_->lookup(path);
    return node != nullptr && node->is_dir;
}

result<std::uint64_t> fault_file_system::file_size(const std::string& path) {
    const std::lock_guard lock(s_->mu);
    NEREUS_FAULT_FS_CHECK();
    auto node = s_->lookup(path);
    if (!node) {
        return sys(std::errc::no_such_file_or_directory);
    }
    if (node->is_dir) {
        return sys(std::errc::is_a_directory);
    }
    return static_cast<std::uint64_t>(node->data.size());
}

}  // namespace nereus
