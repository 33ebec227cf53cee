// Copyright 2026 The evx Authors
// SPDX-License-Identifier: Apache-2.0
//
// rustbench: the cost of the evx crate's hot calls next to the raw driver
// calls they wrap, in one process, on the driver evx opened; then the
// latency of the notifier's Future against a thread blocked in
// cuEventSynchronize on the same event.
//
//     cargo run --release --example rustbench [-- --n N] [--reps N] [--trials N] [--quick]
//
// The raw side calls the entry points of the library evx opened (dlopen of
// evx's driver path with RTLD_NOLOAD, then cuGetProcAddress_v2), with device
// 0's primary context current on this thread, on the driver objects of the
// evx side's own events and stream (Event::native, Stream::native), so both
// sides run on one driver, context, stream and pair of events. Each row
// times n calls (n / 4 for the timed regions) `reps` times per side,
// alternating raw and evx repetitions, and prints the medians in ns per call
// as "BENCH <row> raw_ns=.. evx_ns=.. diff_ns=.. ratio=..".
//
// Latency: a host function holds the stream until the main thread opens a
// gate; an event recorded after it completes then. One thread blocks in raw
// cuEventSynchronize on it, another waits for evx::notify::wait(&event) with
// a minimal executor (thread park/unpark); each notes when it woke. Per
// trial, both latencies from the gate's opening; printed as medians and the
// 90th percentile ("LATENCY <waiter> median_us=.. p90_us=..").
//
// On the host emulation (EVX_DRIVER=host) the figures are CPU timings of
// the emulation, not GPU figures: a smoke run.

use std::ffi::{c_void, CStr, CString};
use std::os::raw::{c_char, c_int, c_uint};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::Instant;

use evx::{Device, Event, EventFlags, Stream, Timer};

type CuResult = c_int;
type CuEvent = *mut c_void;
type CuStream = *mut c_void;
type CuContext = *mut c_void;

const RTLD_NOW: c_int = 2;
const RTLD_NOLOAD: c_int = 4;

extern "C" {
    fn dlopen(filename: *const c_char, flag: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    fn dlerror() -> *mut c_char;
}

type GetProc =
    unsafe extern "C" fn(*const c_char, *mut *mut c_void, c_int, u64, *mut c_int) -> CuResult;

/// The raw entry points, from the library evx opened.
struct Raw {
    event_record: unsafe extern "C" fn(CuEvent, CuStream) -> CuResult,
    event_query: unsafe extern "C" fn(CuEvent) -> CuResult,
    event_synchronize: unsafe extern "C" fn(CuEvent) -> CuResult,
    event_elapsed: unsafe extern "C" fn(*mut f32, CuEvent, CuEvent) -> CuResult,
    stream_wait_event: unsafe extern "C" fn(CuStream, CuEvent, c_uint) -> CuResult,
    stream_synchronize: unsafe extern "C" fn(CuStream) -> CuResult,
}

fn die(what: &str) -> ! {
    eprintln!("rustbench: {}", what);
    std::process::exit(1);
}

fn lookup(get: GetProc, name: &str) -> *mut c_void {
    let c = CString::new(name).unwrap();
    let mut p: *mut c_void = std::ptr::null_mut();
    let mut found: c_int = 0;
    let r = unsafe { get(c.as_ptr(), &mut p, 13000, 0, &mut found) };
    if r != 0 || found != 0 || p.is_null() {
        die(&format!(
            "the driver has no {} (cuGetProcAddress_v2: {}, {})",
            name, r, found
        ));
    }
    p
}

fn raw_ok(r: CuResult, call: &str) {
    if r != 0 {
        die(&format!("{} returned {}", call, r));
    }
}

fn open_raw() -> Raw {
    let path = evx::driver_path().unwrap_or_else(|e| die(&format!("driver_path: {}", e)));
    let cpath = CString::new(path.clone()).unwrap();
    // RTLD_NOLOAD: only the library evx has open will do (one driver).
    let lib = unsafe { dlopen(cpath.as_ptr(), RTLD_NOW | RTLD_NOLOAD) };
    if lib.is_null() {
        let why = unsafe { dlerror() };
        let why = if why.is_null() {
            String::new()
        } else {
            unsafe { CStr::from_ptr(why) }
                .to_string_lossy()
                .into_owned()
        };
        die(&format!("{} is not loaded in this process: {}", path, why));
    }
    let sym = CString::new("cuGetProcAddress_v2").unwrap();
    let gp = unsafe { dlsym(lib, sym.as_ptr()) };
    if gp.is_null() {
        die(&format!("{} exports no cuGetProcAddress_v2", path));
    }
    // SAFETY: the driver's documented signature of cuGetProcAddress_v2, and
    // of each entry point below.
    unsafe {
        let get: GetProc = std::mem::transmute(gp);
        let device_get: unsafe extern "C" fn(*mut c_int, c_int) -> CuResult =
            std::mem::transmute(lookup(get, "cuDeviceGet"));
        let retain: unsafe extern "C" fn(*mut CuContext, c_int) -> CuResult =
            std::mem::transmute(lookup(get, "cuDevicePrimaryCtxRetain"));
        let set_current: unsafe extern "C" fn(CuContext) -> CuResult =
            std::mem::transmute(lookup(get, "cuCtxSetCurrent"));
        let mut dev: c_int = 0;
        let mut ctx: CuContext = std::ptr::null_mut();
        raw_ok(device_get(&mut dev, 0), "cuDeviceGet");
        raw_ok(retain(&mut ctx, dev), "cuDevicePrimaryCtxRetain");
        raw_ok(set_current(ctx), "cuCtxSetCurrent");
        Raw {
            event_record: std::mem::transmute(lookup(get, "cuEventRecord")),
            event_query: std::mem::transmute(lookup(get, "cuEventQuery")),
            event_synchronize: std::mem::transmute(lookup(get, "cuEventSynchronize")),
            event_elapsed: std::mem::transmute(lookup(get, "cuEventElapsedTime")),
            stream_wait_event: std::mem::transmute(lookup(get, "cuStreamWaitEvent")),
            stream_synchronize: std::mem::transmute(lookup(get, "cuStreamSynchronize")),
        }
    }
}

fn ok<T>(r: evx::Result<T>, call: &str) -> T {
    r.unwrap_or_else(|e| die(&format!("{}: {}", call, e)))
}

#[derive(Clone, Copy, PartialEq)]
enum Row {
    Record,
    Query,
    Synchronize,
    Elapsed,
    Wait,
    TimedRegion,
    Timer,
}

const ROWS: [(Row, &str); 7] = [
    (Row::Record, "record"),
    (Row::Query, "query_done"),
    (Row::Synchronize, "synchronize_done"),
    (Row::Elapsed, "elapsed_time"),
    (Row::Wait, "stream_wait_event"),
    (Row::TimedRegion, "timed_region"),
    (Row::Timer, "timer"),
];

struct Bench {
    raw: Raw,
    stream: Stream,
    a: Event,
    b: Event,
    na: CuEvent,
    nb: CuEvent,
    ns: CuStream,
    timer: Timer,
}

impl Bench {
    /// One raw repetition: ns per call (per region for the timed rows).
    fn rep_raw(&mut self, row: Row, n: usize) -> f64 {
        let r = &self.raw;
        let (a, b, s) = (self.na, self.nb, self.ns);
        let mut ms = 0.0f32;
        let t0 = Instant::now();
        unsafe {
            match row {
                Row::Record => {
                    for _ in 0..n {
                        raw_ok((r.event_record)(a, s), "cuEventRecord");
                    }
                    raw_ok((r.stream_synchronize)(s), "cuStreamSynchronize");
                }
                Row::Query => {
                    for _ in 0..n {
                        raw_ok((r.event_query)(a), "cuEventQuery");
                    }
                }
                Row::Synchronize => {
                    for _ in 0..n {
                        raw_ok((r.event_synchronize)(a), "cuEventSynchronize");
                    }
                }
                Row::Elapsed => {
                    for _ in 0..n {
                        raw_ok((r.event_elapsed)(&mut ms, a, b), "cuEventElapsedTime");
                    }
                }
                Row::Wait => {
                    for _ in 0..n {
                        raw_ok((r.stream_wait_event)(s, a, 0), "cuStreamWaitEvent");
                    }
                    raw_ok((r.stream_synchronize)(s), "cuStreamSynchronize");
                }
                Row::TimedRegion | Row::Timer => {
                    for _ in 0..n {
                        raw_ok((r.event_record)(a, s), "cuEventRecord");
                        raw_ok((r.event_record)(b, s), "cuEventRecord");
                        raw_ok((r.event_synchronize)(b), "cuEventSynchronize");
                        raw_ok((r.event_elapsed)(&mut ms, a, b), "cuEventElapsedTime");
                    }
                }
            }
        }
        keep(ms);
        t0.elapsed().as_nanos() as f64 / n as f64
    }

    /// One evx repetition, mirroring rep_raw call for call.
    fn rep_evx(&mut self, row: Row, n: usize) -> f64 {
        let (a, b, s) = (&self.a, &self.b, &self.stream);
        let mut ms = 0.0f32;
        let t0 = Instant::now();
        match row {
            Row::Record => {
                for _ in 0..n {
                    ok(a.record(s), "Event::record");
                }
                ok(s.synchronize(), "Stream::synchronize");
            }
            Row::Query => {
                for _ in 0..n {
                    ok(a.is_done(), "Event::is_done");
                }
            }
            Row::Synchronize => {
                for _ in 0..n {
                    ok(a.synchronize(), "Event::synchronize");
                }
            }
            Row::Elapsed => {
                for _ in 0..n {
                    ms = ok(b.elapsed_since(a), "Event::elapsed_since");
                }
            }
            Row::Wait => {
                for _ in 0..n {
                    ok(s.wait_event(a), "Stream::wait_event");
                }
                ok(s.synchronize(), "Stream::synchronize");
            }
            Row::TimedRegion => {
                for _ in 0..n {
                    ok(a.record(s), "Event::record");
                    ok(b.record(s), "Event::record");
                    ok(b.synchronize(), "Event::synchronize");
                    ms = ok(b.elapsed_since(a), "Event::elapsed_since");
                }
            }
            Row::Timer => {
                for _ in 0..n {
                    let g = ok(self.timer.start(s), "Timer::start");
                    ok(g.stop(), "TimerGuard::stop");
                    ms = ok(self.timer.synchronize(), "Timer::synchronize");
                }
            }
        }
        keep(ms);
        t0.elapsed().as_nanos() as f64 / n as f64
    }
}

/// Keeps a result alive so the loop that made it is not optimized away.
fn keep(ms: f32) {
    // SAFETY: a volatile read of a local.
    unsafe { std::ptr::read_volatile(&ms) };
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|x, y| x.partial_cmp(y).unwrap());
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|x, y| x.partial_cmp(y).unwrap());
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i]
}

// --- the latency of a Future against a thread blocked in cuEventSynchronize

struct ThreadWaker(thread::Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// A minimal executor: polls, parks until woken.
fn block_on<F: std::future::Future>(fut: F) -> F::Output {
    let mut fut = Box::pin(fut);
    let waker = Waker::from(Arc::new(ThreadWaker(thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        thread::park();
    }
}

struct SendPtr(CuEvent);
// SAFETY: a driver event handle may be used from any thread.
unsafe impl Send for SendPtr {}

fn latency(bench: &Bench, dev: Device, trials: usize) {
    let stream = &bench.stream;
    let sync = bench.raw.event_synchronize;
    let mut raw_us = Vec::with_capacity(trials);
    let mut fut_us = Vec::with_capacity(trials);
    for _ in 0..trials {
        let ev = ok(
            dev.create_event(EventFlags::DEFAULT),
            "Device::create_event",
        );
        let gate = Arc::new(AtomicBool::new(false));
        let g = gate.clone();
        ok(
            stream.launch_host_func(move || {
                while !g.load(Ordering::Acquire) {
                    std::hint::spin_loop();
                }
            }),
            "Stream::launch_host_func",
        );
        ok(ev.record(stream), "Event::record");
        let native = SendPtr(ok(ev.native(), "Event::native"));
        let fut = ok(evx::notify::wait(&ev), "notify::wait");
        let ready = Arc::new(Barrier::new(3));
        let r1 = ready.clone();
        let blocked = thread::spawn(move || {
            let native = native;
            r1.wait();
            // SAFETY: the event outlives this thread (joined below).
            raw_ok(unsafe { sync(native.0) }, "cuEventSynchronize");
            Instant::now()
        });
        let r2 = ready.clone();
        let awaiting = thread::spawn(move || {
            r2.wait();
            ok(block_on(fut), "EventFuture");
            Instant::now()
        });
        ready.wait();
        // Both waiters are in place (blocked or parked) before the gate opens.
        thread::sleep(std::time::Duration::from_millis(2));
        let t0 = Instant::now();
        gate.store(true, Ordering::Release);
        let t_raw = blocked
            .join()
            .unwrap_or_else(|_| die("the blocked thread panicked"));
        let t_fut = awaiting
            .join()
            .unwrap_or_else(|_| die("the awaiting thread panicked"));
        raw_us.push(t_raw.duration_since(t0).as_nanos() as f64 / 1000.0);
        fut_us.push(t_fut.duration_since(t0).as_nanos() as f64 / 1000.0);
        ok(ev.destroy(), "Event::destroy");
    }
    let (rm, fm) = (median(&mut raw_us.clone()), median(&mut fut_us.clone()));
    println!(
        "LATENCY cuEventSynchronize_thread median_us={:.1} p90_us={:.1}",
        rm,
        percentile(&mut raw_us, 0.9)
    );
    println!(
        "LATENCY notify_future median_us={:.1} p90_us={:.1}",
        fm,
        percentile(&mut fut_us, 0.9)
    );
    println!(
        "The Future wakes {:.1} us after the blocked thread (median of {} trials; the gate \
         opens, a host function returns, the event after it completes)",
        fm - rm,
        trials
    );
}

fn main() {
    let mut n = 20000usize;
    let mut reps = 7usize;
    let mut trials = 200usize;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    let num = |v: Option<&String>, name: &str| -> usize {
        match v.and_then(|s| s.parse::<usize>().ok()) {
            Some(x) if x >= 1 && x <= 10_000_000 => x,
            _ => die(&format!(
                "{} needs a number from 1 to 10000000, got {:?}",
                name, v
            )),
        }
    };
    while i < args.len() {
        match args[i].as_str() {
            "--n" => {
                n = num(args.get(i + 1), "--n");
                i += 1;
            }
            "--reps" => {
                reps = num(args.get(i + 1), "--reps");
                i += 1;
            }
            "--trials" => {
                trials = num(args.get(i + 1), "--trials");
                i += 1;
            }
            "--quick" => {
                n = 200;
                reps = 3;
                trials = 5;
            }
            other => die(&format!(
                "unknown argument {} (usage: rustbench [--n N] [--reps N] [--trials N] [--quick])",
                other
            )),
        }
        i += 1;
    }
    ok(evx::driver_open(), "driver_open");
    let raw = open_raw();
    let dev = ok(Device::new(0), "Device::new");
    let stream = ok(dev.create_stream(0, true), "Device::create_stream");
    let a = ok(
        dev.create_event(EventFlags::DEFAULT),
        "Device::create_event",
    );
    let b = ok(
        dev.create_event(EventFlags::DEFAULT),
        "Device::create_event",
    );
    ok(a.record(&stream), "Event::record");
    ok(b.record(&stream), "Event::record");
    ok(stream.synchronize(), "Stream::synchronize");
    let (na, nb) = (
        ok(a.native(), "Event::native"),
        ok(b.native(), "Event::native"),
    );
    let ns = ok(stream.native(), "Stream::native");
    let timer = ok(dev.create_timer(), "Device::create_timer");
    let mut bench = Bench {
        raw,
        stream,
        a,
        b,
        na,
        nb,
        ns,
        timer,
    };
    println!(
        "DRIVER {} (emulation: {}), evx {}",
        ok(evx::driver_path(), "driver_path"),
        ok(evx::is_emulation(), "is_emulation"),
        evx::library_version()
    );
    println!(
        "median of {} alternating repetitions of {} calls ({} for the timed rows), ns per call",
        reps,
        n,
        n / 4
    );
    println!("| row | raw ns | evx ns | evx - raw | evx / raw |");
    println!("|---|---|---|---|---|");
    for (row, name) in ROWS.iter() {
        let k = if *row == Row::TimedRegion || *row == Row::Timer {
            (n / 4).max(1)
        } else {
            n
        };
        bench.rep_raw(*row, k.min(100)); // warm both sides
        bench.rep_evx(*row, k.min(100));
        let mut rv = Vec::with_capacity(reps);
        let mut ev = Vec::with_capacity(reps);
        for r in 0..reps {
            if r % 2 == 0 {
                rv.push(bench.rep_raw(*row, k));
                ev.push(bench.rep_evx(*row, k));
            } else {
                ev.push(bench.rep_evx(*row, k));
                rv.push(bench.rep_raw(*row, k));
            }
        }
        let (rm, em) = (median(&mut rv), median(&mut ev));
        println!(
            "| {} | {:.1} | {:.1} | {:+.1} | {:.4} |",
            name,
            rm,
            em,
            em - rm,
            em / rm
        );
        println!(
            "BENCH {} raw_ns={:.1} evx_ns={:.1} diff_ns={:.1} ratio={:.4}",
            name,
            rm,
            em,
            em - rm,
            em / rm
        );
    }
    latency(&bench, dev, trials);
}
