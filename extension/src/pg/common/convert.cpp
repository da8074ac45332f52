#include "pg/common/convert.hpp"

#include <cstring>

namespace once::pg {

// ---- text

std::string_view text_view(const text* t) { return {VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t)}; }

Datum text_datum(std::string_view s) {
    return pg_call([&] {
        return PointerGetDatum(cstring_to_text_with_len(s.data(), static_cast<int>(s.size())));
    });
}

// ---- uuid

Datum uuid_datum(const Uuid& id, MemoryContext context) {
    auto* u = static_cast<pg_uuid_t*>(pg_call([&] { return MemoryContextAlloc(context, sizeof(pg_uuid_t)); }));
    std::memcpy(u->data, id.data(), UUID_LEN);
    return UUIDPGetDatum(u);
}

Uuid to_uuid(Datum d) {
    Uuid id;
    std::memcpy(id.data(), DatumGetUUIDP(d)->data, UUID_LEN);
    return id;
}

std::string uuid_text(Datum d) { return uuid_to_string(to_uuid(d)); }

// ---- arrays

namespace {

ArrayType* datum_array(const std::vector<Datum>& values, const std::vector<bool>* present, Oid type, int len,
                       bool byval, char align) {
    return pg_call([&] {
        int n = static_cast<int>(values.size());
        bool* nulls = nullptr;
        if (present) {
            nulls = static_cast<bool*>(palloc(sizeof(bool) * std::max(n, 1)));
            for (int i = 0; i < n; ++i) nulls[i] = !(*present)[i];
        }
        int dims[1] = {n}, lbs[1] = {1};
        return construct_md_array(const_cast<Datum*>(values.data()), nulls, 1, dims, lbs, type, len, byval, align);
    });
}

}  // namespace

ArrayType* text_array(const std::vector<std::string>& items) {
    std::vector<Datum> values;
    values.reserve(items.size());
    for (const std::string& s : items) values.push_back(text_datum(s));
    return datum_array(values, nullptr, TEXTOID, -1, false, TYPALIGN_INT);
}

ArrayType* oid_array(const std::vector<Oid>& items) {
    std::vector<Datum> values;
    values.reserve(items.size());
    for (Oid o : items) values.push_back(ObjectIdGetDatum(o));
    return datum_array(values, nullptr, OIDOID, sizeof(Oid), true, TYPALIGN_INT);
}

ArrayType* bool_array(const std::vector<bool>& items) {
    std::vector<Datum> values;
    values.reserve(items.size());
    for (bool b : items) values.push_back(BoolGetDatum(b));
    return datum_array(values, nullptr, BOOLOID, 1, true, TYPALIGN_CHAR);
}

ArrayType* uuid_array(const std::vector<std::optional<Uuid>>& ids) {
    std::vector<Datum> values;
    std::vector<bool> present;
    values.reserve(ids.size());
    present.reserve(ids.size());
    for (const auto& id : ids) {
        values.push_back(id ? uuid_datum(*id) : Datum(0));
        present.push_back(id.has_value());
    }
    return datum_array(values, &present, UUIDOID, UUID_LEN, false, TYPALIGN_CHAR);
}

ArrayType* uuid_array(const std::vector<Datum>& ids) {
    return datum_array(ids, nullptr, UUIDOID, UUID_LEN, false, TYPALIGN_CHAR);
}

// ---- jsonb

std::string jsonb_text(Datum jsonb) {
    char* s = pg_call([&] {
        Jsonb* jb = DatumGetJsonbP(jsonb);
        return JsonbToCString(nullptr, &jb->root, VARSIZE(jb));
    });
    std::string out(s);
    pg_call([&] { pfree(s); });
    return out;
}

Datum jsonb_datum(std::string_view json_text) {
    std::string terminated(json_text);  // jsonb_in takes a C string
    return pg_call([&] { return DirectFunctionCall1(jsonb_in, CStringGetDatum(terminated.c_str())); });
}

Datum jsonb_datum(const Json& value) { return jsonb_datum(value.dump()); }

// ---- time

namespace {
constexpr int64_t kUnixEpochUs = int64_t(POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY;
}

int64_t unix_ms(TimestampTz ts) {
    int64_t us = ts + kUnixEpochUs;
    return us >= 0 ? us / 1000 : -((-us + 999) / 1000);
}

TimestampTz timestamp_from_unix_ms(int64_t ms) { return ms * 1000 - kUnixEpochUs; }

std::optional<int64_t> applied_interval_ms(const Interval* interval) {
    const TimestampTz from = GetCurrentTransactionStartTimestamp();
    TimestampTz to;
    try {
        to = pg_call([&] {
            return DatumGetTimestampTz(DirectFunctionCall2(timestamptz_pl_interval, TimestampTzGetDatum(from),
                                                           IntervalPGetDatum(interval)));
        });
    } catch (const PgError&) {
        return std::nullopt;  // "timestamp out of range": the interval cannot be applied
    }
    int64_t us;
    if (TIMESTAMP_NOT_FINITE(to) || __builtin_sub_overflow(to, from, &us)) return std::nullopt;
    return us >= 0 ? us / 1000 : -((-us + 999) / 1000);
}

}  // namespace once::pg
