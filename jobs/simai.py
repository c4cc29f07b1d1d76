"""SimAI's workload text, as AICB writes it and SimAI's Workload.cc reads it
(aliyun/SimAI, astra-sim-alibabacloud/astra-sim/workload/Workload.cc).

    HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 ep: 1 pp: 2 vpp: 1 ga: 4 all_gpus: 16 pp_comm: 8388608
    3
    embedding_layer -1 622731 ALLREDUCE 50331648 1 NONE 0 15091072 NONE 0 100
    ...

Line 1: the parallelism policy, then `key: value` pairs (`pp_comm` with or without the colon);
line 2: the number of layer lines; then one layer a line: its name, a reserved dependency (-1),
and for the forward pass, the input gradient and the weight gradient a compute time, a collective
type and a size, then the weight update's time. Times are SimAI ticks (1 ns: Common.hh's
CLOCK_PERIOD), sizes bytes (read as nccl-tests sizes: the all-reduce buffer, the all-gather
output, the reduce-scatter input, what a rank sends in all in an all-to-all).

A collective's group is the one Workload.cc gives it: a plain type (ALLREDUCE, ALLGATHER,
REDUCESCATTER, ALLTOALL) runs on the tensor-parallel group in the forward pass and the input
gradient, on the data-parallel group in the weight gradient; `_EP` on the expert-parallel group,
`_DP_EP` on the experts' data-parallel group (DP / EP ranks), in any phase.

The ranks are laid out as Megatron-LM does (jobs/workload.py): tensor-parallel ranks adjacent,
then data-parallel, then pipeline stages; an expert-parallel group is EP consecutive members of
a data-parallel group, an expert-data-parallel group the members EP apart. (SimAI itself builds
its network groups with one pipeline stage, DP = all_gpus / TP: Sys.cc; the lab keeps the stages
as pipeline ranks that pass `pp_comm` bytes between them.)

`read` checks everything at once and names every fault `file:line:col`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

from jobs.workload import MAX_FILE_BYTES, MAX_SIZE, Parallelism, WorkloadError
from topos.errors import InputError
from topos.values import MAX_LISTED

POLICIES = ("HYBRID_TRANSFORMER_FWD_IN_BCKWD", "HYBRID_TRANSFORMER", "DATA", "MICRO")
COLLECTIVES = {"ALLREDUCE": "all_reduce", "ALLGATHER": "all_gather",
               "REDUCESCATTER": "reduce_scatter", "ALLTOALL": "alltoall"}
GROUPS = ("tp", "dp", "ep", "dp_ep")
HEADER_KEYS = {"model_parallel_NPU_group": "tp", "ep": "ep", "pp": "pp", "vpp": "vpp",
               "ga": "ga", "all_gpus": "all_gpus", "pp_comm": "pp_comm"}
LIST_KEYS = ("checkpoints", "checkpoint_initiates")  # a count, then that many layer numbers
LAYER_FIELDS = 12
MAX_TICKS = 10 ** 15  # 11.6 days of compute in one phase: beyond any layer
MAX_LAYERS = 100_000


class SimaiError(WorkloadError):
    """A SimAI workload with faults: `errors` lists them all, each `file:line:col: error: ...`
    as p4c writes them; the message gives the first MAX_LISTED."""

    def __init__(self, source: str, errors: list[str]) -> None:
        self.source, self.errors = source, errors
        more = len(errors) - MAX_LISTED
        InputError.__init__(self, "\n".join(errors[:MAX_LISTED])
                            + (f"\n({more} more)" if more > 0 else ""))


@dataclass(frozen=True)
class Phase:
    """One phase of a layer: compute, then (if any) a collective on one group."""

    compute_ns: int
    collective: str | None  # "all_reduce", "all_gather", "reduce_scatter", "alltoall"
    group: str | None  # "tp", "dp", "ep", "dp_ep"
    bytes: int


@dataclass(frozen=True)
class Layer:
    name: str
    line: int
    forward: Phase
    input_grad: Phase
    weight_grad: Phase
    update_ns: int


@dataclass(frozen=True)
class SimaiWorkload:
    source: str
    policy: str
    tp: int
    ep: int
    pp: int
    vpp: int
    ga: int  # gradient accumulation: microbatches per iteration
    all_gpus: int  # 0: not given (DATA, MICRO): the fabric's (`fit`)
    pp_comm_bytes: int  # what one stage sends the next per microbatch
    layers: tuple[Layer, ...]
    ignored: tuple[str, ...] = ()  # header `key: value` pairs SimAI does not read either

    @property
    def dp(self) -> int:
        return self.all_gpus // (self.tp * self.pp)

    @property
    def parallelism(self) -> Parallelism:
        return Parallelism(data=self.dp, tensor=self.tp, pipeline=self.pp, expert=self.ep)

    def rank(self, stage: int, dp: int, tp: int) -> int:
        return (stage * self.dp + dp) * self.tp + tp

    def groups(self, group: str) -> tuple[tuple[int, ...], ...]:
        """The rank groups of one of GROUPS (disjoint, covering every rank)."""
        t, d, p, e = self.tp, self.dp, self.pp, self.ep
        data = [tuple(self.rank(s, i, j) for i in range(d)) for s in range(p) for j in range(t)]
        if group == "tp":
            return tuple(tuple(self.rank(s, i, j) for j in range(t))
                         for s in range(p) for i in range(d))
        if group == "dp":
            return tuple(data)
        if group == "ep":
            return tuple(g[k:k + e] for g in data for k in range(0, d, e))
        if group == "dp_ep":
            return tuple(g[k::e] for g in data for k in range(e))
        raise ValueError(f"unknown group {group!r} (one of {', '.join(GROUPS)})")

    def collectives(self) -> list[tuple[Layer, str, Phase]]:
        """(layer, phase name, phase) of every phase that communicates, in file order."""
        return [(layer, name, phase) for layer in self.layers
                for name, phase in (("forward", layer.forward), ("input_grad", layer.input_grad),
                                    ("weight_grad", layer.weight_grad))
                if phase.collective]

    def fit(self, ranks: int) -> tuple[SimaiWorkload, list[str]]:
        """The workload on `ranks` GPUs, and what was changed to fit, one line each ([] when it
        fits as it is). The rule: tensor parallelism and every per-rank size are kept; at least
        two data-parallel replicas are kept where the workload has two (their all-reduce is what
        crosses the fabric); pipeline stages are merged to the divisor of PP that then puts the
        most GPUs to work (the larger on a tie); DP takes the rest; EP becomes gcd(EP, DP)."""
        if not self.all_gpus:  # a DATA or MICRO workload: as many GPUs as the fabric has
            used = ranks - ranks % (self.tp * self.pp)
            return replace(self, all_gpus=used), [
                f"{self.source}: {self.policy} on the fabric's {used} GPUs"]
        if ranks < self.tp:
            raise SimaiError(self.source, [
                f"{self.source}: error: tensor parallelism {self.tp} needs {self.tp} GPUs; the "
                f"fabric has {ranks}"])
        if ranks >= self.all_gpus:
            return self, []
        notes = [f"{self.source}: {self.all_gpus} GPUs (TP {self.tp} x DP {self.dp} x PP "
                 f"{self.pp}, EP {self.ep}) onto the fabric's {ranks}"]
        room = ranks // self.tp
        least = min(2, self.dp, room)
        stages = [k for k in range(1, self.pp + 1) if self.pp % k == 0 and room // k >= least]
        pp = max(stages, key=lambda k: (k * min(self.dp, room // k), k))
        dp = min(self.dp, room // pp)
        ep = math.gcd(self.ep, dp)
        if pp != self.pp:
            notes.append(f"pipeline stages merged: PP {self.pp} -> {pp} (each stage runs the "
                         f"layer list as it is; pp_comm kept)")
        notes.append(f"data-parallel replicas dropped: DP {self.dp} -> {dp} (per-rank sizes "
                     f"kept: an all-reduce moves the same bytes per rank on fewer ranks)")
        if ep != self.ep:
            notes.append(f"expert parallelism EP {self.ep} -> {ep} (a divisor of DP {dp})")
        used = self.tp * dp * pp
        if used < ranks:
            notes.append(f"{ranks - used} of the fabric's {ranks} GPUs left idle")
        return replace(self, pp=pp, ep=ep, all_gpus=used), notes


def _phase(tokens: list[tuple[str, int]], start: int, which: str, where: str,
           errors: list[str]) -> Phase:
    (ticks, ct), (kind, ck), (size, cs) = tokens[start:start + 3]
    compute = _count(ticks, f"{where}:{ct}", f"{which} compute time", MAX_TICKS, errors)
    nbytes = _count(size, f"{where}:{cs}", f"{which} size", MAX_SIZE, errors)
    if kind == "NONE":
        return Phase(compute, None, None, nbytes)
    base, _, suffix = kind.partition("_")
    group = {"": "dp" if which == "weight-gradient" else "tp", "EP": "ep",
             "DP_EP": "dp_ep"}.get(suffix)
    if base not in COLLECTIVES or group is None:
        known = ", ".join(["NONE", *[f"{c}[_EP|_DP_EP]" for c in COLLECTIVES]])
        errors.append(f"{where}:{ck}: error: {which} collective {kind!r} is not one the lab "
                      f"runs ({known})")
        return Phase(compute, None, None, nbytes)
    return Phase(compute, COLLECTIVES[base], group, nbytes)


def _count(text: str, where: str, what: str, limit: int, errors: list[str]) -> int:
    try:
        value = int(text)
    except ValueError:
        errors.append(f"{where}: error: {what} {text!r} is not a whole number")
        return 0
    if not 0 <= value <= limit:
        errors.append(f"{where}: error: {what} {value} is outside 0..{limit}")
        return 0
    return value


def _columns(line: str) -> list[tuple[str, int]]:
    """The whitespace-separated tokens of a line with their 1-based columns."""
    out, col = [], 0
    for part in line.replace("\t", " ").split(" "):
        if part:
            out.append((part, col + 1))
        col += len(part) + 1
    return out


def parse(text: str, source: str = "<workload>") -> SimaiWorkload:
    """A SimAI workload from its text; every fault at once, each `source:line:col`."""
    errors: list[str] = []
    lines = text.splitlines()
    header = _columns(lines[0]) if lines else []
    if not header:
        raise SimaiError(source, [f"{source}:1:1: error: empty: a SimAI workload starts with "
                                     f"its parallelism policy ({', '.join(POLICIES)})"])
    policy, _ = header[0]
    if policy not in POLICIES:
        errors.append(f"{source}:1:1: error: parallelism policy {policy!r} is not one the lab "
                      f"runs ({', '.join(POLICIES)})")
    ignored: list[str] = []
    values = {"tp": 1, "ep": 1, "pp": 1, "vpp": 1, "ga": 1, "all_gpus": 0, "pp_comm": 0}
    i = 1
    while i < len(header):
        key, col = header[i]
        name = key.rstrip(":")
        if name in LIST_KEYS:  # layers checkpointed / re-run in the backward pass: not emulated
            n = header[i + 1][0] if i + 1 < len(header) else "0"
            i += 2 + (int(n) if n.isdigit() else 0)
            continue
        if name not in HEADER_KEYS:
            if key.endswith(":") and i + 1 < len(header):  # SimAI skips keys it does not read
                ignored.append(f"{key} {header[i + 1][0]}")
                i += 2
                continue
            errors.append(f"{source}:1:{col}: error: {key!r} is not a `key: value` pair")
            i += 1
            continue
        if i + 1 >= len(header):
            errors.append(f"{source}:1:{col}: error: {key} has no value")
            break
        text_value, vcol = header[i + 1]
        limit = MAX_SIZE if name == "pp_comm" else 1 << 20
        values[HEADER_KEYS[name]] = _count(text_value, f"{source}:1:{vcol}", name, limit, errors)
        i += 2
    tp, ep, pp, all_gpus = values["tp"], values["ep"], values["pp"], values["all_gpus"]
    sized = policy.startswith("HYBRID_TRANSFORMER")  # DATA and MICRO take the fabric's GPUs
    for key, value in (("model_parallel_NPU_group", tp), ("ep", ep), ("pp", pp),
                       ("vpp", values["vpp"]), ("ga", values["ga"]), ("all_gpus", all_gpus)):
        if value < 1 and (sized or key != "all_gpus"):
            errors.append(f"{source}:1:1: error: {key} must be at least 1 (got {value})")
    if tp >= 1 and pp >= 1 and all_gpus % (tp * pp):
        errors.append(f"{source}:1:1: error: all_gpus {all_gpus} is not a multiple of "
                      f"model_parallel_NPU_group x pp = {tp * pp}")
    elif tp >= 1 and pp >= 1 and ep >= 1 and (all_gpus // (tp * pp)) % ep:
        errors.append(f"{source}:1:1: error: ep {ep} does not divide the data parallelism "
                      f"all_gpus / (model_parallel_NPU_group x pp) = {all_gpus // (tp * pp)}")
    if pp > 1 and not values["pp_comm"]:
        errors.append(f"{source}:1:1: error: pp {pp} needs pp_comm: the bytes a stage sends "
                      f"the next (as the latest AICB writes it)")
    count_tokens = _columns(lines[1]) if len(lines) > 1 else []
    if len(count_tokens) != 1:
        errors.append(f"{source}:2:1: error: line 2 must be the number of layer lines")
        expected = None
    else:
        expected = _count(count_tokens[0][0], f"{source}:2:{count_tokens[0][1]}",
                          "number of layers", MAX_LAYERS, errors)
    layers = []
    layer_lines = 0
    for number, line in enumerate(lines[2:], start=3):
        tokens = _columns(line)
        if not tokens:
            continue
        layer_lines += 1
        where = f"{source}:{number}"
        if len(tokens) != LAYER_FIELDS:
            errors.append(f"{where}:1: error: a layer line has {LAYER_FIELDS} fields (name, -1, "
                          f"then compute, type, size for forward, input gradient and weight "
                          f"gradient, then the update time); this one has {len(tokens)}")
            continue
        forward = _phase(tokens, 2, "forward", where, errors)
        input_grad = _phase(tokens, 5, "input-gradient", where, errors)
        weight_grad = _phase(tokens, 8, "weight-gradient", where, errors)
        update = _count(tokens[11][0], f"{where}:{tokens[11][1]}", "update time", MAX_TICKS,
                        errors)
        layers.append(Layer(tokens[0][0], number, forward, input_grad, weight_grad, update))
    if expected is not None and expected != layer_lines:
        errors.append(f"{source}:2:1: error: line 2 says {expected} layers; the file has "
                      f"{layer_lines} layer lines")
    if not layers and not errors:
        errors.append(f"{source}:3:1: error: no layer lines")
    if errors:
        raise SimaiError(source, errors)
    return SimaiWorkload(source, policy, tp, ep, pp, values["vpp"], values["ga"], all_gpus,
                         values["pp_comm"], tuple(layers), tuple(ignored))


def is_simai(text: str) -> bool:
    """Whether a job file's text is SimAI's workload format (its first word a policy)."""
    first = text.lstrip().split(None, 1)
    return bool(first) and first[0] in POLICIES


def read(path: str | Path) -> SimaiWorkload:
    """A SimAI workload file; a SimaiError (every fault, `file:line:col`) when it is not one."""
    path = Path(path)
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise SimaiError(str(path), [f"{path}: error: larger than {MAX_FILE_BYTES} bytes"])
        text = path.read_bytes().decode()
    except UnicodeDecodeError:
        raise SimaiError(str(path), [f"{path}:1:1: error: not text (UTF-8)"]) from None
    except OSError as err:
        raise SimaiError(str(path), [f"{path}: error: cannot read: {err.strerror}"]) from None
    return parse(text, str(path))


def total_compute_ns(workload: SimaiWorkload) -> int:
    """One microbatch's compute on one rank: every phase of every layer, and the updates."""
    return sum(layer.forward.compute_ns + layer.input_grad.compute_ns
               + layer.weight_grad.compute_ns + layer.update_ns for layer in workload.layers)


def bubble_fraction(pp: int, microbatches: int) -> float:
    """The idle share of a 1F1B pipeline schedule: (p-1)/(m+p-1)."""
    return (pp - 1) / (microbatches + pp - 1) if pp > 1 else 0.0

