#include "claim/wal_key_fences.hpp"

#include <spdlog/spdlog.h>

namespace once::relay {

void WalKeyFences::reload() {
    fences_left_ = store_.release_fences(std::nullopt);
    written_back_.clear();
    if (fences_left_ > 0)
        for (auto& k : store_.fenced_keys()) written_back_.insert(std::move(k));
}

void WalKeyFences::release_up_to(wal::Lsn confirmed) {
    if (fences_left_ == 0 || confirmed <= released_to_) return;
    try {
        fences_left_ = store_.release_fences(confirmed);
        released_to_ = confirmed;
    } catch (const std::exception& e) {
        spdlog::warn("WAL stream: releasing the write-backs' fences up to {} failed (retrying): {}",
                     wal::format_lsn(confirmed), e.what());
    }
}

bool WalKeyFences::table_holds(const KeyOwner& k) {
    if (!written_back_.count(k)) return false;
    if (!store_.key_in_table(k.first, k.second)) {
        written_back_.erase(k);   // the table has none left: the key's home is the stream again
        return false;
    }
    return true;
}

}  // namespace once::relay
