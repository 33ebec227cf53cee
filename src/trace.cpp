// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// evx_timeline_write_trace(): a timeline as a Chrome trace (JSON trace
// event format). Built on the public timeline calls only.
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "error.hpp"
#include "evx/status.h"
#include "evx/timing.h"

namespace evx {

namespace {

// A JSON string literal of s.
void json_string(std::string *out, const char *s) {
    out->push_back('"');
    for (const unsigned char *p = reinterpret_cast<const unsigned char *>(s); *p; ++p) {
        if (*p == '"' || *p == '\\') {
            out->push_back('\\');
            out->push_back(static_cast<char>(*p));
        } else if (*p < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", *p);
            *out += buf;
        } else {
            out->push_back(static_cast<char>(*p));
        }
    }
    out->push_back('"');
}

// The track of a stream: its index among the streams, in order of first use.
int track_of(std::vector<evx_stream_t> *streams, evx_stream_t s) {
    for (size_t i = 0; i < streams->size(); ++i)
        if ((*streams)[i] == s) return static_cast<int>(i) + 1;
    streams->push_back(s);
    return static_cast<int>(streams->size());
}

void event_head(std::string *out, const char *ph, const char *name, double ts_us, int tid) {
    char buf[96];
    *out += out->back() == '[' ? "\n{\"name\":" : ",\n{\"name\":";
    json_string(out, name);
    std::snprintf(buf, sizeof buf, ",\"cat\":\"evx\",\"ph\":\"%s\",\"ts\":%.3f,\"pid\":1,\"tid\":%d",
                  ph, ts_us, tid);
    *out += buf;
}

// The marks of a timeline, every one complete.
evx_status_t read_marks(const char *fn, evx_timeline_t timeline,
                        std::vector<evx_timeline_mark_info_t> *m) {
    uint32_t count = 0;
    evx_status_t st = evx_timeline_count(timeline, &count);
    if (st) return st;
    if (count == 0)
        return fail(EVX_ERROR_INVALID_VALUE, "%s: timeline 0x%" PRIx64 " has no marks", fn,
                    static_cast<uint64_t>(reinterpret_cast<uintptr_t>(timeline)));
    m->resize(count);
    for (uint32_t i = 0; i < count; ++i) {
        (*m)[i].struct_size = sizeof(evx_timeline_mark_info_t);
        st = evx_timeline_get_mark(timeline, i, &(*m)[i]);
        if (st == EVX_ERROR_NOT_READY)
            return fail(st, "%s: mark %u of timeline 0x%" PRIx64
                        " is pending although the last mark completed (marks on several "
                        "streams: order them)",
                        fn, i, static_cast<uint64_t>(reinterpret_cast<uintptr_t>(timeline)));
        if (st) return st;
    }
    return 0;
}

// Names of the process and of each stream's track, and the end.
void write_names(std::string *out, const char *title, const std::vector<evx_stream_t> &streams) {
    char buf[160];
    *out += ",\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":";
    json_string(out, title);
    *out += "}}";
    for (size_t t = 0; t < streams.size(); ++t) {
        std::snprintf(buf, sizeof buf,
                      ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%zu,"
                      "\"args\":{\"name\":\"stream 0x%" PRIx64 "\"}}",
                      t + 1, static_cast<uint64_t>(reinterpret_cast<uintptr_t>(streams[t])));
        *out += buf;
    }
    *out += "\n]";
}

// The anchors (evx_timeline_anchor()), as the top-level "evx" object, and
// the end of the trace.
evx_status_t write_anchors(evx_timeline_t timeline,
                           const std::vector<evx_timeline_mark_info_t> &m, std::string *out) {
    bool first = true;
    char buf[256];
    for (const evx_timeline_mark_info_t &k : m) {
        if (k.kind != EVX_MARK_ANCHOR) continue;
        evx_timeline_anchor_info_t a;
        a.struct_size = sizeof a;
        const evx_status_t st = evx_timeline_get_anchor(timeline, k.index, &a);
        if (st) return st;
        *out += first ? ",\n\"evx\":{\"clock\":\"CLOCK_MONOTONIC\",\"anchors\":[" : ",";
        first = false;
        std::snprintf(buf, sizeof buf,
                      "\n{\"index\":%u,\"ts\":%.3f,\"monotonic_before_ns\":%" PRIu64
                      ",\"monotonic_after_ns\":%" PRIu64 ",\"realtime_ns\":%" PRIu64 "}",
                      a.index, static_cast<double>(k.ms) * 1000.0, a.monotonic_before_ns,
                      a.monotonic_after_ns, a.realtime_ns);
        *out += buf;
    }
    if (!first) *out += "]}";
    *out += "}\n";
    return 0;
}

evx_status_t build(const char *fn, evx_timeline_t timeline, const char *title,
                   std::string *out) {
    std::vector<evx_timeline_mark_info_t> m;
    const evx_status_t st = read_marks(fn, timeline, &m);
    if (st) return st;
    const uint32_t count = static_cast<uint32_t>(m.size());
    std::vector<evx_stream_t> streams;
    std::vector<std::vector<uint32_t>> open;  // per track: begin marks not closed
    *out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[";
    char buf[160];
    for (uint32_t i = 0; i < count; ++i) {
        const evx_timeline_mark_info_t &k = m[i];
        const int tid = track_of(&streams, k.stream);
        if (open.size() < streams.size()) open.resize(streams.size());
        std::vector<uint32_t> &stack = open[static_cast<size_t>(tid - 1)];
        const double ts = static_cast<double>(k.ms) * 1000.0;
        char fallback[32];
        const char *name = k.label;
        if (k.kind == EVX_MARK_BEGIN) {
            stack.push_back(i);
            event_head(out, "B", name, ts, tid);
        } else if (k.kind == EVX_MARK_END) {
            if (stack.empty())
                return fail(EVX_ERROR_INVALID_VALUE,
                            "%s: mark %u (\"%s\") ends a range on stream 0x%" PRIx64
                            ", which has none open",
                            fn, i, k.label,
                            static_cast<uint64_t>(reinterpret_cast<uintptr_t>(k.stream)));
            name = m[stack.back()].label;
            stack.pop_back();
            event_head(out, "E", name, ts, tid);
        } else if (k.kind == EVX_MARK_ANCHOR) {
            event_head(out, "i", name, ts, tid);
            *out += ",\"s\":\"t\"";
        } else {
            if (!name[0]) {
                std::snprintf(fallback, sizeof fallback, "interval %u", i);
                name = fallback;
            }
            const bool span = i + 1 < count && m[i + 1].ms >= k.ms;
            if (span) {
                event_head(out, "X", name, ts, tid);
                std::snprintf(buf, sizeof buf, ",\"dur\":%.3f",
                              static_cast<double>(m[i + 1].ms - k.ms) * 1000.0);
                *out += buf;
            } else {
                event_head(out, "i", name, ts, tid);
                *out += ",\"s\":\"t\"";
            }
        }
        std::snprintf(buf, sizeof buf, ",\"args\":{\"index\":%u}}", i);
        *out += buf;
    }
    for (size_t t = 0; t < open.size(); ++t)
        if (!open[t].empty()) {
            const uint32_t i = open[t].back();
            return fail(EVX_ERROR_INVALID_VALUE,
                        "%s: mark %u (\"%s\") begins a range on stream 0x%" PRIx64
                        " that no mark ends",
                        fn, i, m[i].label,
                        static_cast<uint64_t>(reinterpret_cast<uintptr_t>(m[i].stream)));
        }
    write_names(out, title, streams);
    return write_anchors(timeline, m, out);
}

}  // namespace

}  // namespace evx

using namespace evx;

extern "C" {

EVX_API evx_status_t evx_timeline_write_trace(evx_timeline_t timeline, const char *path,
                                              const char *title) {
    static const char fn[] = "evx_timeline_write_trace";
    if (!path) return fail(EVX_ERROR_INVALID_VALUE, "%s: path is NULL", fn);
    evx_status_t st = evx_timeline_synchronize(timeline);
    if (st) return st;
    std::string text;
    try {
        st = build(fn, timeline, title ? title : "evx timeline", &text);
    } catch (const std::bad_alloc &) {
        return fail(EVX_ERROR_OUT_OF_MEMORY, "%s: out of memory", fn);
    }
    if (st) return st;
    std::FILE *f = std::fopen(path, "w");
    if (!f)
        return fail(EVX_ERROR_OPERATING_SYSTEM, "%s: cannot open %s for writing: %s", fn, path,
                    std::strerror(errno));
    const bool wrote = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    const int err = errno;
    const bool closed = std::fclose(f) == 0;
    if (!wrote || !closed)
        return fail(EVX_ERROR_OPERATING_SYSTEM, "%s: writing %s failed: %s", fn, path,
                    std::strerror(wrote ? errno : err));
    return EVX_SUCCESS;
}

}  // extern "C"
