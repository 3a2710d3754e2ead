#pragma once

// Codecs: how a handler's typed payload is decoded from (and a publisher's encoded to) bytes.
// A codec is a type with
//     using value_type = T;
//     static result<T> decode(std::string_view payload);
//     static std::string encode(const T&);
// Decode failures settle by the registration's declared on_decode_failure (spec.h).
//
//  raw_codec          - the bytes as a std::string;
//  json_codec<T>      - Boost.JSON: T = boost::json::value, or any T with value_to/value_from;
//  protobuf_codec<T>  - a protobuf (lite) message type.
// Thread-safety: stateless, thread-safe.

#include "nereus/base/result.h"

#include <google/protobuf/message_lite.h>

#include <boost/json.hpp>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>

namespace nereus::runtime {

struct raw_codec {
    using value_type = std::string;
    static result<std::string> decode(std::string_view p) { return std::string(p); }
    static std::string encode(const std::string& v) { return v; }
};

template <class T = boost::json::value>
struct json_codec {
    using value_type = T;
    static result<T> decode(std::string_view p) {
        boost::system::error_code ec;
        boost::json::value v = boost::json::parse(p, ec);
        if (ec) {
            return error(std::make_error_code(std::errc::invalid_argument));
        }
        if constexpr (std::is_same_v<T, boost::json::value>) {
            return v;
        } else {
            auto r = boost::json::try_value_to<T>(v);
            if (r.has_error()) {
                return error(std::make_error_code(std::errc::invalid_argument));
            }
            return std::move(r.value());
        }
    }
    static std::string encode(const T& v) {
        if constexpr (std::is_same_v<T, boost::json::value>) {
            return boost::json::serialize(v);
        } else {
            return boost::json::serialize(boost::json::value_from(v));
        }
    }
};

template <class T>
requires std::is_base_of_v<google::protobuf::MessageLite, T>
struct protobuf_codec {
    using value_type = T;
    static result<T> decode(std::string_view p) {
        T m;
        if (!m.ParseFromArray(p.data(), static_cast<int>(p.size()))) {
            return error(std::make_error_code(std::errc::invalid_argument));
        }
        return m;
    }
    static std::string encode(const T& v) { return v.SerializeAsString(); }
};

}  // namespace nereus::runtime
