// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// The host emulation of the CUDA driver: its state. Devices, primary
// contexts, streams run by worker threads, events. See docs/host-emulation.md.
//
// Lock order (outer first): Event::mu, Context::submit_mu, Context::list_mu,
// Stream::mu. A worker runs items holding no lock except, for a host
// function, Context::hostfn_mu.
#ifndef EVX_HOST_STATE_HPP
#define EVX_HOST_STATE_HPP

#include <cuda.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

namespace evxh {

constexpr int kMaxDevices = 16;
constexpr int kLeastPriority = 0;      // as an H200 reports
constexpr int kGreatestPriority = -5;

struct Capture;  // capture.cpp: a stream capture in progress
struct Context;
struct Event;
struct IpcLink;  // ipc.cpp: the shared state of an INTERPROCESS event
struct Stream;

// A point in a stream's order: reached once the stream completed `seq`.
struct Dep {
    std::shared_ptr<Stream> stream;
    std::uint64_t seq;
};

// One piece of queued work.
struct Item {
    enum class Kind { Record, HostFn, Wait, WriteValue, WaitValue };
    Kind kind = Kind::Wait;
    std::uint64_t seq = 0;
    std::vector<Dep> deps;          // waited for before the item runs
    std::shared_ptr<Event> event;   // Record: the event and which record
    std::uint64_t gen = 0;
    CUhostFn fn = nullptr;          // HostFn
    void *data = nullptr;
    std::shared_ptr<IpcLink> ipc;   // Wait, Record: first this IPC event's record
    std::uint64_t ipc_gen = 0;
    std::uint64_t *addr = nullptr;  // WriteValue, WaitValue (memops.cpp)
    std::uint64_t value = 0;
    unsigned flags = 0;
    std::shared_ptr<void> keep;     // HostFn of a graph launch: its executable
};

// A new stream's cuStreamGetId: unique in the process, as the driver's.
std::uint64_t new_stream_id();

struct Stream {
    enum class Kind { Ordinary, Legacy, PerThread };

    Stream(Context *c, Kind k, unsigned f, int p)
        : ctx(c), kind(k), flags(f), priority(p), id(new_stream_id()) {}

    Context *const ctx;
    const Kind kind;
    const unsigned flags;
    const int priority;
    const std::uint64_t id;

    // Takes part in the legacy default stream's implicit synchronization.
    bool blocking() const {
        return kind != Kind::Legacy && (flags & CU_STREAM_NON_BLOCKING) == 0;
    }

    std::mutex mu;
    std::condition_variable work_cv;  // the worker waits for work
    std::condition_variable done_cv;  // waiters wait for `completed`
    std::deque<Item> queue;
    std::uint64_t submitted = 0;      // seq of the last item queued
    std::uint64_t completed = 0;      // seq of the last item done
    bool worker_running = false;
    bool destroyed = false;
    // The capture this stream takes part in, or null (capture.cpp; guarded
    // by its lock, read without it only while Global::captures is 0).
    std::shared_ptr<Capture> capture;
};

struct Event {
    Event(Context *c, unsigned f) : ctx(c), flags(f) {}
    Context *const ctx;
    const unsigned flags;

    std::mutex mu;
    std::uint64_t issued = 0;          // records made (0: never recorded)
    std::uint64_t done = 0;            // the record whose time is below
    std::int64_t time_ns = 0;          // CLOCK_MONOTONIC when it completed
    std::shared_ptr<Stream> last_stream;  // where the last record was queued
    std::uint64_t last_seq = 0;
    // INTERPROCESS events: the state shared with other processes, which
    // replaces issued/done/last_* (set before the event is registered).
    std::shared_ptr<IpcLink> ipc;
    // A record made in a capture (no node: a fork/join point of the
    // capture): the capture and the nodes that record follows (capture.cpp;
    // guarded by its lock).
    std::shared_ptr<Capture> captured_in;
    std::vector<std::size_t> captured_deps;
    std::atomic<bool> captured{false};  // captured_in is set: read without the lock
};

// A node of a graph made by stream capture; it depends on earlier nodes
// only, so a graph's node order is a topological order.
struct Node {
    enum class Kind { EventRecord, EventWait, HostFn, MemOp };
    Kind kind = Kind::HostFn;
    std::shared_ptr<Event> event;  // EventRecord, EventWait
    CUhostFn fn = nullptr;         // HostFn
    void *data = nullptr;
    Item memop;                    // MemOp: the WriteValue or WaitValue item each launch queues
    std::vector<std::size_t> deps;
};

// A user object (cuUserObjectCreate): its destructor runs, on the thread
// that drops the last reference, once nothing holds it (capture.cpp).
struct UserObject {
    void *ptr = nullptr;
    CUhostFn destroy = nullptr;
    std::atomic<long long> refs{0};
    std::uintptr_t handle = 0;
};

// References to user objects held by a graph or an executable, released
// when it is destroyed (for an executable: once its last launch ran).
struct UserRefs {
    UserRefs() = default;
    UserRefs(const UserRefs &) = delete;
    UserRefs &operator=(const UserRefs &) = delete;
    ~UserRefs();
    std::mutex mu;
    std::vector<std::pair<std::shared_ptr<UserObject>, unsigned>> refs;
};

struct Graph {
    explicit Graph(Context *c) : ctx(c) {}
    Context *const ctx;
    std::vector<Node> nodes;
    UserRefs users;
};

// An instantiated graph. Its launches run one after another, as the
// driver's do, wherever they are launched; a launch's host nodes keep the
// executable (and so its user objects) until they ran.
struct GraphExec {
    GraphExec(Context *c, std::vector<Node> n) : ctx(c), nodes(std::move(n)) {}
    Context *const ctx;
    const std::vector<Node> nodes;
    UserRefs users;
    std::mutex mu;
    std::shared_ptr<Stream> last_stream;  // the last launch's last item
    std::uint64_t last_seq = 0;
};

struct Context {
    int device = 0;
    bool primary = true;              // false: made by cuCtxCreate (context.cpp)
    std::mutex state_mu;              // refs and epoch
    int refs = 0;                     // primary context retain count
    std::atomic<std::uint64_t> epoch{0};  // bumped when the context is reset
    std::atomic<bool> active{false};  // refs > 0, or created and not destroyed
    std::atomic<bool> destroyed{false};  // cuCtxDestroy'd (created contexts only)

    std::mutex submit_mu;             // orders work queued on legacy and blocking streams
    std::mutex list_mu;
    std::vector<std::shared_ptr<Stream>> streams;  // all streams that may have work
    std::shared_ptr<Stream> legacy;
    std::mutex hostfn_mu;             // one host function of a context at a time
};

// Live objects by handle value. A handle is never reused.
template <class T>
class Registry {
public:
    explicit Registry(std::uintptr_t tag) : tag_(tag) {}
    std::uintptr_t add(std::shared_ptr<T> obj) {
        std::uintptr_t h = (next_.fetch_add(1, std::memory_order_relaxed) << 4) | tag_;
        std::unique_lock<std::shared_mutex> lk(mu_);
        map_.emplace(h, std::move(obj));
        return h;
    }
    std::shared_ptr<T> find(std::uintptr_t h) {
        std::shared_lock<std::shared_mutex> lk(mu_);
        auto it = map_.find(h);
        return it == map_.end() ? nullptr : it->second;
    }
    std::shared_ptr<T> remove(std::uintptr_t h) {
        std::unique_lock<std::shared_mutex> lk(mu_);
        auto it = map_.find(h);
        if (it == map_.end()) return nullptr;
        std::shared_ptr<T> obj = std::move(it->second);
        map_.erase(it);
        return obj;
    }
    // Removes every object of a context; returns them.
    std::vector<std::shared_ptr<T>> remove_all(const Context *ctx) {
        std::vector<std::shared_ptr<T>> out;
        std::unique_lock<std::shared_mutex> lk(mu_);
        for (auto it = map_.begin(); it != map_.end();) {
            if (it->second->ctx == ctx) {
                out.push_back(std::move(it->second));
                it = map_.erase(it);
            } else {
                ++it;
            }
        }
        return out;
    }
    std::size_t size() {
        std::shared_lock<std::shared_mutex> lk(mu_);
        return map_.size();
    }

private:
    const std::uintptr_t tag_;
    std::atomic<std::uintptr_t> next_{1};
    std::shared_mutex mu_;
    std::unordered_map<std::uintptr_t, std::shared_ptr<T>> map_;
};

struct Global {
    std::mutex init_mu;
    std::atomic<bool> initialized{false};
    int device_count = 0;
    Context contexts[kMaxDevices];    // the primary contexts
    // Contexts made by cuCtxCreate: live ones, and destroyed ones, whose
    // memory is kept (never freed) so that a stale handle or a worker that
    // still names one never reads freed memory.
    std::mutex created_mu;
    std::vector<Context *> created;
    std::vector<Context *> gone;
    Registry<Stream> streams{0x5};
    Registry<Event> events{0xe};
    Registry<Graph> graphs{0x6};
    Registry<GraphExec> graph_execs{0x7};
    Registry<UserObject> user_objects{0x8};
    std::atomic<long long> user_objects_live{0};  // created, destructor not yet run
    std::atomic<int> captures{0};  // captures begun and not ended (capture.cpp)
    std::atomic<long long> host_funcs_pending{0};  // launched, not yet run (debug.cpp)
};

// Created on first use and never destroyed, so that worker threads still
// running at process exit find it intact.
Global &global();

inline bool initialized() { return global().initialized.load(std::memory_order_acquire); }

// --- context.cpp
Context *context_from_handle(CUcontext c);  // nullptr unless a valid context
inline CUcontext to_handle(Context *c) { return reinterpret_cast<CUcontext>(c); }
Context *current_context();                 // top of the thread's stack or nullptr
// The current context if there is one and it is active, else nullptr and
// *r = CUDA_ERROR_INVALID_CONTEXT.
Context *require_context(CUresult *r);
bool valid_device(CUdevice d);
// The calling thread's per-thread default stream of a context (made on
// first use; released when the thread exits or the context is reset).
std::shared_ptr<Stream> per_thread_stream(Context *ctx);
CUresult context_synchronize(Context *ctx);
// Every active context: the primary contexts retained, and those made by
// cuCtxCreate and not destroyed (memops.cpp: a free of portable memory).
std::vector<Context *> live_contexts();
// Live contexts made by cuCtxCreate (debug.cpp counts them).
long long created_context_count();

// --- stream.cpp
// What a CUstream names. `ptsz`: NULL means the per-thread stream.
CUresult resolve_stream(CUstream h, bool ptsz, std::shared_ptr<Stream> *out);
inline CUstream to_handle(std::uintptr_t h) { return reinterpret_cast<CUstream>(h); }
// Queues an item (seq and implicit legacy dependencies are filled in).
CUresult submit(const std::shared_ptr<Stream> &s, Item item, std::uint64_t *seq);
void wait_reached(const Dep &d);
bool reached(const Dep &d);
// Marks a stream destroyed; its worker drains the queue and exits.
void release_stream(const std::shared_ptr<Stream> &s);
// Points a context's pending work has to reach: every stream (all=true) or
// the legacy stream and the blocking ones (all=false).
std::vector<Dep> pending_points(Context *ctx, bool all);
std::shared_ptr<Stream> new_stream(Context *ctx, Stream::Kind kind, unsigned flags, int priority);

// The work a graph launch queues (seq: the item's, or 0 when nothing was
// queued, as for a wait for an event that is done).
CUresult wait_queued(const std::shared_ptr<Stream> &s, const std::shared_ptr<Event> &ev, std::uint64_t *seq);
// keep: held by the queued item until the function ran (a graph launch's
// executable), or null.
CUresult host_func_queued(const std::shared_ptr<Stream> &s, CUhostFn fn, void *data, std::uint64_t *seq,
                          std::shared_ptr<void> keep = nullptr);

// --- event.cpp
std::shared_ptr<Event> find_event(CUevent e);
void complete_record(Event &ev, std::uint64_t gen);
CUresult record_queued(const std::shared_ptr<Event> &ev, const std::shared_ptr<Stream> &s, std::uint64_t *seq);

// --- capture.cpp. Each returns CUDA_SUCCESS at once while nothing is
// captured. The ones with `taken` set it when the capture took the work
// (then the status is the call's).
CUresult capture_record(const std::shared_ptr<Stream> &s, const std::shared_ptr<Event> &ev, bool external,
                        bool *taken);
CUresult capture_wait(const std::shared_ptr<Stream> &s, const std::shared_ptr<Event> &ev, bool external,
                      bool *taken);
CUresult capture_host_func(const std::shared_ptr<Stream> &s, CUhostFn fn, void *data, bool *taken);
// Query or synchronize of a stream / of an event (and the rules of the
// calling thread's capture mode); a call that could synchronize (context).
CUresult capture_sync_check(const std::shared_ptr<Stream> &s);
CUresult capture_event_check(const std::shared_ptr<Event> &ev);
CUresult capture_elapsed_check(const std::shared_ptr<Event> &a, const std::shared_ptr<Event> &b);
void capture_forget_event(const std::shared_ptr<Event> &ev);  // recorded by a graph launch
CUresult capture_unsafe_call();
// An allocation of pinned memory (cuMemHostAlloc) while a capture goes on.
CUresult capture_alloc_call();
CUresult capture_context_sync(Context *ctx);
// Work queued on the legacy default stream while a blocking stream captures.
CUresult capture_legacy_check(const Stream &s);
void capture_stream_gone(const std::shared_ptr<Stream> &s);
// A stream memory operation (memops.cpp) on a capturing stream becomes a
// node of its graph (*taken), queued by each launch, in every capture mode
// (as an H100 captures it).
CUresult capture_memop(const std::shared_ptr<Stream> &s, const Item &it, bool *taken);
// A captured memory operation's address, checked when a graph launch
// queues it: CUDA_ERROR_INVALID_VALUE unless it is an aligned word of
// pinned memory (a capture takes any address).
CUresult memop_word_check(const Item &it);
// A stream getter's capture check. On the legacy stream while a blocking
// stream of its context captures: CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, and
// that capture is invalidated. On a stream taking part in a capture, the
// refused getters (cuStreamGetDevice, cuStreamGetFlags, cuStreamGetId):
// CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, and the capture is invalidated, in
// every capture mode; the others (priority, context) are allowed while the
// capture is valid and CUDA_ERROR_STREAM_CAPTURE_INVALIDATED once it is not
// (as an H100 answers).
CUresult capture_stream_check(const std::shared_ptr<Stream> &s, bool refused);

std::int64_t now_ns();

// --- memops.cpp (host memory and stream memory operations)
void run_write_value(const Item &it);  // a worker reached a WriteValue item
void run_wait_value(const Item &it);   // blocks until its condition holds
long long pinned_ranges();             // allocated plus registered (debug.cpp)

// --- ipc.cpp (INTERPROCESS events; see its header comment)
CUresult ipc_attach(Event &ev);                   // at cuEventCreate
std::uint64_t ipc_issue(IpcLink &l);              // a new record's number
void ipc_complete(IpcLink &l, std::uint64_t gen); // a record reached
std::uint64_t ipc_pending(IpcLink &l);            // the latest record if not done, else 0
void ipc_wait(IpcLink &l, std::uint64_t gen);     // blocks until record gen is reached

}  // namespace evxh

#endif
