#include "nereus/proto/batch_codec.h"

#include "nereus/proto/errc.h"
#include "nereus/proto/frame_format.h"
#include "nereus/proto/pulsar_api.h"

#include <cstring>
#include <limits>

namespace nereus::proto {

batch_reader::batch_reader() : metadata_(std::make_unique<pb::SingleMessageMetadata>()) {}
batch_reader::~batch_reader() = default;
batch_reader::batch_reader(batch_reader&&) noexcept = default;
batch_reader& batch_reader::operator=(batch_reader&&) noexcept = default;

void batch_reader::reset(std::span<const std::byte> payload, std::int32_t num_messages) {
    rest_ = payload;
    payload_ = {};
    count_ = num_messages;
    index_ = -1;
}

result<bool> batch_reader::next() {
    if (index_ + 1 >= count_) {
        if (!rest_.empty() || count_ < 0) {
            return error(errc::bad_batch);
        }
        return false;
    }
    if (rest_.size() < size_field_bytes) {
        return error(errc::bad_batch);
    }
    const std::uint32_t n = detail::load_be32(rest_.data());
    rest_ = rest_.subspan(size_field_bytes);
    if (n > rest_.size() || !metadata_->ParsePartialFromArray(rest_.data(), static_cast<int>(n))) {
        return error(errc::bad_batch);
    }
    rest_ = rest_.subspan(n);
    const std::int32_t size = metadata_->payload_size();
    if (size < 0 || static_cast<std::size_t>(size) > rest_.size()) {
        return error(errc::bad_batch);
    }
    payload_ = rest_.first(static_cast<std::size_t>(size));
    rest_ = rest_.subspan(static_cast<std::size_t>(size));
    ++index_;
    return true;
}

result<void> batch_builder::add(pb::SingleMessageMetadata& metadata,
                                std::span<const std::byte> payload) {
    if (payload.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) {
        return error(errc::invalid_argument);
    }
    metadata.set_payload_size(static_cast<std::int32_t>(payload.size()));
    if (!metadata.IsInitialized()) {
        return error(errc::missing_required_field);
    }
    const auto n = static_cast<std::uint32_t>(metadata.ByteSizeLong());
    const std::size_t old = out_.size();
    out_.resize(old + size_field_bytes + n + payload.size());
    std::byte* p = out_.data() + old;
    detail::store_be32(p, n);
    p += size_field_bytes;
    metadata.SerializeWithCachedSizesToArray(reinterpret_cast<std::uint8_t*>(p));
    p += n;
    if (!payload.empty()) {
        std::memcpy(p, payload.data(), payload.size());
    }
    ++count_;
    return {};
}

}  // namespace nereus::proto
