#!/usr/bin/env python3
"""Benchmark: the data-plane loop's own cost, one thread vs receive threads + a worker.

Runs the p4switch port/traffic-manager machinery in-process with a pass-through pipeline
(port 1 -> port 2, no P4), so the figures are the ceiling the switch loop allows before any P4
work. Design A is p4switch's: one thread, epoll over the port sockets. Design B: one receive
thread per port feeding a queue.Queue drained by a pipeline thread. Prints the highest paced
rate each design forwards without loss (64 B frames).

    sudo .venv/bin/python bench/switch_threads.py [--rates 20000,40000,...]
"""

from __future__ import annotations

import argparse
import os
import queue
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "bench")]

from switch_pps import Bench, run_rate  # noqa: E402

from p4switch.switch.dataplane import Dataplane  # noqa: E402
from p4switch.switch.ports import RawPort  # noqa: E402
from p4switch.switch.tm import TrafficManager  # noqa: E402


class Item:
    __slots__ = ("data", "egress_port", "priority")

    def __init__(self, data: bytes):
        self.egress_port, self.priority, self.data = 2, 0, data


class PassThrough:
    """Stands in for the engine: everything from port 1 goes to port 2."""

    def ingress(self, port: int, data: bytes) -> list[Item]:
        return [Item(data)] if port == 1 else []

    def egress(self, item: Item, *queue_fields: int):
        return [(item.egress_port, item.data)], []


class FakeDevice:
    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.engine = PassThrough()
        self.cpu_port = None
        self.start = time.monotonic()

    def on_install(self, listener) -> None:
        pass


def design_a(ports: dict[int, RawPort]):
    dp = Dataplane(FakeDevice(), ports, TrafficManager())
    t = threading.Thread(target=dp.run)
    t.start()
    return lambda: (dp.stop(), t.join())


def design_b(ports: dict[int, RawPort]):
    q: queue.Queue = queue.Queue(maxsize=10000)
    stop = threading.Event()
    engine, tm, lock = PassThrough(), TrafficManager(), threading.Lock()

    def receiver(port: RawPort) -> None:
        import select

        while not stop.is_set():
            if select.select([port.sock], [], [], 0.05)[0]:
                for frame in port.recv_batch():
                    q.put((port.number, frame))

    def worker() -> None:
        while not stop.is_set():
            try:
                port, frame = q.get(timeout=0.05)
            except queue.Empty:
                continue
            with lock:
                now = time.monotonic()
                for item in engine.ingress(port, frame):
                    tm.enqueue(item.egress_port, item.priority, item, now)
                for _port, _, item, *_ in tm.dequeue_due(now):
                    for p, data in engine.egress(item)[0]:
                        ports[p].send(data)

    threads = [threading.Thread(target=receiver, args=(p,)) for p in ports.values()]
    threads.append(threading.Thread(target=worker))
    for t in threads:
        t.start()
    return lambda: (stop.set(), [t.join() for t in threads])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rates", default="10000,20000,30000,40000,50000,60000,80000")
    p.add_argument("--seconds", type=float, default=1.0)
    args = p.parse_args()
    if os.geteuid() != 0:
        print("switch_threads: needs root", file=sys.stderr)
        return 1
    bench = Bench()
    try:
        p1, p2 = bench.setup()
        for name, design in (("A single thread (epoll)", design_a),
                             ("B receive threads + worker", design_b)):
            ports = {1: RawPort(1, p1), 2: RawPort(2, p2)}
            stop = design(ports)
            best = 0
            try:
                for rate in (int(r) for r in args.rates.split(",")):
                    sent, received = run_rate(bench.ns[0], bench.ns[1], rate, args.seconds, 64)
                    print(f"  {name}: offered {rate} pps, sent {sent}, received {received}")
                    if received != sent:
                        break  # the highest rate before the first loss is the figure
                    best = rate
            finally:
                stop()
                for port in ports.values():
                    port.close()
            print(f"{name}: max rate without loss {best} pps")
    finally:
        bench.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
