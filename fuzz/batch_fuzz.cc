// libFuzzer target: the batch payload parser. Input: byte 0 = length L of a MessageMetadata
// (mod the input size), then L bytes parsed as MessageMetadata (its num_messages_in_batch is the
// entry count, as a consumer takes it; when absent or unparsable, byte 0 reinterpreted as a
// signed count, so negative and zero counts are tried too), then the batch payload.
// Checks: no crash / ASan / UBSan report; next() yields at most num_messages entries, each
// payload a view inside the batch whose size is the entry's payload_size; an error is final
// (bad_batch, then the reader is not used again); and a batch that reads cleanly to the end is
// rebuilt with batch_builder and read again to the same entries (payloads and metadata).

#include "nereus/proto/batch_codec.h"
#include "nereus/proto/pulsar_api.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace {

namespace pb = nereus::proto::pb;

void check(bool ok) {
    if (!ok) {
        std::abort();
    }
}

struct entry {
    std::string metadata;  // re-serialized SingleMessageMetadata
    std::span<const std::byte> payload;
};

// Reads the whole batch; nullopt on bad_batch.
std::optional<std::vector<entry>> read_all(std::span<const std::byte> batch, std::int32_t count) {
    nereus::proto::batch_reader r;
    r.reset(batch, count);
    std::vector<entry> out;
    while (true) {
        auto more = r.next();
        if (!more) {
            return std::nullopt;
        }
        if (!*more) {
            break;
        }
        check(count > 0 && out.size() < static_cast<std::size_t>(count));
        check(r.index() == static_cast<std::int32_t>(out.size()));
        const auto p = r.payload();
        check(p.empty() ||
              (p.data() >= batch.data() && p.data() + p.size() <= batch.data() + batch.size()));
        check(static_cast<std::size_t>(r.metadata().payload_size()) == p.size());
        // The reader takes a missing payload_size (a required field) as 0; the builder always
        // writes it. Compare with it set.
        pb::SingleMessageMetadata m = r.metadata();
        m.set_payload_size(static_cast<std::int32_t>(p.size()));
        out.push_back({m.SerializePartialAsString(), p});
    }
    check(out.size() == static_cast<std::size_t>(count < 0 ? 0 : count));
    return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) {
        return 0;
    }
    const std::size_t meta_len = data[0] % size;
    const std::span<const std::byte> rest(reinterpret_cast<const std::byte*>(data + 1), size - 1);
    const auto meta_bytes = rest.first(meta_len);
    const auto batch = rest.subspan(meta_len);

    std::int32_t count = static_cast<std::int8_t>(data[0]);
    pb::MessageMetadata meta;
    if (meta.ParsePartialFromArray(meta_bytes.data(), static_cast<int>(meta_bytes.size())) &&
        meta.has_num_messages_in_batch()) {
        count = meta.num_messages_in_batch();
    }
    const auto entries = read_all(batch, count);
    if (!entries) {
        return 0;
    }
    // Rebuild and read again.
    std::vector<std::byte> rebuilt;
    nereus::proto::batch_builder builder(rebuilt);
    for (const auto& e : *entries) {
        pb::SingleMessageMetadata m;
        check(m.ParsePartialFromString(e.metadata));
        if (!builder.add(m, e.payload)) {
            return 0;  // a required field missing from the input: the builder refuses it
        }
    }
    check(builder.count() == static_cast<std::int32_t>(entries->size()));
    const auto again = read_all(rebuilt, builder.count());
    check(again.has_value() && again->size() == entries->size());
    for (std::size_t i = 0; i < entries->size(); ++i) {
        const auto& a = (*entries)[i];
        const auto& b = (*again)[i];
        check(a.metadata == b.metadata);
        check(a.payload.size() == b.payload.size());
        check(a.payload.empty() ||
              std::memcmp(a.payload.data(), b.payload.data(), a.payload.size()) == 0);
    }
    return 0;
}
