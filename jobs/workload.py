"""A training job described as data: ranks, parallelism, compute and what each iteration moves.

A job file (YAML or JSON, `jobs/examples/`) reads:

    name: llama-13b-dp
    servers: 4                # servers x gpus_per_server = ranks
    gpus_per_server: 2
    parallelism: {data: 8, tensor: 1, pipeline: 1, expert: 1}
    compute_s: 1.2            # forward + backward per iteration, in the modelled job's seconds
    backward_fraction: 0.67   # share of compute_s that is the backward pass
    gradient_bytes: 26G       # all gradients of the model (K/M/G are 1024-based, as nccl-tests)
    buckets: 4                # the data-parallel allreduce is done in this many buckets
    overlap: true             # or a fraction 0..1 of the backward pass the buckets spread over
    iterations: 3
    tensor_bytes: 0           # per rank and iteration: tensor-parallel allreduce (NVLink)
    pipeline_bytes: 0         # per microbatch: activations between neighbouring stages
    microbatches: 1
    expert_bytes: 0           # per rank and iteration: the expert-parallel alltoall

Sizes and times are the modelled job's (a 400 Gb/s fabric, say); `jobs.train` scales them to
the emulated links. Ranks are laid out as Megatron-LM does: tensor-parallel ranks adjacent (one
server), then data-parallel, then pipeline stages; expert-parallel groups split each
data-parallel group. `validate` collects every error at once, each naming the file and key.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]

from topos.errors import InputError
from topos.values import ITERATIONS, SECONDS, fault_message

SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*$", re.IGNORECASE)

KEYS = ("name", "servers", "gpus_per_server", "parallelism", "compute_s", "backward_fraction",
        "gradient_bytes", "buckets", "overlap", "iterations", "tensor_bytes", "pipeline_bytes",
        "microbatches", "expert_bytes")
DEGREES = ("data", "tensor", "pipeline", "expert")
MAX_SIZE = 1 << 50  # a modelled size (1 PiB), beyond any model's gradients
MAX_FILE_BYTES = 1 << 20


class WorkloadError(InputError):
    """A job description with one or more errors; `errors` lists them all (the message the
    first few, `topos.values.fault_message`)."""

    def __init__(self, source: str, errors: list[str]) -> None:
        self.source = source
        self.errors = errors
        super().__init__(fault_message(f"job {source}", errors))


@dataclass(frozen=True)
class Parallelism:
    data: int = 1
    tensor: int = 1
    pipeline: int = 1
    expert: int = 1


@dataclass(frozen=True)
class Collective:
    """One collective of an iteration, run at once on every group (disjoint rank lists).

    `bytes` is each rank's buffer (allreduce), what each rank sends in all (alltoall), or what
    one stage sends the next (sendrecv); `release` is when, as a fraction of the compute time,
    its data is ready; `overlappable` ones may run under the rest of the compute."""

    purpose: str  # "dp-bucket-0", "tp", "pp", "ep"
    kind: str  # "all_reduce", "alltoall", "sendrecv"
    groups: tuple[tuple[int, ...], ...]
    bytes: int
    release: float = 1.0
    overlappable: bool = False


@dataclass(frozen=True)
class Workload:
    name: str
    servers: int
    gpus_per_server: int
    parallelism: Parallelism
    compute_s: float
    gradient_bytes: int
    buckets: int = 1
    overlap: float = 0.0
    iterations: int = 1
    backward_fraction: float = 2 / 3
    tensor_bytes: int = 0
    pipeline_bytes: int = 0
    microbatches: int = 1
    expert_bytes: int = 0

    @property
    def ranks(self) -> int:
        return self.servers * self.gpus_per_server

    def coords(self, rank: int) -> tuple[int, int, int]:
        """(pipeline stage, data-parallel index, tensor-parallel index) of `rank`."""
        p = self.parallelism
        return rank // (p.tensor * p.data), rank // p.tensor % p.data, rank % p.tensor

    def rank(self, stage: int, dp: int, tp: int) -> int:
        p = self.parallelism
        return (stage * p.data + dp) * p.tensor + tp

    def groups(self, kind: str) -> tuple[tuple[int, ...], ...]:
        """The rank groups of one kind of parallelism: "data", "tensor", "pipeline", "expert"."""
        p = self.parallelism
        if kind == "tensor":
            return tuple(tuple(self.rank(s, d, t) for t in range(p.tensor))
                         for s in range(p.pipeline) for d in range(p.data))
        if kind == "data":
            return tuple(tuple(self.rank(s, d, t) for d in range(p.data))
                         for s in range(p.pipeline) for t in range(p.tensor))
        if kind == "pipeline":
            return tuple(tuple(self.rank(s, d, t) for s in range(p.pipeline))
                         for d in range(p.data) for t in range(p.tensor))
        if kind == "expert":
            return tuple(group[i:i + p.expert] for group in self.groups("data")
                         for i in range(0, p.data, p.expert))
        raise ValueError(f"unknown parallelism {kind!r} (one of {', '.join(DEGREES)})")

    def to_dict(self) -> dict[str, Any]:
        """The job as a job file's mapping (`validate` reads it back)."""
        out = {k: getattr(self, k) for k in KEYS if k != "parallelism"}
        out["parallelism"] = {k: getattr(self.parallelism, k) for k in DEGREES}
        return out

    def on_servers(self, servers: int, gpus_per_server: int) -> Workload:
        """The same model on another number of servers: data parallelism takes up the
        difference (expert groups are kept if they still divide it)."""
        p = self.parallelism
        data = servers * gpus_per_server // (p.tensor * p.pipeline)
        expert = p.expert if data % p.expert == 0 else 1
        return validate({**self.to_dict(), "servers": servers, "gpus_per_server": gpus_per_server,
                         "parallelism": {"data": data, "tensor": p.tensor,
                                         "pipeline": p.pipeline, "expert": expert}},
                        f"{self.name} on {servers} x {gpus_per_server} GPUs")

    def bucket_bytes(self) -> int:
        """Each rank's gradients per bucket: the model's gradients split over tensor-parallel
        ranks and pipeline stages, then into buckets."""
        p = self.parallelism
        return max(1, math.ceil(self.gradient_bytes / (p.tensor * p.pipeline * self.buckets)))

    def collectives(self) -> list[Collective]:
        """What one iteration communicates, in the order it is issued. Tensor, pipeline and
        expert parallelism block the compute (they are on its critical path); the data-parallel
        buckets are released through the backward pass (`overlap`) or at its end."""
        p = self.parallelism
        out = []
        if p.tensor > 1 and self.tensor_bytes:
            out.append(Collective("tp", "all_reduce", self.groups("tensor"), self.tensor_bytes))
        if p.expert > 1 and self.expert_bytes:
            out.append(Collective("ep", "alltoall", self.groups("expert"), self.expert_bytes))
        if p.pipeline > 1 and self.pipeline_bytes:
            out.append(Collective("pp", "sendrecv", self.groups("pipeline"),
                                  self.pipeline_bytes * self.microbatches))
        if p.data > 1:
            spread = self.overlap * self.backward_fraction
            for b in range(self.buckets):
                release = 1.0 - spread * (1 - (b + 1) / self.buckets)
                out.append(Collective(f"dp-bucket-{b}", "all_reduce", self.groups("data"),
                                      self.bucket_bytes(), release, overlappable=True))
        return out


def parse_size(value: Any) -> int:
    """Bytes from an integer or a string such as "64K", "1.5G" (1024-based, as nccl-tests)."""
    if isinstance(value, bool):
        raise ValueError(f"a size, not {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"must be >= 0, got {value}")
        return value
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    match = _SIZE.match(str(value))
    if not match:
        raise ValueError(f"a size in bytes (e.g. 1048576, 64K, 26G), not {value!r}")
    return int(float(match.group(1)) * SIZE_UNITS[match.group(2).upper()])


class _Reader:
    """Reads typed fields from the job's mapping, noting every error instead of stopping."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.data = data
        self.errors: list[str] = []

    def err(self, key: str, message: str) -> None:
        self.errors.append(f"{key}: {message}")

    def get(self, mapping: Mapping[str, Any], key: str, path: str, default: Any,
            kind: str) -> Any:
        if key not in mapping:
            if default is _REQUIRED:
                self.err(path, "missing")
                return None
            return default
        value = mapping[key]
        try:
            return _convert(value, kind)
        except ValueError as error:
            self.err(path, str(error))
            return None


_REQUIRED = object()


def _convert(value: Any, kind: str) -> Any:
    if kind == "name":
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"a non-empty name, not {value!r}")
        return value.strip()
    if kind == "count":
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"an integer >= 1, not {value!r}")
        return value
    if kind == "seconds":
        fault = SECONDS.problem(value)
        if fault:
            raise ValueError(f"a time in seconds: {fault}")
        return float(value)
    if kind == "iterations":
        fault = ITERATIONS.problem(value)
        if fault:
            raise ValueError(fault)
        return value
    if kind == "fraction":
        if isinstance(value, bool):
            return 1.0 if value else 0.0
        if not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise ValueError(f"true, false or a fraction 0..1, not {value!r}")
        return float(value)
    if kind == "open_fraction":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
            raise ValueError(f"a fraction in (0, 1], not {value!r}")
        return float(value)
    if kind == "size":
        size = parse_size(value)
        if size > MAX_SIZE:
            raise ValueError(f"at most {MAX_SIZE >> 50}P bytes, not {value!r}")
        return size
    raise AssertionError(kind)


def validate(data: Any, source: str = "<job>") -> Workload:
    """A `Workload` from a parsed job file, or `WorkloadError` listing every problem."""
    if not isinstance(data, Mapping):
        raise WorkloadError(source, [f"the job must be a mapping of keys, not {type(data).__name__}"])
    r = _Reader(data)
    for key in sorted(set(map(str, data)) - set(KEYS)):
        r.err(key, f"unknown key (known: {', '.join(KEYS)})")
    name = r.get(data, "name", "name", _REQUIRED, "name")
    servers = r.get(data, "servers", "servers", _REQUIRED, "count")
    gpus = r.get(data, "gpus_per_server", "gpus_per_server", _REQUIRED, "count")
    degrees: dict[str, Any] = dict.fromkeys(DEGREES, 1)
    par = data.get("parallelism", {})
    if not isinstance(par, Mapping):
        r.err("parallelism", f"a mapping of {', '.join(DEGREES)}, not {par!r}")
        par = {}
    for key in sorted(set(map(str, par)) - set(DEGREES)):
        r.err(f"parallelism.{key}", f"unknown degree (known: {', '.join(DEGREES)})")
    for key in DEGREES:
        degrees[key] = r.get(par, key, f"parallelism.{key}", 1, "count")
    fields = {
        "compute_s": r.get(data, "compute_s", "compute_s", _REQUIRED, "seconds"),
        "gradient_bytes": r.get(data, "gradient_bytes", "gradient_bytes", _REQUIRED, "size"),
        "buckets": r.get(data, "buckets", "buckets", 1, "count"),
        "overlap": r.get(data, "overlap", "overlap", 0.0, "fraction"),
        "iterations": r.get(data, "iterations", "iterations", 1, "iterations"),
        "backward_fraction": r.get(data, "backward_fraction", "backward_fraction", 2 / 3,
                                   "open_fraction"),
        "tensor_bytes": r.get(data, "tensor_bytes", "tensor_bytes", 0, "size"),
        "pipeline_bytes": r.get(data, "pipeline_bytes", "pipeline_bytes", 0, "size"),
        "microbatches": r.get(data, "microbatches", "microbatches", 1, "count"),
        "expert_bytes": r.get(data, "expert_bytes", "expert_bytes", 0, "size"),
    }
    _check_degrees(r, servers, gpus, degrees, fields)
    if r.errors:
        raise WorkloadError(source, r.errors)
    return Workload(name=name, servers=servers, gpus_per_server=gpus,
                    parallelism=Parallelism(**degrees), **fields)


def _check_degrees(r: _Reader, servers: int | None, gpus: int | None, d: dict[str, Any],
                   fields: dict[str, Any]) -> None:
    """The relations between the degrees, checked where their parts were valid."""
    data, tensor, pipeline, expert = (d[k] for k in DEGREES)
    if servers and gpus and data and tensor and pipeline:
        ranks = servers * gpus
        if data * tensor * pipeline != ranks:
            r.err("parallelism", f"data x tensor x pipeline = {data} x {tensor} x {pipeline} = "
                                 f"{data * tensor * pipeline}, but the job has servers x "
                                 f"gpus_per_server = {servers} x {gpus} = {ranks} ranks")
    if gpus and tensor and gpus % tensor:
        r.err("parallelism.tensor", f"must divide gpus_per_server ({gpus}): tensor parallelism "
                                    f"stays inside a server, on NVLink; got {tensor}")
    if data and expert and data % expert:
        r.err("parallelism.expert", f"must divide parallelism.data ({data}); got {expert}")
    needs = (("tensor", tensor, "tensor_bytes"), ("pipeline", pipeline, "pipeline_bytes"),
             ("expert", expert, "expert_bytes"))
    for degree, value, key in needs:
        if value and value > 1 and fields[key] == 0:
            r.err(key, f"parallelism.{degree} is {value}: say how many bytes it moves (> 0)")
    if data == 1 and fields["buckets"] and fields["buckets"] > 1:
        r.err("buckets", "data parallelism is 1: there are no gradient buckets to allreduce")
    grad, buckets = fields["gradient_bytes"], fields["buckets"]
    if grad is not None and data and data > 1 and grad == 0:
        r.err("gradient_bytes", "must be > 0 with data parallelism")
    if grad and buckets and tensor and pipeline and grad < buckets * tensor * pipeline:
        r.err("buckets", f"{buckets} buckets of {grad} bytes split over tensor x pipeline = "
                         f"{tensor * pipeline} ranks leave less than a byte per bucket")


EXAMPLES = Path(__file__).resolve().parent / "examples"


def find(name: str | Path) -> Path:
    """A job file by path, or by the name of an example (`llama13b-dp` -> jobs/examples/...)."""
    path = Path(name)
    if path.is_file():
        return path
    for suffix in (".yaml", ".yml", ".json"):
        candidate = EXAMPLES / f"{name}{suffix}"
        if candidate.is_file():
            return candidate
    known = ", ".join(sorted(p.stem for p in EXAMPLES.iterdir()))
    raise FileNotFoundError(f"no job file {name!r} (nor an example of that name: {known})")


def load(path: str | Path) -> Workload:
    """Read and validate a job file (.yaml/.yml or .json); WorkloadError naming the path for a
    file that cannot be read, is not text, is empty or is not valid."""
    path = Path(path)
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise WorkloadError(str(path), [f"is {path.stat().st_size} bytes (a job file is at "
                                            f"most {MAX_FILE_BYTES})"])
        text = path.read_bytes().decode("utf-8")
    except OSError as error:
        raise WorkloadError(str(path), [f"cannot be read: {error.strerror or error}"]) from None
    except UnicodeDecodeError:
        raise WorkloadError(str(path), ["is not a text file (a job file is YAML or JSON "
                                        "text)"]) from None
    if not text.strip():
        raise WorkloadError(str(path), ["is empty"])
    try:
        if path.suffix in (".yaml", ".yml"):
            data = yaml.safe_load(text)
        else:
            data = json.loads(text)
    except (yaml.YAMLError, json.JSONDecodeError) as error:
        detail = " ".join(str(error).split())  # YAML's errors span lines
        raise WorkloadError(str(path), [f"not valid {path.suffix.lstrip('.') or 'JSON'}: "
                                        f"{detail}"]) from None
    return validate(data, str(path))
