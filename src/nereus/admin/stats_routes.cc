// stats, internalStats (Pulsar's shapes plus Nereus's cursor fields) and /metrics
// (Prometheus text). Read-only: nothing here changes state (opening a topic to report on it
// recovers its ledger, as the first client would).

#include "nereus/admin/errors.h"
#include "nereus/admin/routes.h"
#include "nereus/base/latency_histogram.h"
#include "nereus/broker/partitioned_topics.h"

#include <fmt/format.h>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

namespace nereus::admin {

namespace json = boost::json;

namespace {

constexpr std::string_view base = "/admin/v2/persistent/{tenant}/{namespace}/{topic}";

const char* pulsar_type(broker::sub_type t) {
    switch (t) {
        case broker::sub_type::exclusive:
            return "Exclusive";
        case broker::sub_type::shared:
            return "Shared";
        case broker::sub_type::failover:
            return "Failover";
        case broker::sub_type::key_shared:
            return "Key_Shared";
    }
    return "Exclusive";
}

json::object subscription_stats(const rates& r, broker::subscription& s) {
    const auto st = s.stats();
    json::object o;
    json::array consumers;
    std::uint64_t unacked = 0;
    for (const auto& c : s.consumer_views()) {
        json::object co;
        co["consumerName"] = c.name;
        co["availablePermits"] = c.permits;
        co["unackedMessages"] = c.unacked;
        co["priorityLevel"] = c.priority;
        unacked += c.unacked;
        consumers.push_back(std::move(co));
    }
    o["msgRateOut"] = r.msg_out;
    o["msgThroughputOut"] = r.bytes_out;
    o["msgRateRedeliver"] = r.redeliver;
    o["msgOutCounter"] = st.messages_dispatched;
    o["msgBacklog"] = s.backlog();
    o["unackedMessages"] = unacked;
    o["type"] = pulsar_type(s.type());
    o["isDurable"] = s.durable();
    o["consumers"] = std::move(consumers);
    // Nereus: ACK commands, acks by outcome and redeliveries since the broker opened the
    // subscription.
    o["ackRequests"] = st.ack_requests;
    o["acksApplied"] = st.acks_applied;
    o["acksWithoutEffect"] = st.acks_no_effect;
    o["acksStale"] = st.acks_stale;
    o["redeliveries"] = st.redeliveries;
    return o;
}

json::object topic_stats(const rate_sampler& sampler, broker::topic& t) {
    const auto r = sampler.topic(t.full_name());
    json::object o;
    o["msgRateIn"] = r.msg_in;
    o["msgThroughputIn"] = r.bytes_in;
    o["msgRateOut"] = r.msg_out;
    o["msgThroughputOut"] = r.bytes_out;
    o["msgInCounter"] = t.messages_in();
    o["bytesInCounter"] = t.bytes_in();
    std::uint64_t out = 0;
    json::object subs;
    for (const auto& s : all_subscriptions(t)) {
        auto so = subscription_stats(sampler.subscription(t.full_name(), s->name()), *s);
        out += s->stats().messages_dispatched;
        subs[s->name()] = std::move(so);
    }
    o["msgOutCounter"] = out;
    o["averageMsgSize"] = t.messages_in() == 0 ? 0.0
                                               : static_cast<double>(t.bytes_in()) /
                                                     static_cast<double>(t.messages_in());
    json::array publishers;
    for (std::size_t i = 0, n = t.producer_count(); i < n; ++i) {
        json::object p;
        publishers.push_back(std::move(p));
    }
    o["publishers"] = std::move(publishers);
    o["subscriptions"] = std::move(subs);
    o["replication"] = json::object();
    o["deduplicationStatus"] = "Disabled";
    // Pulsar's CompactionStats (the last successful run in this process) plus Nereus's
    // compactionHorizon ("L:E", the last entry the compacted view covers; "" if none).
    json::object compaction;
    std::string horizon;
    if (t.compaction()) {
        const auto ci = t.compaction()->info();
        compaction["lastCompactionRemovedEventCount"] = ci.last_removed;
        compaction["lastCompactionSucceedTimestamp"] = ci.last_success_ms;
        if (ci.has_view && ci.end > 0) {
            horizon = position_text(ci.ledger_id, static_cast<std::int64_t>(ci.end) - 1);
        }
    }
    o["compaction"] = std::move(compaction);
    o["compactionHorizon"] = horizon;
    return o;
}

// Guava's RangeSet text, as Pulsar prints individuallyDeletedMessages: acked [b, e) is
// "(L:b-1..L:e-1]".
std::string ranges_text(std::uint64_t ledger,
                        const std::vector<std::pair<std::uint64_t, std::uint64_t>>& ranges) {
    std::string s = "[";
    for (std::size_t i = 0; i < ranges.size(); ++i) {
        if (i > 0) {
            s += ", ";
        }
        s += fmt::format("({}..{}]",
                         position_text(ledger, static_cast<std::int64_t>(ranges[i].first) - 1),
                         position_text(ledger, static_cast<std::int64_t>(ranges[i].second) - 1));
    }
    return s + "]";
}

json::object internal_stats(broker::topic& t) {
    const auto d = t.store().details();
    const auto entries = d.end - d.first_entry;
    json::object o;
    o["entriesAddedCounter"] = t.messages_in();
    o["numberOfEntries"] = entries;
    o["totalSize"] = 0;
    o["currentLedgerEntries"] = entries;
    o["currentLedgerSize"] = 0;
    o["lastLedgerCreatedTimestamp"] = "";
    o["waitingCursorsCount"] = 0;
    o["pendingAddEntriesCount"] = 0;
    o["lastConfirmedEntry"] = position_text(d.ledger_id, static_cast<std::int64_t>(d.end) - 1);
    o["state"] = "LedgerOpened";
    json::object ledger;
    ledger["ledgerId"] = d.ledger_id;
    ledger["entries"] = entries;
    ledger["size"] = 0;
    ledger["offloaded"] = false;
    // Nereus: the first readable entry and the next entry id (one ledger per topic
    // incarnation).
    ledger["firstEntry"] = d.first_entry;
    ledger["end"] = d.end;
    // Nereus: the first entry still on disk (retention deletes whole segments only).
    ledger["firstStoredEntry"] = d.first_stored;
    o["ledgers"] = json::array{std::move(ledger)};
    // Pulsar's compactedLedger (-1 when the topic has no compacted view); Nereus: the view is
    // a snapshot object, named here, and its horizon (doc/compaction.md).
    json::object compacted;
    compacted["ledgerId"] = -1;
    compacted["entries"] = -1;
    compacted["size"] = -1;
    compacted["offloaded"] = false;
    compacted["underReplicated"] = false;
    if (t.compaction()) {
        if (const auto ci = t.compaction()->info(); ci.has_view) {
            compacted["ledgerId"] = ci.ledger_id;
            compacted["entries"] = ci.entries;
            compacted["size"] = ci.bytes;
            compacted["keys"] = ci.keys;
            compacted["object"] = ci.object;
            o["compactionHorizon"] =
                ci.end > 0 ? position_text(ci.ledger_id, static_cast<std::int64_t>(ci.end) - 1)
                           : std::string();
        }
    }
    o["compactedLedger"] = std::move(compacted);
    json::object cursors;
    for (const auto& s : all_subscriptions(t)) {
        const auto c = s->cursor().details();
        json::object co;
        co["markDeletePosition"] =
            position_text(d.ledger_id, static_cast<std::int64_t>(c.mark_delete) - 1);
        co["readPosition"] = position_text(d.ledger_id, static_cast<std::int64_t>(c.read_position));
        co["waitingReadOp"] = false;
        co["pendingReadOps"] = 0;
        co["messagesConsumedCounter"] = s->stats().acks_applied;
        co["cursorLedger"] = -1;
        co["cursorLedgerLastEntry"] = -1;
        co["individuallyDeletedMessages"] = ranges_text(d.ledger_id, c.acked_ranges);
        co["lastLedgerSwitchTimestamp"] = "";
        co["state"] = c.state == "DELETED" ? "Closed" : "Open";
        co["numberOfEntriesSinceFirstNotAckedMessage"] =
            c.read_position > c.mark_delete ? c.read_position - c.mark_delete + 1 : 1;
        co["totalNonContiguousDeletedMessagesRange"] = c.acked_ranges.size();
        json::object props;
        for (const auto& [k, v] : c.properties) {
            props[k] = v;
        }
        co["properties"] = std::move(props);
        // Nereus: the cursor's fence, lifecycle and the reference to its persisted state.
        co["cursorGeneration"] = c.fence.generation;
        co["ackStateEpoch"] = c.fence.epoch;
        co["lifecycle"] = c.state;
        co["durable"] = s->durable();
        co["partlyAckedBatches"] = c.partly_acked_batches;
        co["backlog"] = s->backlog();
        json::object snap;
        snap["spilled"] = c.spilled;
        snap["rootVersion"] = c.root_version;
        co["snapshot"] = std::move(snap);
        cursors[s->name()] = std::move(co);
    }
    o["cursors"] = std::move(cursors);
    return o;
}

// One label set for a topic's series.
std::string labels(const admin_context& ctx, const broker::topic& t) {
    return fmt::format(R"(cluster="{}",namespace="{}",topic="{}")", ctx.cluster,
                       t.name().namespace_name(), t.full_name());
}

std::string metrics_text(admin_context& ctx) {
    std::string out;
    const auto all = ctx.backend.topic_names();
    out += "# HELP pulsar_topics_count Number of topics known to the broker.\n";
    out += "# TYPE pulsar_topics_count gauge\n";
    out += fmt::format("pulsar_topics_count{{cluster=\"{}\"}} {}\n", ctx.cluster, all.size());
    // Per-topic series cover the topics open in the broker (a topic no client or admin call
    // touched since the start has no live counters).
    const auto topics = ctx.topics.open_topics();
    struct sub_row {
        std::string labels;
        std::uint64_t backlog;
        std::size_t consumers;
        std::uint64_t out;
    };
    std::string producers, subscriptions, consumers, in_msgs, in_bytes, out_msgs;
    std::string rate_in, rate_out, throughput_in, throughput_out;
    std::vector<sub_row> subs;
    for (const auto& t : topics) {
        const auto l = labels(ctx, *t);
        std::size_t ncons = 0;
        std::uint64_t nout = 0;
        const auto ss = t->open_subscriptions();
        for (const auto& s : ss) {
            const auto c = s->consumer_count();
            const auto o = s->stats().messages_dispatched;
            ncons += c;
            nout += o;
            subs.push_back(
                {fmt::format(R"({},subscription="{}")", l, s->name()), s->backlog(), c, o});
        }
        producers += fmt::format("pulsar_producers_count{{{}}} {}\n", l, t->producer_count());
        subscriptions += fmt::format("pulsar_subscriptions_count{{{}}} {}\n", l, ss.size());
        consumers += fmt::format("pulsar_consumers_count{{{}}} {}\n", l, ncons);
        in_msgs += fmt::format("pulsar_in_messages_total{{{}}} {}\n", l, t->messages_in());
        in_bytes += fmt::format("pulsar_in_bytes_total{{{}}} {}\n", l, t->bytes_in());
        out_msgs += fmt::format("pulsar_out_messages_total{{{}}} {}\n", l, nout);
        const auto r = ctx.rates.topic(t->full_name());
        rate_in += fmt::format("pulsar_rate_in{{{}}} {}\n", l, r.msg_in);
        rate_out += fmt::format("pulsar_rate_out{{{}}} {}\n", l, r.msg_out);
        throughput_in += fmt::format("pulsar_throughput_in{{{}}} {}\n", l, r.bytes_in);
        throughput_out += fmt::format("pulsar_throughput_out{{{}}} {}\n", l, r.bytes_out);
    }
    auto family = [&out](std::string_view name, std::string_view type, std::string_view help,
                         const std::string& rows) {
        out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
        out += rows;
    };
    family("pulsar_producers_count", "gauge", "Producers attached to the topic.", producers);
    family("pulsar_subscriptions_count", "gauge", "Subscriptions open on the topic.",
           subscriptions);
    family("pulsar_consumers_count", "gauge", "Consumers attached to the topic.", consumers);
    family("pulsar_in_messages_total", "counter",
           "Messages appended durably since the topic "
           "opened.",
           in_msgs);
    family("pulsar_in_bytes_total", "counter", "Bytes appended durably since the topic opened.",
           in_bytes);
    family("pulsar_out_messages_total", "counter", "Messages dispatched to consumers.", out_msgs);
    family("pulsar_rate_in", "gauge", "Messages/s appended, over the last stats interval.",
           rate_in);
    family("pulsar_rate_out", "gauge", "Messages/s dispatched, over the last stats interval.",
           rate_out);
    family("pulsar_throughput_in", "gauge", "Bytes/s appended, over the last stats interval.",
           throughput_in);
    family("pulsar_throughput_out", "gauge", "Bytes/s dispatched, over the last stats interval.",
           throughput_out);
    std::string backlog, sub_consumers, sub_out;
    for (const auto& s : subs) {
        backlog += fmt::format("pulsar_subscription_back_log{{{}}} {}\n", s.labels, s.backlog);
        sub_consumers +=
            fmt::format("pulsar_subscription_consumers_count{{{}}} {}\n", s.labels, s.consumers);
        sub_out +=
            fmt::format("pulsar_subscription_out_messages_total{{{}}} {}\n", s.labels, s.out);
    }
    family("pulsar_subscription_back_log", "gauge", "Entries not yet acked on the subscription.",
           backlog);
    family("pulsar_subscription_consumers_count", "gauge", "Consumers of the subscription.",
           sub_consumers);
    family("pulsar_subscription_out_messages_total", "counter",
           "Messages dispatched on the subscription.", sub_out);
    // Prometheus histograms (cumulative `le` buckets, in seconds), one row per bucket.
    auto histogram = [&](std::string_view name, std::string_view help,
                         const latency_histogram::counts& h) {
        const auto labels = fmt::format("cluster=\"{}\"", ctx.cluster);
        std::string rows;
        std::uint64_t cumulative = 0;
        for (std::size_t i = 0; i < latency_histogram::kBuckets; ++i) {
            cumulative += h.buckets[i];
            const std::string le =
                i < latency_histogram::kBoundsUs.size()
                    ? fmt::format("{}", static_cast<double>(latency_histogram::kBoundsUs[i]) / 1e6)
                    : std::string("+Inf");
            rows += fmt::format("{}_bucket{{{},le=\"{}\"}} {}\n", name, labels, le, cumulative);
        }
        rows += fmt::format("{}_sum{{{}}} {}\n", name, labels, static_cast<double>(h.sum_ns) / 1e9);
        rows += fmt::format("{}_count{{{}}} {}\n", name, labels, cumulative);
        family(name, "histogram", help, rows);
    };
    histogram("nereus_broker_publish_latency_seconds",
              "Per successful SEND: from the socket read that brought it to its receipt's "
              "queueing for the write (the broker's part of the publish latency).",
              ctx.broker.publish_latency());
    // The stream log's own counters (Nereus-only; summed over the broker's logs).
    if (const auto log = ctx.backend.log_stats()) {
        const auto cl = fmt::format("{{cluster=\"{}\"}} ", ctx.cluster);
        auto counter = [&](std::string_view name, std::string_view help, std::uint64_t v) {
            family(name, "counter", help, fmt::format("{}{}{}\n", name, cl, v));
        };
        counter("nereus_log_syncs_total", "Journal blocks written, one fdatasync each.",
                log->commits);
        counter("nereus_log_appends_total", "Entries made durable by the journal.", log->appends);
        counter("nereus_log_journal_bytes_total", "Bytes written to the journal.",
                log->journal_bytes);
        counter("nereus_log_leader_commits_total",
                "Journal blocks written by an appending thread (leader commits).",
                log->leader_commits);
        counter("nereus_log_pipelined_applies_total",
                "Journal blocks whose segment copies and completions ran on the applier thread "
                "while the committer wrote the next block.",
                log->pipelined_applies);
        counter("nereus_log_paced_commits_total",
                "Journal blocks whose write waited for journalMinSyncIntervalMicros after the "
                "previous one started.",
                log->paced_commits);
        counter("nereus_log_checkpoints_total", "Checkpoints completed.", log->checkpoints);
        counter("nereus_log_segment_rolls_total", "Segment files rolled.", log->segment_rolls);
        counter("nereus_log_journal_rolls_total", "Journal files rolled.", log->journal_rolls);
        counter("nereus_log_prepared_journals_total",
                "Journal files that started as a prepared (zero-filled) spare.",
                log->prepared_journals);
        counter("nereus_log_partial_spares_total",
                "Prepared journal files switched to while still being filled.",
                log->partial_spares);
        counter("nereus_log_fill_stops_total",
                "Fills of an active journal file stopped short (the writer caught up).",
                log->fill_stops);
        counter("nereus_log_partial_spares_passed_total",
                "Rolls at a fast write rate that left a spare being filled and created an "
                "empty file.",
                log->partial_spares_passed);
        counter("nereus_log_spares_skipped_total",
                "Journal files written with no spare prepared (fast writes).", log->spares_skipped);
        counter("nereus_log_spares_asked_total",
                "Prepared spares asked of the journal's preparer thread.", log->spares_asked);
        histogram("nereus_log_commit_wait_seconds",
                  "Per journal block: from its group's first append to the start of its write.",
                  log->commit_wait);
        histogram("nereus_log_journal_write_seconds",
                  "Per journal block: the durable write (O_DSYNC write, or write and fdatasync).",
                  log->journal_write);
        histogram("nereus_log_commit_apply_seconds",
                  "Per journal block: from the end of its durable write to its last completion.",
                  log->commit_apply);
    }
    return out;
}

}  // namespace

void add_stats_routes(router& r, admin_context& ctx) {
    r.add("GET", std::string(base) + "/stats", [&ctx](const http_request&, const path_params& p) {
        auto name = topic_from(ctx, p);
        if (!name) {
            return name.error();
        }
        auto n = broker::partition_count(ctx.backend, *name);
        if (n && *n > 0) {
            return error_response(404,
                                  "Topic is partitioned: use .../partitioned-stats or a "
                                  "partition");
        }
        auto t = ctx.topics.open(*name, false);
        if (!t) {
            return error_from(t.error());
        }
        return json_response(200, topic_stats(ctx.rates, **t));
    });
    r.add("GET", std::string(base) + "/partitioned-stats",
          [&ctx](const http_request&, const path_params& p) {
              auto name = topic_from(ctx, p);
              if (!name) {
                  return name.error();
              }
              auto n = broker::partition_count(ctx.backend, *name);
              if (!n) {
                  return error_from(n.error());
              }
              if (*n == 0) {
                  return error_response(404, "Partitioned topic does not exist");
              }
              auto targets = open_targets(ctx, *name);
              if (!targets) {
                  return targets.error();
              }
              json::object o;
              json::object partitions;
              std::uint64_t in = 0, bytes = 0;
              for (auto& t : *targets) {
                  in += t->messages_in();
                  bytes += t->bytes_in();
                  partitions[t->full_name()] = topic_stats(ctx.rates, *t);
              }
              o["metadata"] = json::object{{"partitions", *n}};
              o["msgInCounter"] = in;
              o["bytesInCounter"] = bytes;
              o["partitions"] = std::move(partitions);
              return json_response(200, o);
          });
    r.add("GET", std::string(base) + "/internalStats",
          [&ctx](const http_request&, const path_params& p) {
              auto name = topic_from(ctx, p);
              if (!name) {
                  return name.error();
              }
              auto n = broker::partition_count(ctx.backend, *name);
              if (n && *n > 0) {
                  return error_response(404, "Topic is partitioned: ask a partition");
              }
              auto t = ctx.topics.open(*name, false);
              if (!t) {
                  return error_from(t.error());
              }
              return json_response(200, internal_stats(**t));
          });
    auto metrics = [&ctx](const http_request&, const path_params&) {
        return text_response(200, metrics_text(ctx), "text/plain; version=0.0.4");
    };
    r.add("GET", "/metrics", metrics);
}

}  // namespace nereus::admin
