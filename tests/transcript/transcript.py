#!/usr/bin/env python3
"""Driver transcripts (docs/host-emulation.md, "Transcripts"): replay a
recorded transcript against another driver library and compare, test the
comparison itself, and make the capture-legality table.

  transcript.py replay --recorder BIN --driver LIB FILE...
  transcript.py selftest --recorder BIN --driver LIB
  transcript.py table FILE                  (prints the markdown table)
  transcript.py doc --check|--write DOC [FILE]
"""
import argparse
import gzip
import os
import random
import subprocess
import sys
import tempfile

BEGIN = "<!-- legality-table:begin -->"
END = "<!-- legality-table:end -->"
NO_DATA = "No GPU transcript is committed yet (tests/transcript/data/): no table."


def read_text(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return f.read()


def parse(text):
    """Returns (header dict, {index: (kind, [lines])}, [indices in order]).
    A transcript cut short (its recorder killed) keeps its complete
    programs: one without its end line is left out."""
    header, programs, order = {}, {}, []
    cur = None
    for line in text.splitlines():
        if cur is None:
            if line.startswith("program "):
                _, idx, kind = line.split(" ", 2)
                cur = int(idx)
                programs[cur] = (kind, [])
                order.append(cur)
            elif line and not line.startswith("#"):
                key, _, val = line.partition(" ")
                header[key] = val
        elif line == "end %d" % cur:
            cur = None
        else:
            programs[cur][1].append(line)
    if cur is not None:
        del programs[cur]
        order.pop()
    return header, programs, order


def crash_at(lines):
    """(index of the CRASH line, its signal), or (None, None)."""
    for i, l in enumerate(lines):
        if l.startswith("  CRASH "):
            return i, l.split()[1]
    return None, None


def crashed(lines):
    return crash_at(lines)[0] is not None


def compared(lines):
    """The lines a replay must equal: all of them, or for a program that
    crashed its recorder the prefix before the CRASH line (real driver
    answers); what came after was never recorded."""
    i, _ = crash_at(lines)
    return lines if i is None else lines[:i]


def record(recorder, driver, header, out, jobs=1):
    args = [recorder, "--seed", header["seed"], "--programs", header["programs"],
            "--devices", header["devices"], "--driver", driver, "-o", out, "--jobs", str(jobs)]
    if header.get("stale") == "0":
        args.append("--no-stale")
    name, _, version = header.get("generator", "").partition(" ")
    if name == "evx-transcript" and version.isdigit():
        args += ["--generator", version]  # draws that version's programs
    if header.get("legality") == "0":
        args.append("--no-legality")
    # the emulation plays a machine of as many devices as the recorded one
    # had (older transcripts: --device-count, else the devices used)
    env = dict(os.environ, EVX_HOST_DEVICES=header.get("device_count", header["devices"]))
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=1200)


def differences(expected, got):
    """The programs whose compared lines differ (missing ones included),
    shortest first. A crashed program is compared on its prefix before the
    crash; a replay that crashes there too differs (a crash is to be found
    out, never matched)."""
    _, exp, order = expected
    _, gotp, _ = got

    def same(k):
        return gotp[k][0] == exp[k][0] and first_difference(exp[k][1], gotp[k][1]) is None
    diff = [k for k in order if k not in gotp or not same(k)]
    return sorted(diff, key=lambda k: (len(exp[k][1]), k))


def first_difference(recorded, have):
    """The index of the first line where a replay differs from a recorded
    program, or None. A crashed recording is compared up to its CRASH line:
    the replay must match that prefix and not crash there itself."""
    want = compared(recorded)
    cut = len(want) < len(recorded)
    for i in range(max(len(want), len(have))):
        if i >= len(have):
            return i
        if i >= len(want):
            return None if cut and not have[i].startswith("  CRASH ") else i
        if want[i] != have[i]:
            return i
    return None


def show(k, expected, got, seed):
    _, exp, _ = expected
    _, gotp, _ = got
    want = compared(exp[k][1])
    have = gotp.get(k, ("", ["(program missing: the recorder stopped before it)"]))[1]
    print("shortest differing program: %d (%s, seed %s), %d lines" % (k, exp[k][0], seed, len(want)))
    first = first_difference(exp[k][1], have)
    for i, line in enumerate(want):
        mark = ">>" if i == first else "  "
        print("%s %s" % (mark, line))
    if first is not None:
        print("first difference, line %d:" % (first + 1))
        rec = exp[k][1]
        print("  expected: %s" % (rec[first] if first < len(rec) else "(nothing)"))
        print("  got:      %s" % (have[first] if first < len(have) else "(nothing)"))


def replay_one(recorder, driver, path, device_count=None):
    expected = parse(read_text(path))
    header = expected[0]
    if device_count:
        header["device_count"] = str(device_count)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "replay.txt")
        proc = record(recorder, driver, header, out)
        got = parse(read_text(out)) if os.path.exists(out) else ({}, {}, [])
    if got[0].get("generator") != header.get("generator"):
        print("%s: generator %r, recorder is %r: record it again" %
              (path, header.get("generator"), got[0].get("generator")))
        return None
    if proc.returncode != 0:
        print("%s: the recorder exited with %d: %s" % (path, proc.returncode, proc.stderr.strip()[-300:]))
    diff = differences(expected, got)
    total = header.get("total_programs")
    if total and int(total) != len(expected[2]):
        print("%s: cut short: %d of %s programs complete" % (path, len(expected[2]), total))
    sigs = [crash_at(expected[1][k][1])[1] for k in expected[2]]
    alarms = sum(1 for s in sigs if s == "SIGALRM")
    crashes = sum(1 for s in sigs if s and s != "SIGALRM")
    if alarms or crashes:
        print("%s: %d programs ended in a recorder time-out, %d in a driver crash: "
              "their recorded prefixes compared" % (path, alarms, crashes))
    print("%s: %d programs, %d differ (%s, %s device(s), driver %s)" %
          (path, len(expected[2]), len(diff), header.get("gpu"), header.get("devices"),
           header.get("driver_version")))
    if diff:
        show(diff[0], expected, got, header.get("seed"))
        print("differing programs: %s" % " ".join(map(str, diff[:40])))
    return len(diff)


def cmd_replay(a):
    total, bad = 0, 0
    for path in a.files:
        n = replay_one(a.recorder, a.driver, path, a.device_count)
        if n is None:
            bad += 1
        else:
            total += n
    print("transcript differences: %d" % total)
    return 1 if total or bad else 0


def cmd_selftest(a):
    """A transcript of this driver, one line of two programs changed: the
    comparison must find both, report the shorter, and refuse another
    generator version. The transcript is test material, never driver truth."""
    header = {"seed": "7", "programs": "30", "devices": "1", "stale": "1", "legality": "0"}
    with tempfile.TemporaryDirectory() as tmp:
        base = os.path.join(tmp, "base.txt")
        if record(a.recorder, a.driver, header, base).returncode != 0:
            print("selftest: the recorder failed")
            return 1
        text = read_text(base)
        ok = True
        h, progs, order = parse(text)
        same = differences((h, progs, order), parse(text))
        ok &= check(same == [], "an unchanged transcript has no difference")
        bylen = sorted(order, key=lambda k: len(progs[k][1]))
        short, long_ = bylen[1], bylen[-1]
        lines = text.splitlines()
        for k in (long_, short):  # change one call's status line in each
            start = lines.index("program %d %s" % (k, progs[k][0]))
            i = start + 1 + random.Random(k).randrange(len(progs[k][1]))
            lines[i] = lines[i] + " (changed)"
        mutated = os.path.join(tmp, "mutated.txt")
        with open(mutated, "w") as f:
            f.write("\n".join(lines) + "\n")
        diff = differences(parse("\n".join(lines)), (h, progs, order))
        ok &= check(diff == [short, long_], "both changed programs found, shorter first (%s)" % diff)
        ok &= check(replay_one(a.recorder, a.driver, mutated) == 2, "replay finds the 2 changes")
        crash = "\n".join(text.splitlines()[:start_of(text, progs, short) + 3] +
                          ["  CRASH SIGSEGV", "end %d" % short])
        cut = parse(crash)
        ok &= check(differences(cut, (h, progs, order)) == [],
                    "a crashed program's prefix is compared, not what follows the crash")
        ok &= check(differences(cut, cut) == [short], "a replay that crashes there too differs")
        bad = crash.splitlines()
        bad[start_of(text, progs, short) + 2] += " (changed)"
        ok &= check(differences(parse("\n".join(bad)), (h, progs, order)) == [short],
                    "a changed line in a crashed program's prefix is found")
        ok &= check(parse(crash.rsplit("\n", 2)[0])[2] == cut[2][:-1],
                    "a transcript cut short keeps its complete programs only")
        with open(mutated, "w") as f:
            f.write(text.replace("generator evx-transcript", "generator old-transcript"))
        ok &= check(replay_one(a.recorder, a.driver, mutated) is None, "another generator is refused")
        jobs = os.path.join(tmp, "jobs.txt")
        ok &= check(record(a.recorder, a.driver, header, jobs, jobs=4).returncode == 0
                    and read_text(jobs) == text, "--jobs 4 writes the same transcript")
    return 0 if ok else 1


def start_of(text, progs, k):
    return text.splitlines().index("program %d %s" % (k, progs[k][0]))


def check(cond, what):
    print("selftest: %s: %s" % ("ok" if cond else "FAILED", what))
    return bool(cond)


def legality(path):
    """{(entry, mode, place): cell} from a transcript's legality programs."""
    cells = {}
    _, progs, order = parse(read_text(path))
    for k in order:
        kind, lines = progs[k]
        if kind != "legality":
            continue
        tag = next(l for l in lines if l.startswith("  # legality "))
        entry, mode, place = tag.split()[2:5]
        probe = lines.index("  # probe")
        check_at = lines.index("  # check")
        calls = [l.strip() for l in lines[probe + 1:check_at]]
        call = next((l for l in calls if l.lstrip("T ").startswith(entry + "(")), None)
        status = call.split(" -> ")[1].split()[0] if call else "?"
        after = lines[check_at + 1]
        cell = "ok" if status == "CUDA_SUCCESS" else status.replace("CUDA_ERROR_", "")
        if after.endswith("INVALIDATED"):
            cell += " **inv**"
        elif not after.endswith("ACTIVE"):
            cell += " (capture: %s)" % after.split(" -> ")[1]
        cells[(entry, mode, place)] = cell
    return cells


def table(path):
    cells = legality(path)
    h = parse(read_text(path))[0]
    modes = ["GLOBAL", "THREAD_LOCAL", "RELAXED"]
    seen = {p for (_, _, p) in cells}
    places = [p for p in ("capturing-stream", "other-stream", "other-thread", "legacy-stream")
              if p in seen]
    out = ["From %s (%s, driver %s, %s). Each cell: the call's status made while "
           "s0 captures; **inv**: s0's capture was invalidated by it." %
           (os.path.basename(path), h.get("gpu"), h.get("driver_version"), h.get("date")), "",
           "| entry point | " + " | ".join("%s %s" % (m.lower(), p) for m in modes for p in places) + " |",
           "|---" * (1 + len(modes) * len(places)) + "|"]
    entries = []
    for (e, _, _) in cells:
        if e not in entries:
            entries.append(e)
    for e in entries:
        out.append("| %s | " % e + " | ".join(cells.get((e, m, p), "") for m in modes for p in places) + " |")
    return "\n".join(out)


def data_files(root):
    d = os.path.join(root, "tests", "transcript", "data")
    return sorted(os.path.join(d, f) for f in os.listdir(d)
                  if f.endswith(".txt") or f.endswith(".txt.gz")) if os.path.isdir(d) else []


def cmd_doc(a):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    files = [a.file] if a.file else data_files(root)
    body = table(files[0]) if files else NO_DATA
    text = open(a.doc).read()
    if BEGIN not in text or END not in text:
        print("%s: no %s ... %s markers" % (a.doc, BEGIN, END))
        return 1
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = head + BEGIN + "\n" + body + "\n" + END + tail
    if a.write:
        open(a.doc, "w").write(new)
        return 0
    if new != text:
        print("%s: the legality table differs from the transcript's: "
              "run tests/transcript/transcript.py doc --write %s" % (a.doc, a.doc))
        return 1
    print("%s: the legality table matches (%s)" % (a.doc, files[0] if files else "no data"))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("replay", "selftest"):
        s = sub.add_parser(name)
        s.add_argument("--recorder", required=True)
        s.add_argument("--driver", required=True)
        if name == "replay":
            s.add_argument("--device-count", type=int,
                           help="the recording machine's devices, for a transcript without device_count")
            s.add_argument("files", nargs="*")
    t = sub.add_parser("table")
    t.add_argument("file")
    d = sub.add_parser("doc")
    g = d.add_mutually_exclusive_group(required=True)
    g.add_argument("--check", action="store_true")
    g.add_argument("--write", action="store_true")
    d.add_argument("doc")
    d.add_argument("file", nargs="?")
    a = ap.parse_args()
    if a.cmd == "replay":
        return cmd_replay(a)
    if a.cmd == "selftest":
        return cmd_selftest(a)
    if a.cmd == "table":
        print(table(a.file))
        return 0
    return cmd_doc(a)


if __name__ == "__main__":
    sys.exit(main())
