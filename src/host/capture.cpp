// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// Stream capture: while a stream is captured, the work queued on it is not
// run but becomes nodes of a graph (event record and wait nodes for the
// EXTERNAL flags, host nodes for host functions); a plain record in a
// capture is a fork/join point, and a stream that waits for it joins the
// capture. The rules follow the driver's documentation of
// cuStreamBeginCapture, cuStreamEndCapture, cuStreamIsCapturing and
// cuThreadExchangeStreamCaptureMode, and the statuses it gives on a GPU
// (tests/conformance/capture.c runs on both):
// - in global mode (the default), while another thread holds a capture
//   begun in global mode, or this thread one begun in a mode other than
//   relaxed, the calls that could synchronize (stream and event query and
//   synchronize, context synchronize) are refused with
//   STREAM_CAPTURE_UNSUPPORTED and invalidate those captures; a thread
//   whose mode is a value the enum does not name follows the thread-local
//   rules (as an H100 answers);
// - querying or synchronizing the capturing stream itself is refused the
//   same way in every mode, and so is a context synchronize while a stream
//   of the context is captured;
// - cuStreamGetDevice, cuStreamGetFlags and cuStreamGetId of a stream
//   taking part in a capture are refused the same way in every mode
//   (relaxed too, as an H100 answers); cuStreamGetPriority and cuStreamGetCtx
//   are allowed while the capture is valid and STREAM_CAPTURE_INVALIDATED
//   once it is not; cuStreamIsCapturing is allowed;
// - cuMemHostAlloc, unless the calling thread is in relaxed mode, is refused
//   the same way while any capture not begun in relaxed mode goes on, on
//   any thread (thread-local too, as an H100 answers), and invalidates it;
// - a stream memory operation on a capturing stream becomes a graph node
//   (in every mode, as an H100 captures it) whatever its address (checked
//   at launch); one on an invalidated capture is STREAM_CAPTURE_INVALIDATED
//   and one on the legacy stream IMPLICIT, before any look at its address;
// - an event last recorded in a capture: a query or synchronize is
//   CAPTURED_EVENT and invalidates the capture, an elapsed time is
//   CAPTURED_EVENT; once that capture is invalidated or ended, every use but
//   a new record is INVALID_VALUE (as an H100 answers);
// - a record of an INTERPROCESS event in a capture is
//   STREAM_CAPTURE_UNSUPPORTED and leaves the capture valid; a record of an
//   event of another context is INVALID_HANDLE, in a valid capture too;
// - a capturing stream may only wait for events recorded in its own
//   capture (ISOLATION otherwise; a never-recorded event is nothing to wait
//   for; an INTERPROCESS event STREAM_CAPTURE_UNSUPPORTED, which invalidates
//   the capture too), or for any event with the EXTERNAL flag; a stream not capturing
//   that waits for an event recorded in a capture joins it (a fork), but
//   an event of an invalidated capture is INVALID_VALUE, and the legacy
//   stream's wait is STREAM_CAPTURE_IMPLICIT and invalidates the capture;
// - a record or a wait on the legacy stream while a blocking stream of its
//   context captures is IMPLICIT, and on a stream whose capture is
//   invalidated INVALIDATED, before its flags or event are looked at;
// - a graph launch into a capturing stream is STREAM_CAPTURE_UNSUPPORTED
//   and invalidates the capture; an end on the wrong thread ends it
//   (WRONG_THREAD, or INVALIDATED if the capture already is);
// - work on the legacy default stream while a blocking stream of its
//   context is captured is STREAM_CAPTURE_IMPLICIT and invalidates that
//   capture; so is every stream getter of the legacy stream (priority,
//   flags, device, context, id; as an H100 answers), while
//   cuStreamIsCapturing and cuStreamGetCaptureInfo of it are IMPLICIT and
//   leave the capture valid.
// An invalidated capture refuses further work with STREAM_CAPTURE_INVALIDATED
// until cuStreamEndCapture ends it (which then gives no graph).
//
// All capture state is guarded by one lock, the innermost: no other lock is
// taken under it (a record on the legacy stream takes it under Event::mu).
// Global::captures and Event::captured let the calls skip it while nothing
// is captured.
#include <pthread.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <thread>

#include "api.hpp"
#include "state.hpp"

namespace evxh {

struct Capture {
    std::uint64_t id = 0;
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
    std::thread::id thread;          // the thread that began it
    std::shared_ptr<Stream> origin;  // where it was begun and must end
    std::shared_ptr<Graph> graph;
    CUgraph graph_handle = nullptr;  // the graph's handle, given at the end
    bool invalidated = false;
    bool ended = false;
    // The streams taking part, each with the nodes its next work follows.
    std::vector<std::pair<std::shared_ptr<Stream>, std::vector<std::size_t>>> members;
    std::vector<CUgraphNode> info;  // cuStreamGetCaptureInfo's last answer
};

namespace {

std::mutex g_mu;
std::vector<std::shared_ptr<Capture>> g_live;  // begun, not ended
std::uint64_t g_next_id = 1;

bool any_capture() { return global().captures.load(std::memory_order_acquire) != 0; }

// The calling thread's capture interaction mode. A pthread key rather than
// a thread_local: this library is dlopen'ed, and ThreadSanitizer's runtime
// crashes on its dynamic TLS (seen in the stress run under TSan).
pthread_key_t mode_key() {
    static pthread_key_t key;
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, [] { pthread_key_create(&key, nullptr); });
    return key;
}

// As an unsigned: the thread may have set a value the enum does not name.
unsigned thread_mode() {
    return static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(pthread_getspecific(mode_key())));
}

// The mode the rules apply: a value the enum does not name acts as
// thread-local (an H100 lets such a thread synchronize while another
// thread captures in global mode, and refuses it during its own capture).
unsigned rule_mode() {
    const unsigned m = thread_mode();
    return m == CU_STREAM_CAPTURE_MODE_GLOBAL || m == CU_STREAM_CAPTURE_MODE_RELAXED
               ? m
               : static_cast<unsigned>(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
}

std::vector<std::size_t> *frontier(Capture &c, const Stream *s) {
    for (auto &m : c.members)
        if (m.first.get() == s) return &m.second;
    return nullptr;
}

CUgraphNode node_handle(std::size_t i) { return reinterpret_cast<CUgraphNode>((i + 1) << 4 | 0x9); }

// Appends a node after the stream's frontier, which becomes that node.
void add_node(Capture &c, const Stream *s, Node n) {
    std::vector<std::size_t> *f = frontier(c, s);
    n.deps = *f;
    c.graph->nodes.push_back(std::move(n));
    f->assign(1, c.graph->nodes.size() - 1);
}

void end_locked(std::shared_ptr<Capture> c) {  // a copy: it resets the streams' pointers
    c->ended = true;
    // The graph lives on under its handle, if the end gives it; the capture
    // (which events recorded in it keep) no longer holds it, nor its nodes'
    // events.
    c->graph.reset();
    for (auto &m : c->members) m.first->capture.reset();
    c->members.clear();
    g_live.erase(std::remove(g_live.begin(), g_live.end(), c), g_live.end());
    global().captures.fetch_sub(1, std::memory_order_acq_rel);
}

// Captures of the context that a call on its legacy default stream would
// implicitly depend on: those of its blocking streams.
bool invalidate_blocking_locked(Context *ctx) {
    bool hit = false;
    for (auto &c : g_live)
        for (auto &m : c->members)
            if (m.first->ctx == ctx && m.first->blocking()) {
                c->invalidated = true;
                hit = true;
            }
    return hit;
}

// Whether every node a member's work ends with is one the origin's next
// work follows: then the capture's forks are joined.
void set_captured_locked(Event &ev, std::shared_ptr<Capture> c) {
    ev.captured.store(c != nullptr, std::memory_order_release);
    ev.captured_in = std::move(c);
}

// Nothing to do for this event: no capture in progress, and its last record
// was not made in one.
bool plain(const Event &ev) { return !any_capture() && !ev.captured.load(std::memory_order_acquire); }

bool ev_never_recorded(Event &ev) {
    if (ev.ipc) return false;
    std::lock_guard<std::mutex> lk(ev.mu);
    return ev.issued == 0;
}

// What an event last recorded in a capture allows: nothing (null) if it
// was not, CUDA_SUCCESS while that capture is active and valid, else the
// status every use of it gets until it is recorded again.
CUresult captured_state_locked(const Event &ev, Capture **c) {
    *c = ev.captured_in.get();
    if (!*c) return CUDA_SUCCESS;
    return (*c)->ended || (*c)->invalidated ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

bool joined(const Capture &c) {
    const std::vector<Node> &nodes = c.graph->nodes;
    std::vector<char> before(nodes.size(), 0);
    std::vector<std::size_t> todo;
    for (auto &m : c.members)
        if (m.first == c.origin) todo = m.second;
    while (!todo.empty()) {
        const std::size_t i = todo.back();
        todo.pop_back();
        if (before[i]) continue;
        before[i] = 1;
        for (std::size_t d : nodes[i].deps) todo.push_back(d);
    }
    for (auto &m : c.members)
        for (std::size_t i : m.second)
            if (!before[i]) return false;
    return true;
}

}  // namespace

CUresult capture_unsafe_call() {
    if (!any_capture()) return CUDA_SUCCESS;
    const unsigned mode = rule_mode();
    if (mode == CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_SUCCESS;
    const std::thread::id me = std::this_thread::get_id();
    bool refused = false;
    std::lock_guard<std::mutex> lk(g_mu);
    for (auto &c : g_live) {
        const bool own = c->thread == me && c->mode != CU_STREAM_CAPTURE_MODE_RELAXED;
        const bool other = c->thread != me && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
                           c->mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
        if (own || other) {
            c->invalidated = true;
            refused = true;
        }
    }
    return refused ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

CUresult capture_alloc_call() {
    if (!any_capture() || rule_mode() == CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_SUCCESS;
    bool refused = false;
    std::lock_guard<std::mutex> lk(g_mu);
    for (auto &c : g_live)
        if (c->mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
            c->invalidated = true;
            refused = true;
        }
    return refused ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

CUresult capture_context_sync(Context *ctx) {
    if (!any_capture()) return CUDA_SUCCESS;
    {
        std::lock_guard<std::mutex> lk(g_mu);
        bool hit = false;
        for (auto &c : g_live)
            if (c->origin->ctx == ctx) {
                c->invalidated = true;
                hit = true;
            }
        if (hit) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    return capture_unsafe_call();
}

CUresult capture_sync_check(const std::shared_ptr<Stream> &s) {
    if (!any_capture()) return CUDA_SUCCESS;
    {
        std::lock_guard<std::mutex> lk(g_mu);
        if (s->capture) {
            s->capture->invalidated = true;
            return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        }
        if (s->kind == Stream::Kind::Legacy && invalidate_blocking_locked(s->ctx))
            return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    }
    return capture_unsafe_call();
}

CUresult capture_event_check(const std::shared_ptr<Event> &ev) {
    if (plain(*ev)) return CUDA_SUCCESS;
    {
        std::lock_guard<std::mutex> lk(g_mu);
        Capture *c = nullptr;
        if (const CUresult r = captured_state_locked(*ev, &c)) return r;
        if (c) {
            c->invalidated = true;
            return CUDA_ERROR_CAPTURED_EVENT;
        }
    }
    return capture_unsafe_call();
}

CUresult capture_elapsed_check(const std::shared_ptr<Event> &a, const std::shared_ptr<Event> &b) {
    if (!a->captured.load(std::memory_order_acquire) && !b->captured.load(std::memory_order_acquire))
        return CUDA_SUCCESS;
    std::lock_guard<std::mutex> lk(g_mu);
    Capture *ca = nullptr, *cb = nullptr;
    const CUresult ra = captured_state_locked(*a, &ca), rb = captured_state_locked(*b, &cb);
    if (ra || rb) return ra ? ra : rb;
    return ca || cb ? CUDA_ERROR_CAPTURED_EVENT : CUDA_SUCCESS;
}

void capture_forget_event(const std::shared_ptr<Event> &ev) {
    if (!ev->captured.load(std::memory_order_acquire)) return;
    std::lock_guard<std::mutex> lk(g_mu);
    set_captured_locked(*ev, nullptr);
}

CUresult capture_legacy_check(const Stream &s) {
    if (s.kind != Stream::Kind::Legacy || !any_capture()) return CUDA_SUCCESS;
    std::lock_guard<std::mutex> lk(g_mu);
    return invalidate_blocking_locked(s.ctx) ? CUDA_ERROR_STREAM_CAPTURE_IMPLICIT : CUDA_SUCCESS;
}

CUresult capture_record(const std::shared_ptr<Stream> &s, const std::shared_ptr<Event> &ev,
                        bool external, bool *taken) {
    *taken = false;
    if (plain(*ev)) return CUDA_SUCCESS;
    std::lock_guard<std::mutex> lk(g_mu);
    Capture *c = s->capture.get();
    if (!c) {
        set_captured_locked(*ev, nullptr);  // recorded outside a capture again
        return CUDA_SUCCESS;
    }
    *taken = true;
    if (c->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    // An INTERPROCESS event cannot be captured; the capture stays valid (as
    // an H100 answers).
    if (ev->ipc) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (external) {
        Node n;
        n.kind = Node::Kind::EventRecord;
        n.event = ev;
        add_node(*c, s.get(), std::move(n));
        return CUDA_SUCCESS;
    }
    set_captured_locked(*ev, s->capture);
    ev->captured_deps = *frontier(*c, s.get());
    return CUDA_SUCCESS;
}

CUresult capture_wait(const std::shared_ptr<Stream> &s, const std::shared_ptr<Event> &ev,
                      bool external, bool *taken) {
    *taken = false;
    if (plain(*ev)) return CUDA_SUCCESS;
    const bool never_recorded = ev_never_recorded(*ev);  // before the lock: it is innermost
    std::lock_guard<std::mutex> lk(g_mu);
    Capture *c = s->capture.get();
    if (ev->captured_in && ev->captured_in->ended && !(c && external)) {
        *taken = true;
        return CUDA_ERROR_INVALID_VALUE;  // recorded in a capture that ended
    }
    const std::shared_ptr<Capture> src = ev->captured_in;
    if (!c && !src) return CUDA_SUCCESS;
    *taken = true;
    if (!c) {  // a fork: the stream joins the event's capture
        // An event of an invalidated capture is nothing to join, and the
        // legacy stream cannot join one (as an H100 answers).
        if (src->invalidated) return CUDA_ERROR_INVALID_VALUE;
        if (s->kind == Stream::Kind::Legacy) {
            src->invalidated = true;
            return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
        }
        s->capture = src;
        src->members.emplace_back(s, ev->captured_deps);
        return CUDA_SUCCESS;
    }
    if (c->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    if (external) {
        Node n;
        n.kind = Node::Kind::EventWait;
        n.event = ev;
        add_node(*c, s.get(), std::move(n));
        return CUDA_SUCCESS;
    }
    if (ev->ipc) {  // an INTERPROCESS event is no capture's (as an H100 answers)
        c->invalidated = true;
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    if (!src) {  // work outside the capture, unless never recorded
        if (never_recorded) return CUDA_SUCCESS;
        c->invalidated = true;
        return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
    }
    if (src.get() != c) {
        c->invalidated = true;
        src->invalidated = true;
        return CUDA_ERROR_STREAM_CAPTURE_MERGE;
    }
    std::vector<std::size_t> *f = frontier(*c, s.get());
    for (std::size_t d : ev->captured_deps)
        if (std::find(f->begin(), f->end(), d) == f->end()) f->push_back(d);
    return CUDA_SUCCESS;
}

CUresult capture_host_func(const std::shared_ptr<Stream> &s, CUhostFn fn, void *data, bool *taken) {
    *taken = false;
    if (!any_capture()) return CUDA_SUCCESS;
    std::lock_guard<std::mutex> lk(g_mu);
    Capture *c = s->capture.get();
    if (!c) return CUDA_SUCCESS;
    *taken = true;
    if (c->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    Node n;
    n.kind = Node::Kind::HostFn;
    n.fn = fn;
    n.data = data;
    add_node(*c, s.get(), std::move(n));
    return CUDA_SUCCESS;
}

CUresult capture_memop(const std::shared_ptr<Stream> &s, const Item &it, bool *taken) {
    *taken = false;
    if (!any_capture()) return CUDA_SUCCESS;
    std::lock_guard<std::mutex> lk(g_mu);
    Capture *c = s->capture.get();
    if (!c) return CUDA_SUCCESS;
    *taken = true;
    if (c->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    Node n;
    n.kind = Node::Kind::MemOp;
    n.memop = it;
    add_node(*c, s.get(), std::move(n));
    return CUDA_SUCCESS;
}

CUresult capture_stream_check(const std::shared_ptr<Stream> &s, bool refused) {
    if (!any_capture()) return CUDA_SUCCESS;
    std::lock_guard<std::mutex> lk(g_mu);
    // The legacy stream's getters count as work on it (as an H100 answers).
    if (s->kind == Stream::Kind::Legacy && invalidate_blocking_locked(s->ctx))
        return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    if (!s->capture) return CUDA_SUCCESS;
    if (!refused) return s->capture->invalidated ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED : CUDA_SUCCESS;
    s->capture->invalidated = true;  // an invalidated capture stays so
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

void capture_stream_gone(const std::shared_ptr<Stream> &s) {
    if (!any_capture()) return;
    // A graph dropped here is destroyed after the lock is released: its user
    // objects' destructors run caller code.
    std::shared_ptr<Graph> dropped;
    std::lock_guard<std::mutex> lk(g_mu);
    if (!s->capture) return;
    Capture &c = *s->capture;
    c.invalidated = true;
    if (c.origin == s) {
        dropped = global().graphs.remove(reinterpret_cast<std::uintptr_t>(c.graph_handle));
        end_locked(s->capture);
        return;
    }
    c.members.erase(std::remove_if(c.members.begin(), c.members.end(),
                                   [&](const auto &m) { return m.first == s; }),
                    c.members.end());
    s->capture.reset();
}

CUresult stream_begin_capture(CUstream h, unsigned mode, bool ptsz) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    std::shared_ptr<Stream> s;
    CUresult r = resolve_stream(h, ptsz, &s);
    if (r != CUDA_SUCCESS) return r;
    if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
        mode != CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    if (s->kind == Stream::Kind::Legacy) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    auto c = std::make_shared<Capture>();
    c->mode = static_cast<CUstreamCaptureMode>(mode);  // one of the three, checked above
    c->thread = std::this_thread::get_id();
    c->origin = s;
    c->graph = std::make_shared<Graph>(s->ctx);
    c->members.emplace_back(s, std::vector<std::size_t>());
    std::lock_guard<std::mutex> lk(g_mu);
    if (s->capture) return CUDA_ERROR_ILLEGAL_STATE;
    // The graph has its handle from the start (cuStreamGetCaptureInfo gives
    // it); an end that gives no graph removes it.
    c->graph_handle = reinterpret_cast<CUgraph>(global().graphs.add(c->graph));
    c->id = g_next_id++;
    s->capture = c;
    g_live.push_back(std::move(c));
    global().captures.fetch_add(1, std::memory_order_acq_rel);
    return CUDA_SUCCESS;
}

CUresult stream_end_capture(CUstream h, CUgraph *out, bool ptsz) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    std::shared_ptr<Stream> s;
    CUresult r = resolve_stream(h, ptsz, &s);
    if (r != CUDA_SUCCESS) return r;
    std::shared_ptr<Graph> dropped;  // destroyed after the lock (capture_stream_gone says why)
    std::lock_guard<std::mutex> lk(g_mu);
    const std::shared_ptr<Capture> c = s->capture;
    // The legacy stream never captures, but ending it while a blocking stream
    // of its context captures answers IMPLICIT and invalidates that capture
    // (as an H100 does).
    if (!c && s->kind == Stream::Kind::Legacy && invalidate_blocking_locked(s->ctx))
        return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    if (!c) return CUDA_ERROR_ILLEGAL_STATE;
    if (c->origin != s) {
        c->invalidated = true;
        return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
    }
    if (out) *out = nullptr;
    // The wrong thread ends the capture too, with no graph (as an H100 does);
    // an invalidated capture answers INVALIDATED on any thread.
    if (c->invalidated)
        r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    else if (c->mode != CU_STREAM_CAPTURE_MODE_RELAXED && c->thread != std::this_thread::get_id())
        r = CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
    else if (!joined(*c))
        r = CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
    end_locked(c);
    // A NULL out ends the capture and drops its graph (the driver's answer).
    if (r != CUDA_SUCCESS || !out) {
        dropped = global().graphs.remove(reinterpret_cast<std::uintptr_t>(c->graph_handle));
        return r;
    }
    *out = c->graph_handle;
    return CUDA_SUCCESS;
}

CUresult stream_is_capturing(CUstream h, CUstreamCaptureStatus *status, bool ptsz) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!status) return CUDA_ERROR_INVALID_VALUE;
    std::shared_ptr<Stream> s;
    CUresult r = resolve_stream(h, ptsz, &s);
    if (r != CUDA_SUCCESS) return r;
    *status = CU_STREAM_CAPTURE_STATUS_NONE;
    if (!any_capture()) return CUDA_SUCCESS;
    std::lock_guard<std::mutex> lk(g_mu);
    if (s->kind == Stream::Kind::Legacy) {
        // IMPLICIT while a blocking stream captures; that capture stays valid.
        for (auto &c : g_live)
            for (auto &m : c->members)
                if (m.first->ctx == s->ctx && m.first->blocking()) return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
        return CUDA_SUCCESS;
    }
    if (s->capture)
        *status = s->capture->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    return CUDA_SUCCESS;
}

CUresult stream_get_capture_info(CUstream h, CUstreamCaptureStatus *status, cuuint64_t *id, CUgraph *graph,
                                 const CUgraphNode **deps, const CUgraphEdgeData **edges, std::size_t *ndeps,
                                 bool ptsz) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!status) return CUDA_ERROR_INVALID_VALUE;
    std::shared_ptr<Stream> s;
    CUresult r = resolve_stream(h, ptsz, &s);
    if (r != CUDA_SUCCESS) return r;
    r = stream_is_capturing(h, status, ptsz);
    if (r != CUDA_SUCCESS || *status == CU_STREAM_CAPTURE_STATUS_NONE) return r;
    std::lock_guard<std::mutex> lk(g_mu);
    Capture *c = s->capture.get();
    if (!c) {  // ended meanwhile
        *status = CU_STREAM_CAPTURE_STATUS_NONE;
        return CUDA_SUCCESS;
    }
    if (id) *id = c->id;
    if (graph) *graph = c->graph_handle;
    c->info.clear();
    for (std::size_t i : *frontier(*c, s.get())) c->info.push_back(node_handle(i));
    if (deps) *deps = c->info.data();
    if (edges) *edges = nullptr;  // no edge data: every edge is a default one
    if (ndeps) *ndeps = c->info.size();
    return CUDA_SUCCESS;
}

CUresult thread_exchange_capture_mode(CUstreamCaptureMode *mode) {
    const pthread_key_t key = mode_key();
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!mode) return CUDA_ERROR_INVALID_VALUE;
    // Any value is taken and given back, unknown ones too (as an H100 does);
    // the rules treat an unknown mode as thread-local. Copied as bytes: a value
    // the enum does not name must not be loaded as the enum.
    unsigned next = 0;
    static_assert(sizeof next == sizeof *mode, "CUstreamCaptureMode is not an unsigned's size");
    std::memcpy(&next, mode, sizeof next);
    const unsigned old = thread_mode();
    if (pthread_setspecific(key, reinterpret_cast<void *>(static_cast<std::uintptr_t>(next))) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    std::memcpy(mode, &old, sizeof old);
    return CUDA_SUCCESS;
}

// --- graphs

CUresult graph_instantiate(CUgraphExec *out, CUgraph g, unsigned long long flags) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!out || !g) return CUDA_ERROR_INVALID_VALUE;
    const unsigned long long known = CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH |
                                     CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD |
                                     CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH |
                                     CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY;
    if ((flags & ~known) != 0) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = CUDA_SUCCESS;
    if (!require_context(&r)) return r;
    std::shared_ptr<Graph> graph = global().graphs.find(reinterpret_cast<std::uintptr_t>(g));
    if (!graph) return CUDA_ERROR_INVALID_VALUE;
    auto exec = std::make_shared<GraphExec>(graph->ctx, graph->nodes);
    {
        // The executable holds its own references to the graph's user objects.
        std::lock_guard<std::mutex> lk(graph->users.mu);
        for (const auto &u : graph->users.refs) {
            u.first->refs.fetch_add(u.second, std::memory_order_acq_rel);
            exec->users.refs.push_back(u);
        }
    }
    *out = reinterpret_cast<CUgraphExec>(global().graph_execs.add(std::move(exec)));
    return CUDA_SUCCESS;
}

CUresult graph_launch(CUgraphExec e, CUstream h, bool ptsz) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    std::shared_ptr<GraphExec> exec = global().graph_execs.find(reinterpret_cast<std::uintptr_t>(e));
    if (!exec) return CUDA_ERROR_INVALID_VALUE;
    std::shared_ptr<Stream> s;
    CUresult r = resolve_stream(h, ptsz, &s);
    if (r != CUDA_SUCCESS) return r;
    if (s->ctx != exec->ctx) return CUDA_ERROR_INVALID_CONTEXT;
    if (any_capture()) {
        // The driver refuses a launch into a capture, which it invalidates.
        std::lock_guard<std::mutex> lk(g_mu);
        if (Capture *c = s->capture.get()) {
            if (c->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
            c->invalidated = true;
            return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        }
    }
    if ((r = capture_legacy_check(*s)) != CUDA_SUCCESS) return r;
    // A capture takes a memory operation with any address: one outside
    // pinned memory is refused here, before anything is queued, rather than
    // touch memory the emulation does not own.
    for (const Node &n : exec->nodes)
        if (n.kind == Node::Kind::MemOp && (r = memop_word_check(n.memop)) != CUDA_SUCCESS) return r;
    // The nodes in their (topological) order on the stream; the launch
    // follows the previous launch of the same graph wherever that ran.
    std::lock_guard<std::mutex> lk(exec->mu);
    if (exec->last_stream && exec->last_stream != s) {
        Dep prev{exec->last_stream, exec->last_seq};
        if (!reached(prev)) {
            Item it;
            it.kind = Item::Kind::Wait;
            it.deps.push_back(std::move(prev));
            std::uint64_t seq = 0;
            if ((r = submit(s, std::move(it), &seq)) != CUDA_SUCCESS) return r;
            exec->last_stream = s;
            exec->last_seq = seq;
        }
    }
    for (const Node &n : exec->nodes) {
        std::uint64_t seq = 0;
        switch (n.kind) {
        case Node::Kind::EventRecord:
            capture_forget_event(n.event);  // recorded again, outside any capture
            r = record_queued(n.event, s, &seq);
            break;
        case Node::Kind::EventWait: r = wait_queued(s, n.event, &seq); break;
        case Node::Kind::HostFn: r = host_func_queued(s, n.fn, n.data, &seq, exec); break;
        case Node::Kind::MemOp: r = submit(s, n.memop, &seq); break;
        }
        if (r != CUDA_SUCCESS) return r;
        if (seq) {
            exec->last_stream = s;
            exec->last_seq = seq;
        }
    }
    return CUDA_SUCCESS;
}

CUresult graph_exec_destroy(CUgraphExec e) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    // Launches queued keep what they need (their items hold the events).
    return global().graph_execs.remove(reinterpret_cast<std::uintptr_t>(e)) ? CUDA_SUCCESS
                                                                            : CUDA_ERROR_INVALID_VALUE;
}

CUresult graph_destroy(CUgraph g) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    return global().graphs.remove(reinterpret_cast<std::uintptr_t>(g)) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

// --- user objects

namespace {

void drop_refs(UserObject &o, unsigned count) {
    if (o.refs.fetch_sub(count, std::memory_order_acq_rel) != static_cast<long long>(count)) return;
    global().user_objects.remove(o.handle);
    o.destroy(o.ptr);
    global().user_objects_live.fetch_sub(1, std::memory_order_acq_rel);
}

std::shared_ptr<UserObject> find_user_object(CUuserObject o) {
    return global().user_objects.find(reinterpret_cast<std::uintptr_t>(o));
}

}  // namespace

UserRefs::~UserRefs() {
    for (auto &u : refs) drop_refs(*u.first, u.second);
}

CUresult user_object_create(CUuserObject *out, void *ptr, CUhostFn destroy, unsigned initial, unsigned flags) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    // The driver requires CU_USER_OBJECT_NO_DESTRUCTOR_SYNC.
    if (!out || !destroy || initial == 0 || initial > INT_MAX || flags != CU_USER_OBJECT_NO_DESTRUCTOR_SYNC)
        return CUDA_ERROR_INVALID_VALUE;
    auto o = std::make_shared<UserObject>();
    o->ptr = ptr;
    o->destroy = destroy;
    o->refs.store(initial, std::memory_order_relaxed);
    global().user_objects_live.fetch_add(1, std::memory_order_acq_rel);
    // The handle is known before the object is found by it.
    std::uintptr_t h = global().user_objects.add(o);
    o->handle = h;
    *out = reinterpret_cast<CUuserObject>(h);
    return CUDA_SUCCESS;
}

CUresult user_object_retain(CUuserObject h, unsigned count) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    std::shared_ptr<UserObject> o = find_user_object(h);
    if (!o || count == 0 || count > INT_MAX) return CUDA_ERROR_INVALID_VALUE;
    o->refs.fetch_add(count, std::memory_order_acq_rel);
    return CUDA_SUCCESS;
}

CUresult user_object_release(CUuserObject h, unsigned count) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    std::shared_ptr<UserObject> o = find_user_object(h);
    if (!o || count == 0 || count > INT_MAX || o->refs.load(std::memory_order_acquire) < count)
        return CUDA_ERROR_INVALID_VALUE;
    drop_refs(*o, count);
    return CUDA_SUCCESS;
}

CUresult graph_retain_user_object(CUgraph g, CUuserObject h, unsigned count, unsigned flags) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    std::shared_ptr<Graph> graph = global().graphs.find(reinterpret_cast<std::uintptr_t>(g));
    std::shared_ptr<UserObject> o = find_user_object(h);
    if (!graph || !o || count == 0 || count > INT_MAX || (flags & ~unsigned{CU_GRAPH_USER_OBJECT_MOVE}) != 0)
        return CUDA_ERROR_INVALID_VALUE;
    // MOVE: the caller's references become the graph's.
    if (!(flags & CU_GRAPH_USER_OBJECT_MOVE)) o->refs.fetch_add(count, std::memory_order_acq_rel);
    std::lock_guard<std::mutex> lk(graph->users.mu);
    for (auto &u : graph->users.refs)
        if (u.first == o) {
            u.second += count;
            return CUDA_SUCCESS;
        }
    graph->users.refs.emplace_back(std::move(o), count);
    return CUDA_SUCCESS;
}

CUresult graph_release_user_object(CUgraph g, CUuserObject h, unsigned count) {
    if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
    std::shared_ptr<Graph> graph = global().graphs.find(reinterpret_cast<std::uintptr_t>(g));
    std::shared_ptr<UserObject> o = find_user_object(h);
    if (!graph || !o || count == 0) return CUDA_ERROR_INVALID_VALUE;
    {
        std::lock_guard<std::mutex> lk(graph->users.mu);
        auto it = std::find_if(graph->users.refs.begin(), graph->users.refs.end(),
                               [&](const auto &u) { return u.first == o; });
        if (it == graph->users.refs.end() || it->second < count) return CUDA_ERROR_INVALID_VALUE;
        it->second -= count;
        if (it->second == 0) graph->users.refs.erase(it);
    }
    drop_refs(*o, count);
    return CUDA_SUCCESS;
}

}  // namespace evxh
