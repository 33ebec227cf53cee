# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""The drawing of :meth:`evx.Timeline.plot`: the slices of its trace
(:meth:`evx.Timeline.to_trace`), laid out with matplotlib, which is imported
only by the caller."""

__all__ = ["slices", "draw"]


def slices(marks):
    """The trace's slices from a list of :class:`evx.Mark`:
    ``(stream, depth, start_ms, end_ms, label, kind)`` with kind "range" or
    "interval", and the instants ``(stream, ms, label)``. Ranges nest per
    stream (depth 0 outermost); intervals lie below the ranges."""
    out, instants, open_ = [], [], {}
    for i, m in enumerate(marks):
        stack = open_.setdefault(m.stream, [])
        if m.kind == "begin":
            stack.append(m)
        elif m.kind == "end":
            if not stack:
                raise ValueError("mark %d ends a range on a stream with none open" % m.number)
            b = stack.pop()
            out.append((m.stream, len(stack), b.ms, m.ms, b.label, "range"))
        elif m.kind == "anchor":
            instants.append((m.stream, m.ms, m.label))   # as in the trace
        else:
            label = m.label or "interval %d" % m.number
            if i + 1 < len(marks) and marks[i + 1].ms >= m.ms:
                out.append((m.stream, None, m.ms, marks[i + 1].ms, label, "interval"))
            else:
                instants.append((m.stream, m.ms, label))
    for s, stack in open_.items():
        if stack:
            raise ValueError("mark %d begins a range that no mark ends" % stack[-1].number)
    return out, instants


def _fit(label, width, char_w):
    """The label, shortened to fit a bar `width` wide (or "")."""
    n = int(width / char_w)
    if len(label) <= n:
        return label
    return label[:n - 1] + "\u2026" if n >= 4 else ""


def draw(ax, marks, title=None):
    """Draws the marks on matplotlib axes: a row per stream, its ranges
    nested from the top (outermost first), its intervals below them."""
    spans, instants = slices(marks)
    streams = []
    for m in marks:
        if m.stream not in streams:
            streams.append(m.stream)
    lanes = {}
    for (s, d, *_rest) in spans:
        n = lanes.get(s, 0)
        lanes[s] = max(n, (d + 1) if d is not None else n)
    has_iv = {s for (s, d, *_rest) in spans if d is None}
    times = [m.ms for m in marks]
    char_w = max(max(times) - min(times), 1e-3) / 95.0
    palette = ["#4C72B0", "#DD8452", "#55A868", "#C44E52", "#8172B3", "#937860"]
    for (s, d, t0, t1, label, kind) in spans:
        row = streams.index(s)
        n = lanes.get(s, 0) + (1 if s in has_iv else 0)
        height = 0.8 / max(n, 3)
        lane = lanes.get(s, 0) if kind == "interval" else d
        # outermost range on top; the row's lanes centered on its tick
        y = row - n * height / 2 + lane * height
        color = "#B0B0B0" if kind == "interval" else palette[d % len(palette)]
        ax.broken_barh([(t0, max(t1 - t0, 1e-6))], (y, height * 0.92),
                       facecolors=color, edgecolors="white", linewidth=0.5)
        text = _fit(label, t1 - t0, char_w)
        if text:
            ax.text(t0 + (t1 - t0) / 2, y + height * 0.46, text, ha="center",
                    va="center", fontsize=8,
                    color="black" if kind == "interval" else "white")
    for (s, t, label) in instants:
        row = streams.index(s)
        ax.plot([t], [row], marker="v", color="black")
        ax.annotate(label, (t, row), textcoords="offset points", xytext=(3, 6), fontsize=8)
    ax.set_yticks(range(len(streams)))
    ax.set_yticklabels(["stream 0x%x" % s for s in streams])
    ax.set_ylim(len(streams) - 0.5, -0.5)
    ax.set_xlabel("ms from the first mark")
    ax.grid(axis="x", alpha=0.3)
    if title:
        ax.set_title(title)
    return ax
