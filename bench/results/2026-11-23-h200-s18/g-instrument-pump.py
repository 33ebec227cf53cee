# Applied to src/notify.cpp on the GPU machine for g-pumpdiag.txt (run from the
# repository root: python3 g-instrument-pump.py), never committed to src/.
# Diagnostic only (not committed): times the pump's driver calls and the
# watch call's cuStreamWaitEvent, printing the largest of each and a count
# of calls over 100 us at notifier destroy.
import re
p = 'src/notify.cpp'
s = open(p).read()
s = s.replace('#include <new>\n', '#include <new>\n#include <chrono>\n#include <cstdio>\n'
  'namespace { double g_q_max = 0, g_l_max = 0, g_w_max = 0; long g_q_slow = 0, g_l_slow = 0, g_w_slow = 0, g_q_n = 0, g_l_n = 0;\n'
  'inline double now_us() { return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count(); } }\n', 1)
old = '''        if (may_deliver_here && cu().cuStreamQuery(lane->cu) == CUDA_SUCCESS) {
            deliver(batch);
        } else {
            const CUresult res = cu().cuLaunchHostFunc(lane->cu, deliver, batch);'''
new = '''        double tq0 = now_us();
        bool idle = may_deliver_here && cu().cuStreamQuery(lane->cu) == CUDA_SUCCESS;
        double tq = now_us() - tq0; if (may_deliver_here) { ++g_q_n; if (tq > g_q_max) { g_q_max = tq; std::fprintf(stderr, "PUMPDIAG new max cuStreamQuery %.1f us (query %ld)\\n", tq, g_q_n); } if (tq > 100) ++g_q_slow; }
        if (idle) {
            deliver(batch);
        } else {
            double tl0 = now_us();
            const CUresult res = cu().cuLaunchHostFunc(lane->cu, deliver, batch);
            double tl = now_us() - tl0; ++g_l_n; if (tl > g_l_max) { g_l_max = tl; std::fprintf(stderr, "PUMPDIAG new max cuLaunchHostFunc %.1f us (launch %ld)\\n", tl, g_l_n); } if (tl > 100) ++g_l_slow; if (g_l_n % 20000 == 0) std::fprintf(stderr, "PUMPDIAG %ld launches, %ld over 100 us; %ld queries, %ld over 100 us; watch waits over 100 us %ld, max %.1f\\n", g_l_n, g_l_slow, g_q_n, g_q_slow, g_w_slow, g_w_max);'''
assert old in s; s = s.replace(old, new, 1)
old = '''        const CUresult res =
            cu().cuStreamWaitEvent(lane->cu, e->cu.load(std::memory_order_acquire), 0);'''
new = '''        double tw0 = now_us();
        const CUresult res =
            cu().cuStreamWaitEvent(lane->cu, e->cu.load(std::memory_order_acquire), 0);
        double tw = now_us() - tw0; if (tw > g_w_max) { g_w_max = tw; std::fprintf(stderr, "PUMPDIAG new max watch cuStreamWaitEvent %.1f us\\n", tw); } if (tw > 100) ++g_w_slow;'''
assert old in s; s = s.replace(old, new, 1)
old = '''evx_status_t notifier_free(ThreadRecord *, void *obj) {
    Notifier *n = static_cast<Notifier *>(obj);'''
new = '''evx_status_t notifier_free(ThreadRecord *, void *obj) {
    Notifier *n = static_cast<Notifier *>(obj);
    std::fprintf(stderr, "PUMPDIAG queries %ld max %.1f us (>100us: %ld); launches %ld max %.1f us (>100us: %ld); watch waits max %.1f us (>100us: %ld)\\n",
                 g_q_n, g_q_max, g_q_slow, g_l_n, g_l_max, g_l_slow, g_w_max, g_w_slow);'''
assert old in s; s = s.replace(old, new, 1)
open(p, 'w').write(s)
