// At most N callers inside at once; the others are turned away at once rather than queued.
// The console bounds its password hashing with it, so logins never occupy every request
// thread and pages keep being served while logins are refused.
#pragma once

#include <mutex>

namespace once::console {

class ConcurrencyLimit {
public:
    explicit ConcurrencyLimit(unsigned slots) : free_(slots) {}
    ConcurrencyLimit(const ConcurrencyLimit&) = delete;
    ConcurrencyLimit& operator=(const ConcurrencyLimit&) = delete;

    // A slot for as long as it lives, or none (check with the bool) when all are taken.
    class Slot {
    public:
        explicit Slot(ConcurrencyLimit* owner) : owner_(owner) {}
        Slot(Slot&& o) noexcept : owner_(o.owner_) { o.owner_ = nullptr; }
        Slot& operator=(Slot&&) = delete;
        ~Slot() {
            if (owner_) owner_->leave();
        }
        explicit operator bool() const { return owner_ != nullptr; }

    private:
        ConcurrencyLimit* owner_;
    };

    Slot try_enter() {
        std::lock_guard<std::mutex> lock(mu_);
        if (free_ == 0) return Slot(nullptr);
        --free_;
        return Slot(this);
    }

private:
    void leave() {
        std::lock_guard<std::mutex> lock(mu_);
        ++free_;
    }
    std::mutex mu_;
    unsigned free_;
};

}  // namespace once::console
