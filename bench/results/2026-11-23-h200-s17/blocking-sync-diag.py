import asyncio, sys, os, time, threading, statistics, ctypes
sys.path.insert(0, os.getcwd() + "/bench")
import py_async_bench as b
import evx
PTX = b"""
.version 7.0
.target sm_70
.address_size 64
.visible .entry evx_hold(.param .u64 flag, .param .u64 limit)
{
  .reg .pred p, q;
  .reg .b32 v, why;
  .reg .b64 a, lim, t0, t, d;
  ld.param.u64 a, [flag];
  ld.param.u64 lim, [limit];
  cvta.to.global.u64 a, a;
  mov.u64 t0, %globaltimer;
  mov.u32 why, 2;
WAIT:
  ld.volatile.global.u32 v, [a];
  setp.ne.u32 p, v, 0;
  @p bra FLAG;
  mov.u64 t, %globaltimer;
  sub.u64 d, t, t0;
  setp.lt.u64 q, d, lim;
  @q bra WAIT;
  bra DONE;
FLAG:
  mov.u32 why, 1;
  mov.u64 t, %globaltimer;
  sub.u64 d, t, t0;
DONE:
  st.volatile.global.u32 [a+4], why;
  st.volatile.global.u32 [a+12], v;
  st.volatile.global.u64 [a+16], d;
  ret;
}
"""
class Hold(b.KernelHold):
    PTX = PTX
dev = evx.Device(0); stream = dev.create_stream()
h = Hold(evx)
u32 = h.flag
u64 = ctypes.cast(h.flag, ctypes.POINTER(ctypes.c_uint64))

def trial(n, blocking, threads):
    u32[1] = 0; u32[3] = 0; u64[2] = 0
    h(stream)
    probe = dev.create_event(timing=False); probe.record(stream)
    evs = [dev.create_event(timing=False, blocking_sync=blocking) for _ in range(n)]
    for e in evs: e.record(stream)
    ts = [threading.Thread(target=e.sync, daemon=True) for e in evs] if threads else []
    for t in ts: t.start()
    time.sleep(0.03)
    pd = probe.is_done
    why, v, d = u32[1], u32[3], u64[2]
    h.set()
    for t in ts: t.join(5)
    stream.sync()
    print("n=%d %s threads=%s: probe done before release %s; kernel exit code %d (1 flag, 2 limit, 0 still running) flag seen %d after %.3f ms"
          % (n, "blocking" if blocking else "default", threads, pd, why, v, d / 1e6), flush=True)
    probe.close()
    for e in evs: e.close()

for n, blocking, threads in ((48, True, True), (64, True, False), (64, False, True), (64, True, True), (64, True, True), (100, True, False), (100, True, True)):
    trial(n, blocking, threads)
