// Request fingerprints walk PostgreSQL's own jsonb rather than printing it as text and
// re-parsing it: a recursive parse needs stack without check_stack_depth() (a backend crash
// when a caller is already deep in the stack) and a parse tree outside PostgreSQL's memory
// accounting. Walking the jsonb costs:
//  - stack: one small frame per nesting level, with check_stack_depth() at each, so a request
//    too deep for the remaining stack is a clean "stack depth limit exceeded" error;
//  - memory: jsonb iterators (palloc'd in the caller's context), one vector of member
//    references per open object and a 64 KB output buffer streamed into SHA-256; nothing
//    proportional to the request's size except the sort of an object's members;
//  - CHECK_FOR_INTERRUPTS() per container and every 4096 elements, so a huge request can be cancelled.
// The canonical form (core/canonical_json.hpp) is byte-for-byte the one 0.1 hashed, so keys
// stored by 0.1 still match after ALTER EXTENSION pg_once UPDATE (tests/pgtap/fingerprint.sql
// compares against fingerprints computed by 0.1).
#include "pg/idempotency/fingerprint.hpp"

#include "core/canonical_json.hpp"
#include "core/error.hpp"
#include "pg/common/guard.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace once::pg {
namespace {

constexpr size_t kFlushBytes = 64 * 1024;

class CanonicalHasher {
public:
    CanonicalHasher() {
        ctx_ = pg_call([] { return pg_cryptohash_create(PG_SHA256); });
        if (ctx_ == nullptr || pg_cryptohash_init(ctx_) != 0) fail();
        buffer_.reserve(kFlushBytes + 256);
    }
    ~CanonicalHasher() { pg_cryptohash_free(ctx_); }
    CanonicalHasher(const CanonicalHasher&) = delete;
    CanonicalHasher& operator=(const CanonicalHasher&) = delete;

    std::string& out() { return buffer_; }
    void maybe_flush() {
        if (buffer_.size() >= kFlushBytes) flush();
    }
    void finish(uint8* digest) {
        flush();
        if (pg_cryptohash_final(ctx_, digest, PG_SHA256_DIGEST_LENGTH) != 0) fail();
    }

private:
    void flush() {
        if (pg_cryptohash_update(ctx_, reinterpret_cast<const uint8*>(buffer_.data()), buffer_.size()) != 0)
            fail();
        buffer_.clear();
    }
    [[noreturn]] static void fail() {
        throw Error(ErrorCode::internal, "could not compute the SHA-256 request fingerprint");
    }
    pg_cryptohash_ctx* ctx_ = nullptr;
    std::string buffer_;
};

void append_container(CanonicalHasher& hasher, JsonbContainer* container);

void append_value(CanonicalHasher& hasher, const JsonbValue& value) {
    std::string& out = hasher.out();
    switch (value.type) {
        case jbvNull: out += "null"; break;
        case jbvBool: out += value.val.boolean ? "true" : "false"; break;
        case jbvString:
            append_json_string(out, std::string_view(value.val.string.val, value.val.string.len));
            break;
        case jbvNumeric: {
            char* digits = pg_call([&] {
                return DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(value.val.numeric)));
            });
            append_canonical_number(out, digits);
            pfree(digits);
            break;
        }
        case jbvBinary: append_container(hasher, value.val.binary.data); return;
        default:
            throw Error(ErrorCode::internal, "unexpected jsonb value type " + std::to_string(value.type));
    }
    hasher.maybe_flush();
}

struct Member {
    std::string_view key;
    JsonbValue value;  // a scalar, or jbvBinary pointing into the request (no copy)
};

JsonbIteratorToken next(JsonbIterator** it, JsonbValue* value) {
    // skipNested: a nested container comes back as one jbvBinary value, walked by recursion.
    return pg_call([&] { return JsonbIteratorNext(it, value, true); });
}

void append_container(CanonicalHasher& hasher, JsonbContainer* container) {
    pg_call([] {
        check_stack_depth();
        CHECK_FOR_INTERRUPTS();
    });
    JsonbIterator* it = pg_call([&] { return JsonbIteratorInit(container); });
    JsonbValue value;
    JsonbIteratorToken token = next(&it, &value);
    if (token == WJB_BEGIN_ARRAY) {
        const bool raw_scalar = value.val.array.rawScalar;
        if (!raw_scalar) hasher.out() += '[';
        bool first = true;
        uint32 count = 0;
        while ((token = next(&it, &value)) == WJB_ELEM) {
            if ((++count & 4095) == 0) pg_call([] { CHECK_FOR_INTERRUPTS(); });
            if (!first) hasher.out() += ',';
            first = false;
            append_value(hasher, value);
        }
        if (!raw_scalar) hasher.out() += ']';
    } else if (token == WJB_BEGIN_OBJECT) {
        // jsonb orders keys by length, then bytes, and keeps the last of duplicated keys;
        // the canonical form orders them by their UTF-8 bytes only.
        std::vector<Member> members;
        members.reserve(static_cast<size_t>(value.val.object.nPairs));
        uint32 count = 0;
        while ((token = next(&it, &value)) == WJB_KEY) {
            if ((++count & 4095) == 0) pg_call([] { CHECK_FOR_INTERRUPTS(); });
            Member member{std::string_view(value.val.string.val, value.val.string.len), {}};
            if (next(&it, &member.value) != WJB_VALUE)
                throw Error(ErrorCode::internal, "malformed jsonb object");
            members.push_back(member);
        }
        std::sort(members.begin(), members.end(),
                  [](const Member& a, const Member& b) { return a.key < b.key; });
        hasher.out() += '{';
        for (size_t i = 0; i < members.size(); ++i) {
            if (i > 0) hasher.out() += ',';
            append_json_string(hasher.out(), members[i].key);
            hasher.out() += ':';
            append_value(hasher, members[i].value);
        }
        hasher.out() += '}';
    } else {
        throw Error(ErrorCode::internal, "malformed jsonb container");
    }
    // The iterator freed itself when it returned the container's end token.
    hasher.maybe_flush();
}

}  // namespace

bytea* request_fingerprint(Jsonb* request) {
    bytea* result = static_cast<bytea*>(pg_call([] { return palloc(VARHDRSZ + PG_SHA256_DIGEST_LENGTH); }));
    SET_VARSIZE(result, VARHDRSZ + PG_SHA256_DIGEST_LENGTH);
    CanonicalHasher hasher;
    if (request == nullptr) hasher.out() += "null";
    else append_container(hasher, &request->root);
    hasher.finish(reinterpret_cast<uint8*>(VARDATA(result)));
    return result;
}

}  // namespace once::pg
