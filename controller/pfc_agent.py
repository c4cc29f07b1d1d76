"""PFC on the control side: the PFC watchdog, and the pause agent of targets that cannot pause.

The runtime CLI of each switch is the target's client (`targets.Target.cli`, see
targets/runtime_cli.py): p4switch's own channel, or one long-lived `simple_switch_CLI`.

**PfcWatchdog** (SONiC/Juniper-style): every `poll_s` it asks whether each
watched (switch, port, priority) queue is paused; paused for `storm_s` without a break is a PFC
storm (a peer that never stops pausing, or a deadlock). Given `backlog` ((depth, packets sent)
of a queue) it has SONiC's stricter test: stuck only if the queue also held packets and sent
none for the whole `storm_s` (a long but moving pause is not a storm). Action "drop": the queue's depth is set
to 0, so its traffic is dropped instead of backing up the fabric, and (given `pfc_off`) the
queue's own PFC is switched off (`congestion.set_port_pfc`), so it stops pausing its upstream;
after `restore_s` without pause the depth and PFC come back. Every storm and restore is
an event with its time. Where the traffic manager pauses (`Capabilities.can_pause_queues`,
p4switch) "paused" is its own state (`queue_stats`); on BMv2 it is what the pause agent applied.
p4switch also has the watchdog in its traffic manager (`pfc_watchdog` on its runtime CLI,
p4switch/switch/pfc_watchdog.py), which acts within its poll interval and drops in the data
path; this one is for targets without it (BMv2, where a paused queue is only slowed and a
cycle of them never deadlocks: docs/mechanisms/pfc-deadlock.md).

**PauseAgent** (targets that cannot pause queues: BMv2). The program punts received PFC frames
to the controller (`pfc_rx_mode` default `punt_pfc_frames`, i.e.
`CongestionConfig(punt_pfc=True)`); the agent reads them as P4Runtime packet-ins and, for the
pause time (quanta x 512 / link rate, extended by every refresh, ended by XON), sets the queue
rate of that (port, priority) to the paused rate, then restores the configured rate.

Why a slower queue and not a stopped one: BMv2 (`bm_sim/queueing.h`, QueueingLogicPriRL) gives
each packet its departure time when it is enqueued, `send = max(now, last_send + 1/rate)`, and
a rate change only applies to packets enqueued after it. So (1) a pause cannot hold back what
is already queued: up to the queue depth still leaves at the old rate, which the downstream's
headroom must absorb; (2) every packet enqueued while "paused" keeps its slow spacing after the
rate is restored. A paused rate of 1 packet/s would keep a full 64-packet queue stuck for a
minute after the pause ended; the agent therefore uses `paused_share` of the configured rate
(default 1/10), which must stay below what the downstream queue drains for the pause to relieve
it. The result is lossless as long as the headroom holds, but it is rate limiting, not a pause:
the queue trickles during the pause and drains slowly for up to depth / paused rate after it.
The runtime CLI is one long-lived `simple_switch_CLI` per switch, started before the agents
serve, so a pause (the first one too) applies within a few milliseconds of the frame.
`paused_time` is the time each queue spent at the paused rate (BMv2 reports no pause state of
its own). p4switch honours pause in its traffic manager at the port and needs no agent.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from controller.periodic import Periodic
from mechanisms import pfc
from targets import RuntimeCli, RuntimeCliError

QueueKey = tuple[str, int, int]  # (switch, port, priority)


@dataclass
class WatchdogEvent:
    t: float  # epoch seconds
    switch: str
    port: int
    priority: int
    kind: str  # "storm" | "restore"


@dataclass
class _Watch:
    paused_since: float | None = None
    clear_since: float | None = None
    storming: bool = False
    sent_at_pause: int | None = None  # packets sent when the pause began (with `backlog`)


@dataclass
class PfcWatchdog:
    """Polls `is_paused(switch, port, prio)`; on a storm calls `set_depth(switch, port, prio, 0)`
    and later `set_depth(..., restore_depth)`."""

    queues: Iterable[QueueKey]
    is_paused: Callable[[str, int, int], bool]
    set_depth: Callable[[str, int, int, int], None]
    restore_depth: int = 64
    # optional: stop / resume the queue's own PFC (its pauses to the upstream) during a storm
    pfc_off: Callable[[str, int], None] | None = None
    pfc_on: Callable[[str, int], None] | None = None
    # optional: (depth, packets sent so far) of a queue: stuck needs a backlog that never moves
    backlog: Callable[[str, int, int], tuple[int, int]] | None = None
    poll_s: float = 0.1
    storm_s: float = 0.2
    restore_s: float = 0.2
    clock: Callable[[], float] = time.monotonic
    events: list[WatchdogEvent] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.queues = list(self.queues)
        self._state = {key: _Watch() for key in self.queues}
        self.errors: list[str] = []
        self._loop = Periodic("pfc-watchdog", self.poll_s, self.poll,
                              errors=(RuntimeCliError, OSError, ValueError),
                              on_error=lambda err: self.errors.append(str(err)))

    @property
    def storms(self) -> int:
        return sum(e.kind == "storm" for e in self.events)

    def poll(self) -> None:
        """One round over every watched queue."""
        now = self.clock()
        for key in self.queues:
            watch = self._state[key]
            paused = self.is_paused(*key)
            if paused and self.backlog is not None and not watch.storming:
                depth, sent = self.backlog(*key)
                if depth == 0:
                    paused = False  # nothing waits: not stuck
                elif sent != watch.sent_at_pause:
                    watch.sent_at_pause = sent  # first seen, or it moved: detection restarts
                    watch.paused_since = None
            if paused:
                watch.clear_since = None
                if watch.paused_since is None:
                    watch.paused_since = now
                if not watch.storming and now - watch.paused_since >= self.storm_s:
                    watch.storming = True
                    self.set_depth(*key, 0)
                    if self.pfc_off is not None:
                        self.pfc_off(key[0], key[1])
                    self.events.append(WatchdogEvent(time.time(), *key, "storm"))
            else:
                watch.paused_since = watch.sent_at_pause = None
                if watch.clear_since is None:
                    watch.clear_since = now
                if watch.storming and now - watch.clear_since >= self.restore_s:
                    watch.storming = False
                    self.set_depth(*key, self.restore_depth)
                    if self.pfc_on is not None:
                        self.pfc_on(key[0], key[1])
                    self.events.append(WatchdogEvent(time.time(), *key, "restore"))

    def start(self) -> PfcWatchdog:
        self._loop.start()
        return self

    def stop(self) -> None:
        self._loop.stop()


def p4switch_watchdog(channels: dict[str, RuntimeCli], queues: Iterable[QueueKey],
                      stuck_needs_backlog: bool = False, **kwargs) -> PfcWatchdog:
    """A watchdog over queues of a traffic manager that pauses them and reports it
    (p4switch): pause state (and with `stuck_needs_backlog`, depth and dequeued: SONiC's
    test) from `queue_stats`, depth over the CLI."""
    def is_paused(switch: str, port: int, prio: int) -> bool:
        return bool(channels[switch].queue_stats(port, prio)["paused"])

    def backlog(switch: str, port: int, prio: int) -> tuple[int, int]:
        stats = channels[switch].queue_stats(port, prio)
        return int(stats["depth"]), int(stats["dequeued"])

    if stuck_needs_backlog:
        kwargs["backlog"] = backlog

    def set_depth(switch: str, port: int, prio: int, depth: int) -> None:
        channels[switch].command(f"set_queue_depth {depth} {port} {prio}")

    return PfcWatchdog(queues, is_paused, set_depth, **kwargs)


# ---- BMv2 pause agent ------------------------------------------------------------------------
_PFC_TYPE_OPCODE = (pfc.ETHERTYPE_MAC_CONTROL << 16 | pfc.PFC_OPCODE).to_bytes(4, "big")


def parse_punted_pfc(payload: bytes) -> dict[int, int] | None:
    """priority -> quanta of a punted PFC frame (the packet-in payload is the frame)."""
    if len(payload) < 34 or payload[12:16] != _PFC_TYPE_OPCODE:
        return None
    enabled = int.from_bytes(payload[16:18], "big")
    return {p: int.from_bytes(payload[18 + 2 * p:20 + 2 * p], "big")
            for p in range(8) if enabled >> p & 1}


@dataclass
class PauseAgent:
    """Applies punted PFC frames of one BMv2 switch as queue-rate changes (see module doc)."""

    set_rate: Callable[[int, int, int], None]  # (port, priority, pps)
    link_bps: float
    normal_pps: Callable[[int, int], int]  # the queue rate to restore, per (port, priority)
    paused_share: float = 0.1  # the paused rate as a share of normal_pps (at least 1 pps)
    clock: Callable[[], float] = time.monotonic
    until: dict[tuple[int, int], float] = field(default_factory=dict)
    frames: int = 0

    def __post_init__(self) -> None:
        if not 0 < self.paused_share < 1:
            raise ValueError(f"paused_share must be in (0, 1), got {self.paused_share}")
        self._since: dict[tuple[int, int], float] = {}
        self._paused_s: dict[tuple[int, int], float] = {}
        self._lock = threading.Lock()
        self.errors: list[str] = []  # runtime-CLI failures while serving (run() carries on)

    def paused_pps(self, port: int, prio: int) -> int:
        """The paused rate; for an unlimited queue (rate 0) a share of the link's 1 KB frames."""
        normal = self.normal_pps(port, prio) or self.link_bps / (1024 * 8)
        return max(1, round(normal * self.paused_share))

    def on_frame(self, port: int, payload: bytes) -> bool:
        quanta = parse_punted_pfc(payload)
        if quanta is None:
            return False
        self.frames += 1
        now = self.clock()
        for prio, q in quanta.items():
            key = (port, prio)
            if q == 0:
                if key in self.until:
                    self._resume(key, now)
                continue
            if key not in self.until:
                self.set_rate(port, prio, self.paused_pps(port, prio))
                with self._lock:
                    self._since[key] = now
            self.until[key] = now + pfc.pause_seconds(q, self.link_bps)
        return True

    def _resume(self, key: tuple[int, int], now: float) -> None:
        self.set_rate(*key, self.normal_pps(*key))  # first: if it fails, expire() tries again
        del self.until[key]
        with self._lock:
            since = self._since.pop(key)
            self._paused_s[key] = self._paused_s.get(key, 0.0) + max(0.0, now - since)

    def expire(self) -> None:
        """Restore the rate of queues whose pause ran out."""
        now = self.clock()
        for key, until in list(self.until.items()):
            if until <= now:
                self._resume(key, until)

    def is_paused(self, port: int, prio: int) -> bool:
        return (port, prio) in self.until

    def paused_time(self, port: int, prio: int) -> float:
        """Seconds the queue has spent at the paused rate so far (the current pause included)."""
        with self._lock:
            since = self._since.get((port, prio))
            done = self._paused_s.get((port, prio), 0.0)
        return done + (max(0.0, self.clock() - since) if since is not None else 0.0)

    def run(self, packet_ins: queue.Queue, stop: threading.Event,
            port_of: Callable[[p4runtime_pb2.PacketIn], int], tick_s: float = 0.005) -> None:
        """Serve a P4RuntimeClient's `packet_ins` queue until `stop` is set."""
        while not stop.is_set():
            try:
                packet = packet_ins.get(timeout=tick_s)
            except queue.Empty:
                packet = None
            try:
                if packet is not None:
                    self.on_frame(port_of(packet), packet.payload)
                self.expire()
            except (RuntimeCliError, OSError) as err:
                self.errors.append(str(err))


def packet_in_port(p4info: p4info_pb2.P4Info) -> Callable[[p4runtime_pb2.PacketIn], int]:
    """Reads the ingress port out of a packet-in's `packet_in` controller header."""
    for header in p4info.controller_packet_metadata:
        if header.preamble.name == "packet_in":
            for meta in header.metadata:
                if meta.name == "ingress_port":
                    meta_id = meta.id
                    return lambda packet: next(
                        int.from_bytes(m.value, "big") for m in packet.metadata
                        if m.metadata_id == meta_id)
    raise ValueError("the program has no packet_in controller header with an ingress_port")


class PauseAgents:
    """A PauseAgent per BMv2 switch of a FabricController, each serving its switch's
    packet-ins in a thread; queue rates go over `channels` (RuntimeCli per switch; give
    the agents channels of their own, so that a pause never waits behind a telemetry sample).
    Program the switches with `CongestionConfig(punt_pfc=True)` so PFC frames reach them."""

    def __init__(self, ctl, channels: dict[str, RuntimeCli], link_bps: float,
                 normal_pps: Callable[[str, int, int], int], paused_share: float = 0.1) -> None:
        port_of = packet_in_port(ctl.pipeline.p4info)
        self._stop = threading.Event()
        self.agents: dict[str, PauseAgent] = {}
        self._threads = []
        self._channels: list[RuntimeCli] = []
        for name, client in ctl.clients.items():
            channel = channels[name]
            self._channels.append(channel)

            def set_rate(port: int, prio: int, pps: int, ch: RuntimeCli = channel) -> None:
                ch.command(f"set_queue_rate {int(pps)} {port} {prio}")

            def normal(port: int, prio: int, sw: str = name) -> int:
                return normal_pps(sw, port, prio)

            agent = PauseAgent(set_rate, link_bps, normal, paused_share)
            self.agents[name] = agent
            self._threads.append(threading.Thread(
                target=agent.run, args=(client.packet_ins, self._stop, port_of),
                name=f"pause-agent-{name}", daemon=True))

    def is_paused(self, switch: str, port: int, prio: int) -> bool:
        """For the watchdog: what the agent applied."""
        return self.agents[switch].is_paused(port, prio)

    def paused_time(self, switch: str, port: int, prio: int) -> float:
        return self.agents[switch].paused_time(port, prio)

    @property
    def errors(self) -> list[str]:
        return [f"{name}: {err}" for name, agent in self.agents.items() for err in agent.errors]

    def start(self) -> PauseAgents:
        """Serve once every agent's runtime CLI is up: a CLI started by the first pause would
        hold that pause back for its start-up (~0.5 s for BMv2's, seconds on a busy machine)."""
        for channel in self._channels:
            channel.connect()
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(5)
