#include "nereus/cursor/cursor_keys.h"

#include "nereus/cursor/errc.h"
#include "nereus/objects/object_name.h"

#include <fmt/format.h>

#include <charconv>

namespace nereus::cursor {

std::string escape_name(std::string_view raw) {
    std::string out;
    out.reserve(raw.size());
    for (char ch : raw) {
        const auto c = static_cast<unsigned char>(ch);
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-') {
            out.push_back(ch);
        } else {
            out += fmt::format("_{:02x}", c);
        }
    }
    return out;
}

result<cursor_keys> cursor_keys::make(std::string_view key_prefix, const cursor_id& id) {
    if (id.ledger.empty() || id.name.empty() || key_prefix.empty()) {
        return nereus::error(errc::invalid_argument);
    }
    const std::string ledger = escape_name(id.ledger);
    const std::string name = escape_name(id.name);
    cursor_keys k;
    k.root = fmt::format("{}/{}/{}", key_prefix, ledger, name);
    k.delta_prefix = k.root + "/d/";
    k.object_prefix = fmt::format("cursor/{}/{}/", ledger, name);
    // The longest snapshot name must stay valid.
    const std::string longest =
        k.snapshot_name(~std::uint64_t{0}, ~std::uint64_t{0}, ~std::uint64_t{0}, ~std::uint64_t{0});
    if (!objects::validate_object_name(longest)) {
        return nereus::error(errc::invalid_argument);
    }
    return k;
}

std::string cursor_keys::delta_key(std::uint64_t seq) const {
    return fmt::format("{}{:020}", delta_prefix, seq);
}

std::optional<std::uint64_t> cursor_keys::delta_seq(std::string_view key) const {
    if (!key.starts_with(delta_prefix) || key.size() != delta_prefix.size() + 20) {
        return std::nullopt;
    }
    std::uint64_t seq = 0;
    const char* b = key.data() + delta_prefix.size();
    const char* e = key.data() + key.size();
    auto [p, ec] = std::from_chars(b, e, seq);
    if (ec != std::errc() || p != e) {
        return std::nullopt;
    }
    return seq;
}

std::string cursor_keys::snapshot_name(std::uint64_t generation,
                                       std::uint64_t seq,
                                       std::uint64_t writer,
                                       std::uint64_t nonce) const {
    return fmt::format("{}g{}-s{}-w{}-n{}", object_prefix, generation, seq, writer, nonce);
}

}  // namespace nereus::cursor
