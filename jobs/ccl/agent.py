"""One rank's agent: a process in its NIC's namespace that holds the rank's engine (jobs/ccl/c)
for the communicator's whole life. The controller (`jobs.ccl.communicator`) drives it with
JSON lines; nothing of a run passes through here but its launch and its result.

    python -m jobs.ccl.agent
stdin, one request per line, each answered by one event line on stdout:
    {"op": "setup", ...}   ports, peers, NVLink paths, transport settings -> "listening"
    {"op": "connect"}      NVLink streams to the server's other GPUs; the engine starts -> "ready"
    {"op": "load", "id": K, "plan": {...}}  (jobs.ccl.plan.RankPlan.pack()) -> "loaded", with
                           where its arena is ({"pid", "fd", "size"}: a memfd the server's
                           other GPUs map as /proc/PID/fd/FD)
    {"op": "attach", "id": K, "peers": {RANK: {"pid", "fd", "size"}}}  their arenas -> "attached"
    {"op": "arm", "id": K, "run": {...}}    input filled if asked -> "armed"
    {"op": "go", "start_ns": T}             the run starts at T (CLOCK_REALTIME) -> "result"
    {"op": "read", "id": K, "offset": O, "length": L}  arena bytes (tests) -> "data"
    {"op": "unload", "id": K} -> "unloaded";  {"op": "quit"}
Errors answer {"event": "error", "message": ...}; SIGTERM stops the engine and the process.
"""

from __future__ import annotations

import base64
import ctypes
import json
import mmap
import os
import select
import signal
import socket
import struct
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from jobs.ccl import native
from traffic import bpf, netutil
from traffic.headers import TAG_IP_PROTO

RCVBUF = 8 << 20  # a port's socket holds this much while the engine is off the CPU
SNDBUF = 4 << 20
ETH_P_ALL = 0x0003
PACKET_VNET_HDR = 15  # sends carry a virtio_net_hdr: whole frames as one buffer (fabric.c)


def _mac(text: str) -> bytes:
    return bytes(int(b, 16) for b in text.split(":"))


def _ip(text: str) -> int:
    return int.from_bytes(socket.inet_aton(text), sys.byteorder)


class AgentError(Exception):
    pass


class Agent:
    def __init__(self) -> None:
        self.lib = native.library()
        self.engine: int | None = None
        self.socks: list[socket.socket] = []  # per port: receives
        self.tx_socks: list[socket.socket] = []  # per port: sends
        self.sinks: list[socket.socket] = []
        self.listener: socket.socket | None = None
        self.streams: dict[int, socket.socket] = {}
        self.setup: dict[str, Any] = {}
        self.plans: dict[int, int] = {}  # controller's id -> engine's
        self.arenas: dict[int, tuple[int, Mapping]] = {}  # controller's id -> (memfd, map)
        self.peer_maps: dict[int, list[Mapping]] = {}  # controller's id -> peers' arenas
        self.run_buffers: tuple[Any, Any] | None = None
        self.run_shape: tuple[int, int] = (0, 0)

    # ---- requests ------------------------------------------------------------------------
    def handle(self, req: dict[str, Any]) -> dict[str, Any] | None:
        op = req.get("op")
        if op == "setup":
            return self.do_setup(req)
        if op == "connect":
            return self.do_connect()
        if op == "load":
            return self.do_load(req)
        if op == "arm":
            return self.do_arm(req)
        if op == "go":
            return self.do_go(req)
        if op == "read":
            return self.do_read(req)
        if op == "attach":
            return self.do_attach(req)
        if op == "unload":
            self.unload(int(req["id"]))
            return {"event": "unloaded"}
        if op == "quit":
            return None
        raise AgentError(f"unknown op {op!r}")

    def do_setup(self, req: dict[str, Any]) -> dict[str, Any]:
        netutil.tight_timers()
        self.setup = req
        for port in req["ports"]:
            s = netutil.packet_socket(port["iface"], ETH_P_ALL, rcvbuf=RCVBUF)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SNDBUF)
            bpf.attach(s, bpf.roce_receiver_filter(pause=True))
            s.setblocking(False)
            netutil.drain(s)
            self.socks.append(s)
            tx = netutil.packet_socket(port["iface"])  # sends only
            tx.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SNDBUF)
            tx.setsockopt(netutil.SOL_PACKET, PACKET_VNET_HDR, 1)
            self.tx_socks.append(tx)
        self.sinks = netutil.kernel_sinks(TAG_IP_PROTO)  # no ICMP unreachables back
        path = req.get("nvlink_path")
        if path:
            Path(path).unlink(missing_ok=True)
            self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.listener.bind(path)
            self.listener.listen(64)
        return {"event": "listening", "pid": os.getpid()}

    def do_connect(self) -> dict[str, Any]:
        rank = int(self.setup["rank"])
        peers: dict[str, str] = self.setup.get("nvlink_peers", {})
        for peer, path in sorted(peers.items(), key=lambda kv: int(kv[0])):
            if int(peer) > rank:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(path)
                s.sendall(struct.pack("!I", rank))
                self.streams[int(peer)] = s
        lower = [int(p) for p in peers if int(p) < rank]
        deadline = time.monotonic() + 20
        while len([p for p in lower if p in self.streams]) < len(lower):
            assert self.listener is not None
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.listener], [], [], left)[0]:
                raise AgentError(f"rank {rank}: NVLink peers {lower} did not all connect")
            s, _ = self.listener.accept()
            s.settimeout(5)
            (who,) = struct.unpack("!I", s.recv(4, socket.MSG_WAITALL))
            s.settimeout(None)
            self.streams[who] = s
        for s in self.streams.values():
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SNDBUF)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SNDBUF)
        self.engine = self._engine()
        return {"event": "ready"}

    def _engine(self) -> int:
        st = self.setup
        t = st["transport"]
        cfg = native.Config(rank=st["rank"], nranks=st["nranks"], nports=len(self.socks),
                            mtu=t["mtu"], ip=_ip(st["ip"]), credits=t["credits"],
                            ack_every=t["ack_every"], max_retries=t["max_retries"],
                            rto_s=t["rto_s"], nvlink_bps=t["nvlink_bps"], dscp=t["dscp"],
                            prio=t["prio"], stop_fd=-1)
        for k, (s, tx, port) in enumerate(zip(self.socks, self.tx_socks, st["ports"],
                                              strict=True)):
            cfg.ports[k] = native.Port(fd=s.fileno(), tx_fd=tx.fileno(),
                                       rate_bps=port["rate_bps"],
                                       mac=(native.u8 * 6)(*_mac(netutil.interface_mac(
                                           port["iface"]))))
        peers = (native.Peer * st["nranks"])()
        for r, p in enumerate(st["peers"]):
            stream = self.streams.get(r)
            peers[r] = native.Peer(ip=_ip(p["ip"]), nvlink_fd=stream.fileno() if stream else -1,
                                   mac=(native.u8 * 6)(*_mac(p["mac"])))
        err = ctypes.create_string_buffer(256)
        engine = self.lib.ccl_new(ctypes.byref(cfg), peers, err, len(err))
        if not engine:
            raise AgentError(err.value.decode())
        if self.lib.ccl_start(engine):
            raise AgentError("the engine's thread did not start")
        return engine

    def do_load(self, req: dict[str, Any]) -> dict[str, Any]:
        p = req["plan"]
        arrays = {name: base64.b64decode(p[name])
                  for name in ("conns", "ops", "succ", "fifo", "expect", "contrib")}
        keep = {name: ctypes.create_string_buffer(data, max(1, len(data)))
                for name, data in arrays.items()}

        def ptr(name: str, kind: type) -> Any:
            return ctypes.cast(keep[name], ctypes.POINTER(kind))

        desc = native.Plan(nops=p["nops"], nconns=p["nconns"], nsucc=p["nsucc"],
                           nfifo=p["nfifo"], nexpect=p["nexpect"], ncontrib=p["ncontrib"],
                           dtype=p["dtype"], redop=p["redop"], group=p["group"],
                           arena=p["arena"], in_=p["in"], in_count=p["in_count"], out=p["out"],
                           out_count=p["out_count"], conns=ptr("conns", native.Conn),
                           ops=ptr("ops", native.Op), succ=ptr("succ", native.u32),
                           fifo=ptr("fifo", native.u32), expect=ptr("expect", native.Expect),
                           contrib=ptr("contrib", native.u32))
        size = int(p["arena"])
        fd = os.memfd_create(f"ccl-arena-{req['id']}")
        os.ftruncate(fd, max(1, size))
        arena = Mapping(fd, size, writable=True)
        desc.arena_at = arena.address
        err = ctypes.create_string_buffer(256)
        eid = self.lib.ccl_load(self.engine, ctypes.byref(desc), err, len(err))
        if eid < 0:
            arena.close()
            os.close(fd)
            raise AgentError(f"plan refused: {err.value.decode()}")
        self.plans[int(req["id"])] = eid
        self.arenas[int(req["id"])] = (fd, arena)
        return {"event": "loaded", "id": req["id"], "pid": os.getpid(), "fd": fd, "size": size}

    def do_attach(self, req: dict[str, Any]) -> dict[str, Any]:
        """Map the arenas of the server's other GPUs (the same plan): NVLink reads them."""
        pid = int(req["id"])
        maps = self.peer_maps.setdefault(pid, [])
        for peer, where in req["peers"].items():
            fd = os.open(f"/proc/{where['pid']}/fd/{where['fd']}", os.O_RDONLY)
            try:
                m = Mapping(fd, int(where["size"]), writable=False)
            finally:
                os.close(fd)
            maps.append(m)
            if self.lib.ccl_attach(self.engine, self.plans[pid], int(peer), m.address,
                                   int(where["size"])):
                raise AgentError(f"cannot attach rank {peer}'s arena now")
        return {"event": "attached"}

    def unload(self, pid: int) -> None:
        eid = self.plans.pop(pid, None)
        if eid is not None:
            self.lib.ccl_unload(self.engine, eid)
        for m in self.peer_maps.pop(pid, []):
            m.close()
        if pid in self.arenas:
            fd, arena = self.arenas.pop(pid)
            arena.close()
            os.close(fd)

    def _wait(self, state: int, timeout: float) -> None:
        fd = self.lib.ccl_event_fd(self.engine)
        deadline = time.monotonic() + timeout
        while self.lib.ccl_state(self.engine) != state:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AgentError(f"the engine did not reach state {state} in {timeout:g} s")
            if select.select([fd], [], [], min(left, 1.0))[0]:
                os.read(fd, 64)

    def do_arm(self, req: dict[str, Any]) -> dict[str, Any]:
        r = req["run"]
        eid = self.plans[int(req["id"])]
        iterations, nops = int(r["iterations"]), int(r.get("nops", 0))
        iter_end = (native.u64 * max(1, iterations))()
        records = (native.u64 * max(1, iterations * nops * 2))() if r.get("record") else None
        self.run_buffers = (iter_end, records)
        self.run_shape = (iterations, nops)
        flags = ((native.INIT if r.get("init") else 0) | (native.CHECK if r.get("check") else 0)
                 | (native.RECORD if records is not None else 0))
        run = native.Run(plan=eid, iterations=iterations, run_id=r["run_id"], flags=flags,
                         seed=r.get("seed", 0), timeout_s=r["timeout_s"])
        if self.lib.ccl_arm(self.engine, ctypes.byref(run), iter_end, records):
            raise AgentError("the engine cannot arm a run now")
        self._wait(native.ARMED, 60)
        return {"event": "armed"}

    def do_go(self, req: dict[str, Any]) -> dict[str, Any]:
        if self.lib.ccl_go(self.engine, int(req["start_ns"])):
            raise AgentError("no run is armed")
        self._wait(native.FINISHED, float(req.get("wait_s", 3600)))
        res = native.Result()
        self.lib.ccl_result(self.engine, ctypes.byref(res))
        assert self.run_buffers is not None
        iter_end, records = self.run_buffers
        iterations, nops = self.run_shape
        out = {"event": "result", "status": native.STATUS.get(res.status, str(res.status)),
               "iterations": res.iterations, "start_ns": res.start_ns, "end_ns": res.end_ns,
               "wrong": res.wrong, "pending": res.pending, "stats": res.stats.as_dict(),
               "error": res.error.decode(errors="replace"),
               "iter_end": list(iter_end)[:iterations]}
        if records is not None:
            out["records"] = base64.b64encode(bytes(records)).decode()
        self.run_buffers = None
        drops = sum(netutil.socket_drops(s) for s in self.socks)
        out["socket_drops"] = drops
        return out

    def do_read(self, req: dict[str, Any]) -> dict[str, Any]:
        if self.lib.ccl_state(self.engine) != native.IDLE:
            raise AgentError("cannot read the arena during a run")
        _, arena = self.arenas[int(req["id"])]
        data = arena.read(int(req["offset"]), int(req["length"]))
        return {"event": "data", "b64": base64.b64encode(data).decode()}

    def close(self) -> None:
        if self.engine:
            self.lib.ccl_free(self.engine)
            self.engine = None
        for pid in list(self.arenas):
            self.unload(pid)
        for s in [*self.socks, *self.tx_socks, *self.sinks, *self.streams.values()]:
            s.close()
        if self.listener is not None:
            path = self.setup.get("nvlink_path")
            self.listener.close()
            if path:
                Path(path).unlink(missing_ok=True)


class Mapping:
    """A shared mapping of a file (an arena): its address, for the engine; unmapped by close."""

    _libc = ctypes.CDLL(None, use_errno=True)
    _libc.mmap.restype = ctypes.c_void_p
    _libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                           ctypes.c_int, ctypes.c_long]
    _libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]

    def __init__(self, fd: int, size: int, writable: bool) -> None:
        self.size = max(1, size)
        prot = mmap.PROT_READ | (mmap.PROT_WRITE if writable else 0)
        address = self._libc.mmap(None, self.size, prot, mmap.MAP_SHARED, fd, 0)
        if address in (None, ctypes.c_void_p(-1).value):
            raise AgentError(f"mmap of {size} bytes failed: {os.strerror(ctypes.get_errno())}")
        self.address: int = address

    def read(self, at: int, n: int) -> bytes:
        if at < 0 or n < 0 or at + n > self.size:
            raise AgentError(f"bytes {at}..{at + n} are outside the arena ({self.size} B)")
        return ctypes.string_at(self.address + at, n)

    def close(self) -> None:
        if self.address:
            self._libc.munmap(self.address, self.size)
            self.address = 0


def _emit(out: TextIO, event: dict[str, Any]) -> None:
    out.write(json.dumps(event) + "\n")
    out.flush()


def main(stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout) -> int:
    def stop(*_: object) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    try:
        agent = Agent()
    except native.EngineError as e:
        _emit(stdout, {"event": "error", "message": str(e)})
        return 1
    try:
        _emit(stdout, {"event": "started", "pid": os.getpid()})
        for line in stdin:
            if not line.strip():
                continue
            try:
                answer = agent.handle(json.loads(line))
            except (AgentError, OSError, KeyError, ValueError, TypeError) as e:
                answer = {"event": "error", "message": f"{type(e).__name__}: {e}"}
            if answer is None:
                break
            _emit(stdout, answer)
    finally:
        agent.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
