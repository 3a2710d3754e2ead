#include "nereus/client/message.h"

#include "nereus/client/detail/message_data.h"

#include <fmt/format.h>

#include <cstring>
#include <memory>
#include <new>

namespace nereus::client {

namespace detail {

namespace {

// Allocates what allocate_shared asks for (the control block holding the message_data) plus
// `extra` bytes behind it, and reports where those start. Copies (rebound by allocate_shared
// and kept in the control block) carry the same `extra`, so deallocate frees what allocate
// took. The tail starts at a multiple of the control block's size from a block aligned for
// any fundamental type, so the bytes are suitably placed for a byte array.
template <class T>
class tail_allocator {
public:
    using value_type = T;
    tail_allocator(std::size_t extra, std::byte** tail) noexcept : extra_(extra), tail_(tail) {}
    template <class U>
    tail_allocator(const tail_allocator<U>& o) noexcept : extra_(o.extra_), tail_(o.tail_) {}

    T* allocate(std::size_t n) {
        auto* p = static_cast<std::byte*>(::operator new(n * sizeof(T) + extra_));
        *tail_ = p + n * sizeof(T);
        return reinterpret_cast<T*>(p);
    }
    void deallocate(T* p, std::size_t n) noexcept { ::operator delete(p, n * sizeof(T) + extra_); }

    template <class U>
    friend bool operator==(const tail_allocator& a, const tail_allocator<U>& b) noexcept {
        return a.extra_ == b.extra_;
    }

private:
    template <class U>
    friend class tail_allocator;
    std::size_t extra_;
    std::byte** tail_;
};

}  // namespace

std::shared_ptr<message_data> make_message_data(std::span<const std::byte> payload) {
    std::byte* tail = nullptr;
    auto d =
        std::allocate_shared<message_data>(tail_allocator<message_data>(payload.size(), &tail));
    if (!payload.empty()) {
        std::memcpy(tail, payload.data(), payload.size());
    }
    d->payload = {tail, payload.size()};
    return d;
}

}  // namespace detail

namespace {
const std::string empty_string;
const std::vector<property> no_properties;
const message_id no_id;
}  // namespace

std::string message_id::to_string() const {
    return fmt::format("{}:{}:{}:{}", ledger, entry, partition, batch_index);
}

const message_id& message::id() const noexcept {
    return data_ ? data_->id : no_id;
}
const std::string& message::topic() const noexcept {
    return data_ && data_->topic ? *data_->topic : empty_string;
}
std::span<const std::byte> message::payload() const noexcept {
    return data_ ? data_->payload : std::span<const std::byte>{};
}
std::string_view message::payload_text() const noexcept {
    auto p = payload();
    return {reinterpret_cast<const char*>(p.data()), p.size()};
}
bool message::has_key() const noexcept {
    return data_ && data_->has_key;
}
const std::string& message::key() const noexcept {
    return data_ ? data_->key : empty_string;
}
const std::string& message::ordering_key() const noexcept {
    return data_ ? data_->ordering_key : empty_string;
}
const std::vector<property>& message::properties() const noexcept {
    return data_ ? data_->properties : no_properties;
}
std::optional<std::string_view> message::property_value(std::string_view name) const {
    for (const auto& [k, v] : properties()) {
        if (k == name) {
            return std::string_view(v);
        }
    }
    return std::nullopt;
}
system_time message::publish_time() const noexcept {
    return data_ ? data_->publish_time : system_time{};
}
std::optional<system_time> message::event_time() const noexcept {
    return data_ ? data_->event_time : std::nullopt;
}
const std::string& message::producer_name() const noexcept {
    return data_ && data_->producer_name ? *data_->producer_name : empty_string;
}
std::uint64_t message::sequence_id() const noexcept {
    return data_ ? data_->sequence_id : 0;
}
std::uint32_t message::redelivery_count() const noexcept {
    return data_ ? data_->redelivery_count : 0;
}

outgoing_message outgoing_message::text(std::string_view text) {
    outgoing_message m;
    m.payload.resize(text.size());
    if (!text.empty()) {
        std::memcpy(m.payload.data(), text.data(), text.size());
    }
    return m;
}

outgoing_message outgoing_message::bytes(std::span<const std::byte> payload) {
    outgoing_message m;
    m.payload.assign(payload.begin(), payload.end());
    return m;
}

}  // namespace nereus::client
