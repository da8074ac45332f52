// The per-(key, owner) grouping of a transaction's keyed messages for its pre-commit step
// (pg/outbox/outbox_key_order.cpp): a key orders the messages one role sent with it, so the step
// handles each (key, key_owner) pair as one group, the messages of a group in send order.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <tuple>
#include <vector>

namespace once {

// The order a keyed message joins: its key and its key_owner (the sending role's oid), led by
// the key's hash, so groups come sorted by the hash their lock bucket is taken from.
struct KeyOrderId {
    uint32_t hash;
    std::string_view key;
    uint32_t owner;

    friend bool operator<(const KeyOrderId& a, const KeyOrderId& b) {
        return std::tie(a.hash, a.key, a.owner) < std::tie(b.hash, b.key, b.owner);
    }
    friend bool operator==(const KeyOrderId& a, const KeyOrderId& b) {
        return a.hash == b.hash && a.key == b.key && a.owner == b.owner;
    }
};

// The items [begin, end) of one key and owner.
struct KeyGroup {
    size_t begin;
    size_t end;
    friend bool operator==(const KeyGroup& a, const KeyGroup& b) { return a.begin == b.begin && a.end == b.end; }
};

// Sorts `items` by their KeyOrderId (`id_of(item)`), keeping send order within a key and owner
// (a stable sort: the items come in send order), and returns the groups in that order. Sorting
// again after appending items keeps the earlier items of a group before the appended ones.
template <class T, class IdOf>
std::vector<KeyGroup> group_by_key(std::vector<T>& items, IdOf id_of) {
    std::stable_sort(items.begin(), items.end(), [&](const T& a, const T& b) { return id_of(a) < id_of(b); });
    std::vector<KeyGroup> groups;
    for (size_t begin = 0; begin < items.size();) {
        size_t end = begin + 1;
        while (end < items.size() && id_of(items[end]) == id_of(items[begin])) ++end;
        groups.push_back(KeyGroup{begin, end});
        begin = end;
    }
    return groups;
}

// Whether one of `items` belongs to the order of `key` and `owner` (any hash: the key fixes it).
template <class T, class IdOf>
bool has_key(const std::vector<T>& items, IdOf id_of, std::string_view key, uint32_t owner) {
    return std::any_of(items.begin(), items.end(), [&](const T& item) {
        const KeyOrderId id = id_of(item);
        return id.key == key && id.owner == owner;
    });
}

// The lock buckets of a transaction in the order every transaction takes them (ascending, each
// once), so that committers of the same keys cannot deadlock.
inline std::vector<uint32_t> lock_order(std::vector<uint32_t> buckets) {
    std::sort(buckets.begin(), buckets.end());
    buckets.erase(std::unique(buckets.begin(), buckets.end()), buckets.end());
    return buckets;
}

}  // namespace once
