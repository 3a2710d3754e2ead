#include "order_projection.h"

#include "nereus/events/errc.h"
#include "nereus/events/sqlite_projection.h"

#include <filesystem>

namespace orders {

namespace ev = nereus::events;

namespace {

nereus::result<state> load(const ev::projection_repository& repo) {
    auto rows = repo.rows();
    if (!rows) {
        return nereus::error(rows.error());
    }
    state s;
    for (const auto& r : *rows) {
        auto o = decode_order(std::string_view(r.value));
        if (!o || o->id != r.key) {
            return nereus::error(errc::bad_field);
        }
        s[r.key] = r.value;
    }
    return s;
}

}  // namespace

nereus::result<order_projection> order_projection::open(const std::string& path) {
    auto repo = ev::sqlite_projection::open(path);
    if (!repo) {
        return nereus::error(repo.error());
    }
    auto s = load(**repo);
    if (!s) {
        return nereus::error(s.error());
    }
    return order_projection(std::move(*repo), std::move(*s));
}

nereus::result<state> order_projection::read_state(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
        return nereus::error(ev::errc::storage);
    }
    auto repo = ev::sqlite_projection::open(path);
    if (!repo) {
        return nereus::error(repo.error());
    }
    return load(**repo);
}

nereus::result<void> order_projection::replace_snapshot(
    std::span<const ev::cursor> barriers,
    std::span<const std::pair<std::string, std::string>> image) {
    std::vector<ev::row> rows;
    rows.reserve(image.size());
    state next;
    for (const auto& [key, raw] : image) {
        auto o = decode_order(std::string_view(raw));
        if (!o) {
            return nereus::error(o.error());
        }
        if (o->id != key) {
            return nereus::error(errc::bad_field);
        }
        std::string json = encode_order(*o);  // the snapshot's version is the source's
        rows.push_back({key, json});
        next[key] = std::move(json);
    }
    if (auto r = repo_->replace_atomically(barriers, rows); !r) {
        return r;
    }
    mirror_ = std::move(next);
    return {};
}

nereus::result<ev::apply_outcome> order_projection::apply(const ev::cursor& c,
                                                          const ev::operation& op,
                                                          std::span<const std::byte> payload) {
    if (op.what == ev::operation::kind::remove) {
        auto r = repo_->apply_once(c, op, {});
        if (r && *r == ev::apply_outcome::applied) {
            mirror_.erase(op.key);
        }
        return r;
    }
    auto o = decode_order(payload);
    if (!o) {
        return nereus::error(o.error());
    }
    if (o->id != op.key) {
        return nereus::error(errc::bad_field);
    }
    // The counted version (see the header): 1 for an order the projection does not hold.
    std::uint64_t counted = 1;
    if (auto it = mirror_.find(op.key); it != mirror_.end()) {
        auto current = decode_order(std::string_view(it->second));
        if (!current) {
            return nereus::error(current.error());
        }
        counted = current->version + 1;
    }
    o->version = counted;
    std::string json = encode_order(*o);
    auto r = repo_->apply_once(
        c, op,
        std::span<const std::byte>(reinterpret_cast<const std::byte*>(json.data()), json.size()));
    if (r && *r == ev::apply_outcome::applied) {
        mirror_[op.key] = std::move(json);
    }
    return r;
}

}  // namespace orders
