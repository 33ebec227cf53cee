# Copyright 2026 The evx Authors
# SPDX-License-Identifier: Apache-2.0
"""Where the pipeline's buffers live and what fills and reads them.

Both backends give the stages the same calls; the stages queue them on evx
streams, and the hand-off (fences, IPC events or host synchronization) is
the stages' own (stages.py).

- ``host``: the host emulation of the CUDA driver (``EVX_DRIVER=host``), or
  any driver without PyTorch. The ring is a file in ``/dev/shm`` mapped by
  both processes; the producer's "kernel" and the consumer's "copy and
  compute" are evx host functions, which run in stream order like kernels.
- ``torch``: PyTorch on the GPU. The ring is one tensor of the producer's
  device shared through CUDA IPC (torch.multiprocessing's reductions); the
  consumer copies each buffer to its own device (peer to peer when that is
  another GPU) and checks it there with a reduction, counting errors in a
  device tensor read once at the end.

Every buffer holds its sequence number in each element, and its last
element, the stamp, is written last: a consumer that reads a buffer before
the producer's signal sees an old stamp or old data.
"""

import mmap
import os
import struct
import tempfile
import time
from array import array

WORD = 8  # host ring: int64 words


class Lane:
    """A stream of one device: the framework's stream (``native``) and the
    evx stream on it (``evx``)."""

    def __init__(self, device, native, evx_stream):
        self.device = device
        self.native = native
        self.evx = evx_stream


class HostBackend:
    name = "host"

    def __init__(self, device):
        import evx
        self.evx = evx
        self.device = device
        self.dev = evx.Device(device)
        self._errors = []
        self._kept = []

    def describe(self):
        return "evx host emulation" if self.evx.is_emulation() else "device %d" % self.device

    def lane(self):
        s = self.dev.create_stream()
        return Lane(self.device, s, s)

    # --- the ring ---------------------------------------------------------
    def alloc_ring(self, slots, size):
        if size % WORD or size < 2 * WORD:
            raise ValueError("host ring: a buffer is a multiple of %d bytes, at least %d"
                             % (WORD, 2 * WORD))
        fd, path = tempfile.mkstemp(prefix="evx-pipeline-",
                                    dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
        os.ftruncate(fd, slots * size)
        ring = HostRing(path, slots, size, fd)
        for s in range(slots):
            ring.words(s)[-1] = -1  # no sequence yet
        return ring

    def share(self, ring):
        return ("host-ring", ring.path, ring.slots, ring.size)

    def open_ring(self, shared):
        kind, path, slots, size = shared
        if kind != "host-ring":
            raise ValueError("the host backend cannot open a %r ring" % (kind,))
        return HostRing(path, slots, size, os.open(path, os.O_RDWR))

    def local_buffer(self, size):
        return array("q", bytes(size))

    # --- the work ---------------------------------------------------------
    def fill(self, lane, ring, slot, seq, delay_s=0.0):
        words = ring.words(slot)
        n = len(words)
        body = array("q", [seq]) * (n - 1)

        def fill():
            if delay_s:
                time.sleep(delay_s)
            words[:n - 1] = body
            words[n - 1] = seq  # the stamp, last
        lane.evx.launch_host_func(fill, name="fill")

    def consume(self, lane, ring, slot, seq, dst):
        words = ring.words(slot)
        out = memoryview(dst)
        errors = self._errors

        def consume():
            stamp = words[-1]
            out[:] = words          # the "peer copy"
            if stamp != seq or dst.count(seq) != len(dst):
                errors.append((seq, stamp))
        lane.evx.launch_host_func(consume, name="consume")

    def errors(self):
        return len(self._errors)

    def error_samples(self):
        return self._errors[:5]

    # --- events -----------------------------------------------------------
    def ipc_event(self):
        return self.dev.create_event(timing=False, ipc=True)

    def event_handle(self, ev):
        return ev.ipc_handle

    def open_event(self, handle, exporter_device):
        # evx (like the driver for its streams) waits only for events of the
        # stream's device: open it on this process's device.
        return self.dev.open_ipc_event(handle)

    def record(self, ev, lane):
        lane.evx.record(ev)

    def wait_event(self, lane, ev):
        lane.evx.wait(ev)

    def host_sync(self, lane):
        """Records an event after the lane's work and blocks on it."""
        lane.evx.record().sync()

    def sync(self, lane):
        lane.evx.sync()


class HostRing:
    """Slots of ``size`` bytes in a file mapped by every process."""

    def __init__(self, path, slots, size, fd):
        self.path, self.slots, self.size = path, slots, size
        try:
            self._map = mmap.mmap(fd, slots * size)
        finally:
            os.close(fd)
        self._view = memoryview(self._map).cast("q")
        self._n = size // WORD

    def words(self, slot):
        return self._view[slot * self._n:(slot + 1) * self._n]

    def stamp(self, slot):
        return struct.unpack_from("q", self._map, (slot + 1) * self.size - WORD)[0]

    def unlink(self):
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


class TorchBackend:
    name = "torch"

    def __init__(self, device):
        import torch
        import evx
        if not torch.cuda.is_available():
            raise RuntimeError("the torch backend needs CUDA: torch.cuda.is_available() is "
                               "False (use --backend host on the emulation)")
        if device >= torch.cuda.device_count():
            raise RuntimeError("the torch backend was given device %d; torch sees %d"
                               % (device, torch.cuda.device_count()))
        self.torch, self.evx, self.device = torch, evx, device
        torch.cuda.set_device(device)
        self._err = torch.zeros((), dtype=torch.int64, device="cuda:%d" % device)
        # A stream of its own for each device this process copies from, so
        # that the cross-device copy runs on no default stream.
        self._side = {}
        # The exporter's device of each opened IPC event, and per device a
        # stream and a plain event that bridge a wait across devices.
        self._opened, self._bridge = {}, {}

    def describe(self):
        return self.torch.cuda.get_device_name(self.device)

    def lane(self):
        s = self.torch.cuda.Stream(device=self.device)
        return Lane(self.device, s, self.evx.Stream.wrap(s, device=self.device))

    def alloc_ring(self, slots, size):
        if size % 4 or size < 8:
            raise ValueError("torch ring: a buffer is a multiple of 4 bytes, at least 8")
        ring = self.torch.full((slots, size // 4), -1.0, dtype=self.torch.float32,
                               device="cuda:%d" % self.device)
        self.torch.cuda.synchronize(self.device)
        return ring

    def share(self, ring):
        return ("torch-ring", ring)  # pickled by torch.multiprocessing: CUDA IPC

    def open_ring(self, shared):
        kind, ring = shared
        if kind != "torch-ring":
            raise ValueError("the torch backend cannot open a %r ring" % (kind,))
        src = ring.device.index
        if src != self.device and src not in self._side:
            self._side[src] = self.torch.cuda.Stream(device=src)
            self.torch.cuda.set_stream(self._side[src])
            self.torch.cuda.set_device(self.device)
        return ring

    def local_buffer(self, size):
        return self.torch.empty(size // 4, dtype=self.torch.float32,
                                device="cuda:%d" % self.device)

    def fill(self, lane, ring, slot, seq, delay_s=0.0):
        with self.torch.cuda.stream(lane.native):
            buf = ring[slot]
            buf[:-1].fill_(float(seq))
            buf[-1:].fill_(float(seq))  # the stamp, last

    def consume(self, lane, ring, slot, seq, dst):
        with self.torch.cuda.stream(lane.native):
            # Across devices torch copies on the source device's current
            # stream, ordered after and before this one by events.
            dst.copy_(ring[slot], non_blocking=True)
            self._err += (dst != float(seq)).any()

    def errors(self):
        return int(self._err.item())

    def error_samples(self):
        return []

    def ipc_event(self):
        return self.torch.cuda.Event(interprocess=True)

    def event_handle(self, ev):
        return ev.ipc_handle()

    def open_event(self, handle, exporter_device):
        # Opened on the exporter's device, as torch.multiprocessing opens the
        # events that guard the CUDA tensors it sends.
        ev = self.torch.cuda.Event.from_ipc_handle(exporter_device, handle)
        self._opened[id(ev)] = exporter_device
        return ev

    def record(self, ev, lane):
        ev.record(lane.native)

    def wait_event(self, lane, ev):
        """A stream of the event's device waits for it, and the lane waits
        for that stream through a plain event. On two H100s (driver
        580.159.04) a stream of device 1 waiting directly for an IPC event
        opened on device 0 stopped the consumer for good, and the driver
        transcripts show such waits crashing it (SIGSEGV)."""
        dev = self._opened.get(id(ev), lane.device)
        if dev == lane.device:
            ev.wait(lane.native)
            return
        if dev not in self._bridge:
            self._bridge[dev] = (self.torch.cuda.Stream(device=dev), self.torch.cuda.Event())
        stream, local = self._bridge[dev]
        ev.wait(stream)
        local.record(stream)
        local.wait(lane.native)

    def host_sync(self, lane):
        ev = self.torch.cuda.Event()
        ev.record(lane.native)
        ev.synchronize()

    def sync(self, lane):
        lane.native.synchronize()


def make(name, device):
    if name == "host":
        return HostBackend(device)
    if name == "torch":
        return TorchBackend(device)
    raise ValueError("unknown backend %r (host or torch)" % (name,))
