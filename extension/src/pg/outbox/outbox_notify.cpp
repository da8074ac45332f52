#include "pg/outbox/outbox_notify.hpp"

#include "pg/common/guard.hpp"
#include "pg/common/settings.hpp"
#include "pg/common/shared_struct.hpp"

extern "C" {
#include "commands/async.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
}

#include <csignal>

namespace once::pg {
namespace {

constexpr int kSlots = 64;                       // databases with a notifier at the same time
constexpr int64 kIdleExitUs = 2 * 1000 * 1000;   // a notifier exits after 2 s without work
constexpr int64 kStartTimeoutUs = 10 * 1000 * 1000;

struct Slot {
    Oid dboid;
    int inflight;               // transactions of this database that sent and have not ended
    pg_atomic_uint32 pending;   // a transaction that sent has committed since the last NOTIFY
    pg_atomic_uint64 notifies;  // NOTIFYs sent (for tests and docs)
    pid_t worker_pid;           // 0: no notifier running
    Latch* latch;
    bool starting;
    TimestampTz starting_since;
};

struct Shared {
    slock_t mutex;
    Slot slots[kSlots];
};

Shared* shared = nullptr;
bool preloaded = false;

// Backend-local state of the current transaction.
bool sent_in_xact = false;
Slot* counted_slot = nullptr;  // slot whose inflight this transaction incremented

void init_shared(void* memory) {
    auto* s = static_cast<Shared*>(memory);
    SpinLockInit(&s->mutex);
    for (Slot& slot : s->slots) {
        slot.dboid = InvalidOid;
        slot.inflight = 0;
        pg_atomic_init_u32(&slot.pending, 0);
        pg_atomic_init_u64(&slot.notifies, 0);
        slot.worker_pid = 0;
        slot.latch = nullptr;
        slot.starting = false;
        slot.starting_since = 0;
    }
}

// Caller holds the mutex.
Slot* find_slot(Oid dboid, bool allocate, TimestampTz now) {
    Slot* free_slot = nullptr;
    for (Slot& s : shared->slots) {
        if (s.dboid == dboid) return &s;
        // A slot whose worker never started (the postmaster could not fork it) is free
        // again once the start timed out.
        const bool stale_start = s.starting && now - s.starting_since > kStartTimeoutUs;
        if (!free_slot && (s.dboid == InvalidOid ||
                           (s.worker_pid == 0 && s.inflight == 0 && (!s.starting || stale_start))))
            free_slot = &s;
    }
    if (!allocate || !free_slot) return nullptr;
    free_slot->dboid = dboid;
    free_slot->inflight = 0;
    pg_atomic_write_u32(&free_slot->pending, 0);
    free_slot->worker_pid = 0;
    free_slot->latch = nullptr;
    free_slot->starting = false;
    return free_slot;
}

bool start_worker() {
    BackgroundWorker worker{};
    worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
    worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
    worker.bgw_restart_time = BGW_NEVER_RESTART;
    snprintf(worker.bgw_library_name, BGW_MAXLEN, "pg_once");
    snprintf(worker.bgw_function_name, BGW_MAXLEN, "once_outbox_notifier_main");
    snprintf(worker.bgw_name, BGW_MAXLEN, "pg_once outbox notifier for database %u", MyDatabaseId);
    snprintf(worker.bgw_type, BGW_MAXLEN, "pg_once outbox notifier");
    worker.bgw_main_arg = ObjectIdGetDatum(MyDatabaseId);
    worker.bgw_notify_pid = 0;
    return RegisterDynamicBackgroundWorker(&worker, nullptr);
}

void notify_now() {
    pg_call([] { Async_Notify(kOutboxChannel, nullptr); });
}

void end_of_transaction(bool committed) {
    if (counted_slot != nullptr) {
        Latch* latch = nullptr;
        SpinLockAcquire(&shared->mutex);
        counted_slot->inflight--;
        // Only the commit that makes work pending wakes the notifier: while it is pending the
        // notifier is already due to NOTIFY (at once, or at the end of its window), and a
        // SetLatch per commit cost every producer a kill() and the notifier a wake-up.
        if (committed && pg_atomic_exchange_u32(&counted_slot->pending, 1) == 0) latch = counted_slot->latch;
        SpinLockRelease(&shared->mutex);
        if (latch) SetLatch(latch);
    }
    counted_slot = nullptr;
    sent_in_xact = false;
}

void xact_callback(XactEvent event, void*) {
    switch (event) {
        case XACT_EVENT_COMMIT:
            end_of_transaction(true);
            break;
        case XACT_EVENT_ABORT:
        case XACT_EVENT_PREPARE:  // COMMIT PREPARED is not seen here: relays poll for those
            end_of_transaction(false);
            break;
        default:
            break;
    }
}

// Without the notifier, the NOTIFY queued by a subtransaction that aborts is dropped with it:
// let the next send of the transaction queue one again.
void subxact_callback(SubXactEvent event, SubTransactionId, SubTransactionId, void*) {
    if (event == SUBXACT_EVENT_ABORT_SUB && counted_slot == nullptr) sent_in_xact = false;
}

// Registered before the worker connects, so it also runs when connecting fails: a database
// dropped right after a send (DROP DATABASE ... WITH (FORCE)) makes the worker exit with FATAL
// "database does not exist". Without it the slot would stay "starting" forever, and after
// 64 such drops every database would fall back to one NOTIFY per transaction.
void worker_exit(int, Datum arg) {
    Oid dboid = DatumGetObjectId(arg);
    SpinLockAcquire(&shared->mutex);
    for (Slot& s : shared->slots) {
        if (s.dboid != dboid) continue;
        if (s.worker_pid == MyProcPid) {
            s.worker_pid = 0;
            s.latch = nullptr;
        }
        if (s.worker_pid == 0) s.starting = false;
    }
    SpinLockRelease(&shared->mutex);
}

}  // namespace

bool outbox_notifier_preloaded() { return preloaded && shared != nullptr; }

void outbox_mark_sent() {
    if (sent_in_xact) return;
    sent_in_xact = true;
    if (!outbox_notifier_preloaded()) {
        notify_now();  // fallback: one NOTIFY per transaction, sent at commit
        return;
    }
    TimestampTz now = GetCurrentTimestamp();
    bool start = false;
    SpinLockAcquire(&shared->mutex);
    Slot* slot = find_slot(MyDatabaseId, true, now);
    if (slot != nullptr) {
        slot->inflight++;
        if (slot->worker_pid == 0 && (!slot->starting || now - slot->starting_since > kStartTimeoutUs)) {
            slot->starting = true;
            slot->starting_since = now;
            start = true;
        }
    }
    SpinLockRelease(&shared->mutex);
    if (slot == nullptr) {
        notify_now();
        return;
    }
    counted_slot = slot;
    if (start && !pg_call([] { return start_worker(); })) {
        SpinLockAcquire(&shared->mutex);
        slot->starting = false;
        SpinLockRelease(&shared->mutex);
        pg_call([] {
            ereport(WARNING, (errmsg("pg_once: could not start the outbox notifier; this transaction NOTIFYs itself"),
                              errhint("Raise max_worker_processes.")));
        });
        notify_now();
    }
}

void outbox_init() {
    RegisterXactCallback(xact_callback, nullptr);
    RegisterSubXactCallback(subxact_callback, nullptr);
    if (process_shared_preload_libraries_in_progress) {
        preloaded = true;
        request_shared_struct("pg_once outbox notifier", sizeof(Shared), init_shared, reinterpret_cast<void**>(&shared));
    }
}

}  // namespace once::pg

using namespace once::pg;

extern "C" PGDLLEXPORT void once_outbox_notifier_main(Datum arg) {
    Oid dboid = DatumGetObjectId(arg);
    pqsignal(SIGTERM, die);
    pqsignal(SIGHUP, SignalHandlerForConfigReload);
    BackgroundWorkerUnblockSignals();
    before_shmem_exit(worker_exit, ObjectIdGetDatum(dboid));
    BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);

    TimestampTz started = GetCurrentTimestamp();
    SpinLockAcquire(&shared->mutex);
    Slot* slot = find_slot(dboid, false, started);
    bool mine = slot != nullptr && slot->worker_pid == 0;
    if (mine) {
        slot->worker_pid = MyProcPid;
        slot->latch = MyLatch;
        slot->starting = false;
    }
    SpinLockRelease(&shared->mutex);
    if (!mine) proc_exit(0);  // another notifier serves this database

    // Leading edge: the first commit after a quiet spell is notified at once; commits within
    // once.notify_interval of the last NOTIFY are coalesced into one NOTIFY at the end of
    // that window. The window is waited on the latch (not slept), so signals and shutdown are
    // served during it.
    TimestampTz last_work = GetCurrentTimestamp();
    TimestampTz last_notify = 0;
    for (;;) {
        ResetLatch(MyLatch);
        CHECK_FOR_INTERRUPTS();
        if (ConfigReloadPending) {
            ConfigReloadPending = false;
            ProcessConfigFile(PGC_SIGHUP);
        }
        TimestampTz now = GetCurrentTimestamp();
        long wait_ms = 500;
        if (pg_atomic_read_u32(&slot->pending) != 0) {
            TimestampTz window_end = last_notify + static_cast<int64>(notify_interval_ms) * 1000;
            if (notify_interval_ms == 0 || now >= window_end) {
                pg_atomic_write_u32(&slot->pending, 0);
                StartTransactionCommand();
                Async_Notify(kOutboxChannel, nullptr);
                CommitTransactionCommand();
                pg_atomic_fetch_add_u64(&slot->notifies, 1);
                last_notify = last_work = GetCurrentTimestamp();
                continue;
            }
            wait_ms = static_cast<long>((window_end - now + 999) / 1000);
        } else if (now - last_work >= kIdleExitUs) {
            SpinLockAcquire(&shared->mutex);
            bool idle = slot->inflight == 0 && pg_atomic_read_u32(&slot->pending) == 0;
            if (idle) {
                slot->worker_pid = 0;
                slot->latch = nullptr;
            }
            SpinLockRelease(&shared->mutex);
            if (idle) proc_exit(0);
            last_work = now;
        }
        (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, wait_ms, PG_WAIT_EXTENSION);
    }
}

ONCE_SQL_FUNCTION(once_outbox_notifier_preloaded) {
    PG_RETURN_BOOL(outbox_notifier_preloaded());
}

// once.outbox_notifier_status(): whether the notifier is available, the pid of this
// database's notifier (NULL when none runs) and how many NOTIFYs it has sent.
ONCE_SQL_FUNCTION(once_outbox_notifier_status) {
    Datum values[3] = {BoolGetDatum(outbox_notifier_preloaded()), 0, Int64GetDatum(0)};
    bool nulls[3] = {false, true, false};
    if (outbox_notifier_preloaded()) {
        SpinLockAcquire(&shared->mutex);
        for (Slot& s : shared->slots) {
            if (s.dboid != MyDatabaseId) continue;
            if (s.worker_pid != 0) {
                values[1] = Int32GetDatum(s.worker_pid);
                nulls[1] = false;
            }
            values[2] = Int64GetDatum(static_cast<int64>(pg_atomic_read_u64(&s.notifies)));
        }
        SpinLockRelease(&shared->mutex);
    }
    return pg_call([&] {
        TupleDesc desc;
        if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
            elog(ERROR, "pg_once: function must be declared with OUT parameters");
        return HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls));
    });
}
