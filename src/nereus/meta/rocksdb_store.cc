#include "nereus/meta/rocksdb_store.h"

#include "nereus/meta/errc.h"
#include "nereus/meta/logger.h"
#include "nereus/meta/record_format.h"

#include <rocksdb/db.h>
#include <rocksdb/iterator.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>
#include <utility>

namespace nereus::meta {
namespace {

namespace fmtk = format;

std::error_code from_status(const rocksdb::Status& s) {
    return s.IsCorruption() ? make_error_code(errc::corrupt_record)
                            : make_error_code(errc::io_error);
}

rocksdb::WriteOptions synced() {
    rocksdb::WriteOptions wo;
    wo.sync = true;
    return wo;
}

class rocksdb_backend final : public detail::backend {
public:
    static result<std::unique_ptr<rocksdb_backend>> open(const std::string& dir,
                                                         const rocksdb_store_options& options) {
        rocksdb::Options o;
        o.create_if_missing = options.create_if_missing;
        o.paranoid_checks = true;
        // Every write is synced, so after a crash only the WAL's last record can be torn.
        // Tolerate exactly that; damage before the tail fails the open instead of silently
        // dropping confirmed groups (which kPointInTimeRecovery would do).
        o.wal_recovery_mode = rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords;
        // A missing or truncated WAL file is an open error, not lost writes.
        o.track_and_verify_wals_in_manifest = true;
        // Metadata is small and read back by point lookups; keep RocksDB's footprint modest.
        o.write_buffer_size = 8 << 20;
        o.max_background_jobs = 2;
        o.keep_log_file_num = 4;
        rocksdb::DB* raw_db = nullptr;
        const rocksdb::Status s = rocksdb::DB::Open(o, dir, &raw_db);
        if (!s.ok()) {
            NEREUS_LOG(meta_log(), err, "meta open failed dir={}: {}", dir, s.ToString());
            return nereus::error(from_status(s));
        }
        auto be = std::unique_ptr<rocksdb_backend>(new rocksdb_backend(raw_db, dir));
        NEREUS_TRY(be->recover());
        return be;
    }

    rocksdb_backend(const rocksdb_backend&) = delete;
    rocksdb_backend& operator=(const rocksdb_backend&) = delete;
    rocksdb_backend(rocksdb_backend&&) = delete;
    rocksdb_backend& operator=(rocksdb_backend&&) = delete;
    ~rocksdb_backend() override {
        const rocksdb::Status s = db_->Close();
        if (!s.ok()) {
            NEREUS_LOG(meta_log(), warn, "meta close dir={}: {}", dir_, s.ToString());
        }
    }

    result<std::optional<record>> read(const std::string& key) override {
        const std::string dk = fmtk::data_key(key);
        std::string raw_value;
        const rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), dk, &raw_value);
        if (s.IsNotFound()) {
            return std::optional<record>();
        }
        if (!s.ok()) {
            NEREUS_LOG(meta_log(), err, "meta read failed key={}: {}", fmtk::printable(key),
                       s.ToString());
            return nereus::error(from_status(s));
        }
        return decode(dk, key, raw_value);
    }

    result<std::vector<keyed_record>> scan(const std::string& prefix) override {
        const std::string dp = fmtk::data_key(prefix);
        std::vector<keyed_record> out;
        std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
        for (it->Seek(dp); it->Valid() && it->key().starts_with(dp); it->Next()) {
            const std::string_view raw_key = it->key().ToStringView();
            std::string user_key(raw_key.substr(fmtk::data_prefix.size()));
            auto r = decode(raw_key, user_key, it->value().ToStringView());
            if (!r) {
                return nereus::error(r.error());
            }
            out.push_back(keyed_record{.key = std::move(user_key), .rec = std::move(**r)});
        }
        if (!it->status().ok()) {
            NEREUS_LOG(meta_log(), err, "meta scan failed prefix={}: {}", fmtk::printable(prefix),
                       it->status().ToString());
            return nereus::error(from_status(it->status()));
        }
        return out;
    }

    result<std::vector<std::string>> ephemeral_keys(session_id owner) override {
        const std::string ip = fmtk::index_prefix_of(owner);
        std::vector<std::string> out;
        std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
        for (it->Seek(ip); it->Valid() && it->key().starts_with(ip); it->Next()) {
            out.emplace_back(it->key().ToStringView().substr(ip.size()));
        }
        if (!it->status().ok()) {
            return nereus::error(from_status(it->status()));
        }
        return out;
    }

    detail::commit_status commit(const detail::commit_batch& batch) override {
        rocksdb::WriteBatch wb;
        for (const detail::change& c : batch.changes) {
            const std::string dk = fmtk::data_key(c.key);
            if (c.old_owner != no_session && (!c.after || c.after->owner != c.old_owner)) {
                wb.Delete(fmtk::index_key(c.old_owner, c.key));
            }
            if (c.after) {
                wb.Put(dk, fmtk::encode_record(dk, *c.after));
                if (c.after->owner != no_session && c.after->owner != c.old_owner) {
                    const std::string ik = fmtk::index_key(c.after->owner, c.key);
                    wb.Put(ik, fmtk::encode_record(
                                   ik, record{.ver = c.after->ver, .owner = c.after->owner}));
                }
            } else {
                wb.Delete(dk);
            }
        }
        if (batch.revision != revision_) {
            wb.Put(fmtk::revision_key, fmtk::encode_u64(fmtk::revision_key, batch.revision));
        }
        if (batch.next_session != next_session_) {
            wb.Put(fmtk::next_session_key,
                   fmtk::encode_u64(fmtk::next_session_key, batch.next_session));
        }
        const rocksdb::Status s = db_->Write(synced(), &wb);
        if (!s.ok()) {
            NEREUS_LOG(meta_log(), err, "meta synced write failed dir={} changes={}: {}", dir_,
                       batch.changes.size(), s.ToString());
            // A failed fsync leaves the batch's fate unknown until the next open.
            return detail::commit_status{.applied = false,
                                         .ec = make_error_code(errc::unknown_outcome)};
        }
        revision_ = batch.revision;
        next_session_ = batch.next_session;
        return detail::commit_status{.applied = true};
    }

    version recovered_revision() const override { return revision_; }
    std::uint64_t recovered_next_session() const override { return next_session_; }
    bool commit_failure_is_fatal() const override { return true; }

private:
    rocksdb_backend(rocksdb::DB* db, std::string dir) : db_(db), dir_(std::move(dir)) {}

    result<std::optional<record>> decode(std::string_view raw_key,
                                         const std::string& user_key,
                                         std::string_view raw_value) {
        std::string why;
        auto r = fmtk::decode_record(raw_key, raw_value, &why);
        if (!r) {
            NEREUS_LOG(meta_log(), err, "meta corrupt record key={} dir={}: {}",
                       fmtk::printable(user_key), dir_, why);
            return nereus::error(r.error());
        }
        return std::optional<record>(std::move(*r));
    }

    // Reads a u64 metadata value; nullopt when absent.
    result<std::optional<std::uint64_t>> read_u64(std::string_view key) {
        std::string raw_value;
        const rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), key, &raw_value);
        if (s.IsNotFound()) {
            return std::optional<std::uint64_t>();
        }
        if (!s.ok()) {
            NEREUS_LOG(meta_log(), err, "meta open: reading {} failed dir={}: {}", key, dir_,
                       s.ToString());
            return nereus::error(from_status(s));
        }
        std::string why;
        auto v = fmtk::decode_u64(key, raw_value, &why);
        if (!v) {
            NEREUS_LOG(meta_log(), err, "meta open: corrupt record key={} dir={}: {}", key, dir_,
                       why);
            return nereus::error(v.error());
        }
        return std::optional<std::uint64_t>(*v);
    }

    // Recovery (doc/format/meta.md, "Recovery"): format check, counters, ephemeral purge.
    result<void> recover() {
        auto fv = read_u64(fmtk::format_key);
        if (!fv) {
            return nereus::error(fv.error());
        }
        if (!*fv) {
            std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
            it->SeekToFirst();
            if (it->Valid()) {
                NEREUS_LOG(meta_log(), err,
                           "meta open: dir={} has keys but no {} marker; not a meta store", dir_,
                           fmtk::format_key);
                return nereus::error(errc::incompatible_format);
            }
            rocksdb::WriteBatch wb;
            wb.Put(fmtk::format_key, fmtk::encode_u64(fmtk::format_key, fmtk::store_format_v1));
            wb.Put(fmtk::revision_key, fmtk::encode_u64(fmtk::revision_key, 0));
            wb.Put(fmtk::next_session_key, fmtk::encode_u64(fmtk::next_session_key, 1));
            if (const auto s = db_->Write(synced(), &wb); !s.ok()) {
                NEREUS_LOG(meta_log(), err, "meta create failed dir={}: {}", dir_, s.ToString());
                return nereus::error(from_status(s));
            }
            NEREUS_LOG(meta_log(), info, "meta store created dir={}", dir_);
            return {};
        }
        if (**fv != fmtk::store_format_v1) {
            NEREUS_LOG(meta_log(), err,
                       "meta open: dir={} has store format {}, this build reads {}", dir_, **fv,
                       fmtk::store_format_v1);
            return nereus::error(errc::incompatible_format);
        }
        auto rev = read_u64(fmtk::revision_key);
        auto ns = read_u64(fmtk::next_session_key);
        if (!rev || !ns) {
            return nereus::error(!rev ? rev.error() : ns.error());
        }
        if (!*rev || !*ns) {
            NEREUS_LOG(meta_log(), err, "meta open: dir={} lacks {} or {}", dir_,
                       fmtk::revision_key, fmtk::next_session_key);
            return nereus::error(errc::corrupt_record);
        }
        revision_ = **rev;
        next_session_ = **ns;
        return purge_ephemerals();
    }

    // Deletes every ephemeral key of an earlier process: its sessions died with it.
    result<void> purge_ephemerals() {
        rocksdb::WriteBatch wb;
        std::size_t purged = 0;
        version rev = revision_;
        std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
        for (it->Seek(fmtk::index_prefix); it->Valid() && it->key().starts_with(fmtk::index_prefix);
             it->Next()) {
            const std::string ik(it->key().ToStringView());
            wb.Delete(ik);
            fmtk::index_entry e;
            if (!fmtk::parse_index_key(ik, e)) {
                NEREUS_LOG(meta_log(), warn, "meta open: dropping malformed index key {} dir={}",
                           fmtk::printable(ik), dir_);
                continue;
            }
            const std::string dk = fmtk::data_key(e.user_key);
            std::string raw_value;
            const rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), dk, &raw_value);
            if (s.IsNotFound()) {
                continue;
            }
            if (!s.ok()) {
                return nereus::error(from_status(s));
            }
            std::string why;
            auto r = fmtk::decode_record(dk, raw_value, &why);
            if (r && r->owner != e.owner) {
                // The index and the record disagree (cannot happen: both change in one batch).
                // Keep the record; drop the stale index entry.
                NEREUS_LOG(meta_log(), err,
                           "meta open: index says key={} is owned by session {}, record says {}",
                           fmtk::printable(e.user_key), raw(e.owner), raw(r->owner));
                continue;
            }
            if (!r) {
                // Its owner is dead whatever its contents: delete it anyway.
                NEREUS_LOG(meta_log(), warn, "meta open: deleting corrupt ephemeral key={}: {}",
                           fmtk::printable(e.user_key), why);
            }
            wb.Delete(dk);
            ++rev;
            ++purged;
        }
        if (!it->status().ok()) {
            return nereus::error(from_status(it->status()));
        }
        if (wb.Count() == 0) {
            return {};
        }
        wb.Put(fmtk::revision_key, fmtk::encode_u64(fmtk::revision_key, rev));
        if (const auto s = db_->Write(synced(), &wb); !s.ok()) {
            NEREUS_LOG(meta_log(), err, "meta open: purge write failed dir={}: {}", dir_,
                       s.ToString());
            return nereus::error(from_status(s));
        }
        revision_ = rev;
        NEREUS_LOG(meta_log(), info, "meta open: purged {} ephemeral keys of dead sessions dir={}",
                   purged, dir_);
        return {};
    }

    std::unique_ptr<rocksdb::DB> db_;
    std::string dir_;
    version revision_ = 0;
    std::uint64_t next_session_ = 1;
};

}  // namespace

rocksdb_store::rocksdb_store(std::unique_ptr<detail::backend> be, rocksdb_store_options options)
    : detail::local_store(std::move(be),
                          detail::local_store_options{.max_group = options.max_group}) {}

result<std::unique_ptr<rocksdb_store>> rocksdb_store::open(const std::string& dir,
                                                           rocksdb_store_options options) {
    auto be = rocksdb_backend::open(dir, options);
    if (!be) {
        return nereus::error(be.error());
    }
    NEREUS_LOG(meta_log(), info, "meta store open dir={} revision={} next_session={}", dir,
               (*be)->recovered_revision(), (*be)->recovered_next_session());
    return std::unique_ptr<rocksdb_store>(new rocksdb_store(std::move(*be), options));
}

}  // namespace nereus::meta
