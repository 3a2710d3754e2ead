// Writes the seed corpora of the fuzz targets from the project's own encoders, so the seeds
// follow the formats: `fuzz_seeds <fuzz dir>` (re)writes <fuzz dir>/corpus-command,
// corpus-batch, corpus-cursor and corpus-storage. Run by hand after a format change (see
// README.md); the files are committed. Each seed is laid out as its target reads its input.

#include "nereus/base/crc32c.h"
#include "nereus/cursor/record_format.h"
#include "nereus/proto/batch_codec.h"
#include "nereus/proto/pulsar_api.h"
#include "nereus/storage/format.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace pb = nereus::proto::pb;
namespace cf = nereus::cursor::format;
namespace sf = nereus::storage::format;
using nereus::cursor::cursor_state;

std::filesystem::path root_dir;

void write(const std::string& dir, const std::string& name, std::string_view bytes) {
    const auto d = root_dir / dir;
    std::filesystem::create_directories(d);
    std::ofstream(d / name, std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void write(const std::string& dir, const std::string& name, char mode, std::string_view body) {
    write(dir, name, std::string(1, mode) + std::string(body));
}

std::string as_string(const std::vector<std::byte>& b) {
    return {reinterpret_cast<const char*>(b.data()), b.size()};
}

// ---- command_fuzz: byte 0 = 0 (no payload section), then a BaseCommand ----
void commands() {
    const auto put = [](const std::string& name, const pb::BaseCommand& c) {
        write("corpus-command", name, '\0', c.SerializePartialAsString());
    };
    pb::BaseCommand c;
    c.set_type(pb::BaseCommand::CONNECT);
    c.mutable_connect()->set_client_version("seed");
    c.mutable_connect()->set_protocol_version(21);
    put("connect", c);
    c.Clear();
    c.set_type(pb::BaseCommand::LOOKUP);
    c.mutable_lookuptopic()->set_topic("persistent://public/default/t-partition-3");
    c.mutable_lookuptopic()->set_request_id(7);
    put("lookup", c);
    c.Clear();
    c.set_type(pb::BaseCommand::PARTITIONED_METADATA);
    c.mutable_partitionmetadata()->set_topic("my-topic");
    c.mutable_partitionmetadata()->set_request_id(8);
    put("partitioned_metadata", c);
    c.Clear();
    c.set_type(pb::BaseCommand::PRODUCER);
    c.mutable_producer()->set_topic("persistent://t/ns/x");
    c.mutable_producer()->set_producer_id(1);
    c.mutable_producer()->set_request_id(9);
    put("producer", c);
    c.Clear();
    c.set_type(pb::BaseCommand::SUBSCRIBE);
    c.mutable_subscribe()->set_topic("non-persistent://t/ns/x");
    c.mutable_subscribe()->set_subscription("sub");
    c.mutable_subscribe()->set_subtype(pb::CommandSubscribe::Key_Shared);
    c.mutable_subscribe()->set_consumer_id(2);
    c.mutable_subscribe()->set_request_id(10);
    put("subscribe", c);
    c.Clear();
    c.set_type(pb::BaseCommand::ACK);
    c.mutable_ack()->set_consumer_id(2);
    c.mutable_ack()->set_ack_type(pb::CommandAck::Individual);
    auto* id = c.mutable_ack()->add_message_id();
    id->set_ledgerid(1);
    id->set_entryid(5);
    id->add_ack_set(-2);
    put("ack", c);
    c.Clear();
    c.set_type(pb::BaseCommand::FLOW);
    c.mutable_flow()->set_consumer_id(2);
    c.mutable_flow()->set_messagepermits(1000);
    put("flow", c);
    c.Clear();
    c.set_type(pb::BaseCommand::PING);
    c.mutable_ping();
    put("ping", c);
}

// ---- batch_fuzz: byte 0 = metadata length, the MessageMetadata, then the batch ----
void batches() {
    for (int n : {1, 3}) {
        std::vector<std::byte> batch;
        nereus::proto::batch_builder b(batch);
        for (int i = 0; i < n; ++i) {
            pb::SingleMessageMetadata m;
            m.set_partition_key("k" + std::to_string(i));
            auto* p = m.add_properties();
            p->set_key("a");
            p->set_value("b");
            const std::string payload = "payload-" + std::to_string(i);
            if (!b.add(m, {reinterpret_cast<const std::byte*>(payload.data()), payload.size()})) {
                std::abort();
            }
        }
        pb::MessageMetadata meta;
        meta.set_producer_name("p");
        meta.set_sequence_id(1);
        meta.set_publish_time(1);
        meta.set_num_messages_in_batch(n);
        const std::string mb = meta.SerializeAsString();
        write("corpus-batch", "batch-" + std::to_string(n), static_cast<char>(mb.size()),
              mb + as_string(batch));
    }
}

// ---- cursor_record_fuzz: mode, generation, seq, record (or body when repaired) ----
void cursor_records() {
    cursor_state s(3);
    s.apply(nereus::cursor::ack_range_op{5, 8});
    auto bits = nereus::cursor::batch_bits::none_set(8);
    bits.set(1);
    bits.set(4);
    s.apply(nereus::cursor::ack_batch_op{10, bits});
    s.apply(nereus::cursor::put_property_op{"k", "v"});
    s.apply(nereus::cursor::redelivery_op{4, 2});

    const auto raw_and_body = [](const std::string& name, unsigned kind, const std::string& rec,
                                 std::size_t head, std::size_t tail, char gen, char seq) {
        const std::string prefix{static_cast<char>(kind), gen, seq};
        write("corpus-cursor", name, prefix + rec);
        const std::string repaired{static_cast<char>(kind | 4U), gen, seq};
        write("corpus-cursor", name + "-body",
              repaired + rec.substr(head, rec.size() - head - tail));
    };
    cf::root_record inline_root;
    inline_root.generation = 2;
    inline_root.epoch = 1;
    inline_root.life = nereus::cursor::lifecycle::active;
    inline_root.commit_seq = 9;
    inline_root.writer = 4;
    inline_root.state = s;
    raw_and_body("root-inline", 0, cf::encode_root(inline_root), cf::header_size, cf::trailer_size,
                 0, 0);
    cf::root_record spilled = inline_root;
    spilled.spilled = true;
    spilled.state = {};
    spilled.snapshot = {.seq = 7, .writer = 4, .nonce = 1, .size = 100, .checksum = 0xabcd};
    raw_and_body("root-spilled", 0, cf::encode_root(spilled), cf::header_size, cf::trailer_size, 0,
                 0);
    raw_and_body("snapshot", 1,
                 cf::encode_snapshot({.identity = "cursor/t/sub", .generation = 2, .seq = 7}, s),
                 cf::header_size, cf::trailer_size, 0, 0);
    cf::delta_record d{.generation = 2, .seq = 8, .ops = {}};
    d.ops.emplace_back(nereus::cursor::ack_range_op{11, 12});
    d.ops.emplace_back(nereus::cursor::ack_cumulative_op{.entry = 6});
    d.ops.emplace_back(nereus::cursor::put_property_op{"x", "y"});
    d.ops.emplace_back(nereus::cursor::redelivery_op{12, 1});
    raw_and_body("delta", 2, cf::encode_delta(d), 1, cf::trailer_size, 2, 8);
}

// ---- storage_recovery_fuzz: mode, then a file (or chunks when repaired) ----
void record(std::string& out, std::string_view payload, std::uint64_t offset) {
    std::vector<std::byte> hdr(sf::kRecordHeaderSize);
    sf::finish_record_header(hdr.data(), nereus::crc32c::value(payload.data(), payload.size()),
                             static_cast<std::uint32_t>(payload.size()), offset);
    out += as_string(hdr);
    out += payload;
}

void storage_files() {
    const std::vector<std::string> payloads = {"first", "second entry", "third"};
    std::string chunks;  // the repaired layout: [len][payload][tweak]
    std::string segment;
    std::string journal;
    for (std::size_t i = 0; i < payloads.size(); ++i) {
        chunks += static_cast<char>(payloads[i].size());
        chunks += payloads[i];
        chunks += '\0';
        record(segment, payloads[i], i);
        std::string block(sf::kBlockHeaderSize + sf::kJournalRecordPrefix, '\0');
        sf::put_u64(reinterpret_cast<std::byte*>(block.data()) + sf::kBlockHeaderSize, 1);
        record(block, payloads[i], i);
        sf::finish_block({reinterpret_cast<std::byte*>(block.data()), block.size()}, i + 1, 1);
        journal += block;
    }
    write("corpus-storage", "segment", '\0', segment);
    write("corpus-storage", "segment-torn", '\0', segment.substr(0, segment.size() - 3));
    write("corpus-storage", "journal", '\1', journal);
    const std::vector<sf::stream_mark> marks = {{.stream = 1, .base = 0, .bytes = 40, .end = 2}};
    const auto cp = sf::encode_checkpoint({.file_seq = 1, .pos = 0, .next_block_seq = 1}, marks);
    write("corpus-storage", "checkpoint", '\2', as_string(cp));
    write("corpus-storage", "segment-repaired", '\4', chunks);
    write("corpus-storage", "journal-repaired", '\5', chunks);
    write("corpus-storage", "checkpoint-repaired", '\6', as_string(cp).substr(0, cp.size() - 4));
    write("corpus-storage", "recover-segment", '\3', segment);
    write("corpus-storage", "recover-segment-repaired", '\7', chunks + "tail");
    write("corpus-storage", "recover-journal", '\13', journal);
    write("corpus-storage", "recover-journal-repaired", '\17', chunks);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: fuzz_seeds <fuzz dir>\n");
        return 2;
    }
    root_dir = argv[1];
    commands();
    batches();
    cursor_records();
    storage_files();
    return 0;
}
