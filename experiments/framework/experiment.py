"""What an experiment is, and how one run of it is carried out.

An experiment module defines its parameters (with a `quick` variant), a `run` that measures and
writes CSV files into the result directory, and a `plot` that draws PNGs from those files alone —
so a result directory always holds everything needed to redraw its plots without rerunning.

The switch target is resolved once, before the run: `auto` is p4switch (the embedded default,
as in `fabric-lab up`), `bmv2` only when asked for. The run sees the resolved name in
`RunContext.target` and `params.json` records it (and `target_requested` when that differs).
An experiment that drives no switch processes lists the targets it computes on in `targets`;
asked for another, it runs on its own and says so.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from experiments.framework.results import INTERRUPTED, ResultDir, allocate
from targets import TargetError, get_target
from topos.builders import build_fabric, checked_scale, fabric_parameters
from topos.errors import FabricLabError, InputError
from topos.keyvalue import parse_value
from topos.model import FabricSpec
from topos.relocate import prefixed
from topos.values import TCP_PORT, name_problem

if TYPE_CHECKING:
    from topos.mininet.cluster import ClusterOptions


@dataclass
class RunContext:
    """What a running experiment gets: its parameters, where to write, how to report progress.
    `target` is resolved: "p4switch" or "bmv2", never "auto"; `cluster` (`--servers`) is what
    the experiment passes to the fabrics it brings up (`FabricSession(cluster=...)`)."""

    out: ResultDir
    params: dict[str, Any]
    quick: bool
    target: str
    fabric: str | None
    progress: Callable[[str], None] = print
    cluster: ClusterOptions | None = None


@dataclass
class Experiment:
    name: str
    summary: str  # what it shows, one sentence
    duration: str  # e.g. "about 1 min with --quick, 10 min in full"
    defaults: Mapping[str, Any]
    quick: Mapping[str, Any]  # overrides of defaults for --quick
    run: Callable[[RunContext], None]
    plot: Callable[[ResultDir], list[Path]]
    fabrics: tuple[str, ...] = ()  # fabrics it can run on; empty: it needs none
    needs_root: bool = False
    # the switch targets it runs on; ("p4switch",) for one that computes in p4switch's engine
    targets: tuple[str, ...] = ("p4switch", "bmv2")
    tags: tuple[str, ...] = field(default_factory=tuple)
    scalable: bool = True  # takes --scale (fabric scale parameters) for the fabrics it builds
    # defaults that differ on a target, e.g. lower packet rates for a slower switch
    per_target: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


class ExperimentError(InputError):
    """Bad experiment arguments (unknown parameter, fabric it cannot run on, ...)."""


class PlotError(FabricLabError):
    """A run measured completely whose plot step failed: its CSV files are whole, and
    `fabric-lab replot` draws them."""


def scaled_fabric(name: str, params: Mapping[str, Any], base: Mapping[str, Any] | None = None,
                  **fixed: Any) -> FabricSpec:
    """Fabric `name` built from `base`, then the run's `--scale` (`params["scale"]`, the keys
    this fabric takes), then `fixed`: what the experiment itself sets, which --scale may not."""
    known = fabric_parameters(name)
    scale = {k: v for k, v in params.get("scale", {}).items() if k in known}
    clash = sorted(set(scale) & set(fixed))
    if clash:
        raise ExperimentError(f"--scale {', '.join(clash)}: the experiment sets it for {name} "
                              f"(see its -p parameters)")
    return build_fabric(name, **{**(base or {}), **scale, **fixed})


PORT_BLOCK = 1000  # the management ports `isolated` numbers from port_base


def isolated(spec: FabricSpec, params: Mapping[str, Any]) -> FabricSpec:
    """With `name_prefix` set: node/interface names prefixed and gRPC/runtime CLI ports from
    `port_base` up, so the run does not meet another fabric on this machine."""
    if not params["name_prefix"]:
        return spec
    base = params["port_base"]
    return prefixed(spec, params["name_prefix"], base, base + 500)


def check_scale(experiment: Experiment, fabric: str | None, scale: Mapping[str, Any]) -> None:
    """Every --scale key must be a parameter of a fabric the run builds."""
    if not scale:
        return
    if not experiment.scalable or not experiment.fabrics:
        raise ExperimentError(f"{experiment.name} builds its own fabric: it takes no --scale")
    fabrics = [fabric] if fabric else list(experiment.fabrics)
    unknown = sorted(k for k in scale if not any(k in fabric_parameters(f) for f in fabrics))
    if unknown:
        raise ExperimentError(f"--scale {', '.join(unknown)}: not a parameter of "
                              f"{', '.join(fabrics)} (fabric-lab show FABRIC --help lists them)")
    for name in fabrics:  # each value's type and range, before the run starts
        known = fabric_parameters(name)
        checked_scale(name, {k: v for k, v in scale.items() if k in known}, sized=False)


def resolve_params(experiment: Experiment, quick: bool, overrides: Mapping[str, str],
                   target: str | None = None) -> dict[str, Any]:
    """Defaults, then the quick variant, then the target's own defaults, then `key=value`
    overrides converted to the default's type."""
    params = dict(experiment.defaults)
    if quick:
        params.update(experiment.quick)
    if target is not None:
        params.update(experiment.per_target.get(target, {}))
    unknown = sorted(set(overrides) - set(params))
    if unknown:
        raise ExperimentError(
            f"{experiment.name}: unknown parameter(s) {', '.join(unknown)}; "
            f"known: {', '.join(sorted(params))}")
    for key, text in overrides.items():
        params[key] = _convert(key, text, params[key])
    return params


def _convert(key: str, text: str, default: Any) -> Any:
    """`text` as the type of `default`: a finite number, a safe `name_prefix` (it starts every
    node and interface name), a `port_base` that leaves room for the fabric's ports."""
    try:
        value = parse_value(text, default)
    except ValueError as err:
        raise ExperimentError(f"parameter {key}: {err}") from None
    items = value if isinstance(value, list) else [value]
    fault = next((f"must be a finite number, not {item!r}" for item in items
                  if isinstance(item, float) and not math.isfinite(item)), None)
    if key == "name_prefix" and value:
        fault = name_problem(value, max_len=8)  # interface names have 15 characters
    if key == "port_base":
        fault = TCP_PORT.problem(value) or TCP_PORT.problem(value + PORT_BLOCK - 1)
    if fault:
        raise ExperimentError(f"parameter {key}: {fault}")
    return value


def execute(experiment: Experiment, *, quick: bool = False, target: str = "auto",
            fabric: str | None = None, out: Path | None = None, base: Path = Path("results"),
            overrides: Mapping[str, str] | None = None,
            progress: Callable[[str], None] = print,
            scale: Mapping[str, Any] | None = None,
            cluster: ClusterOptions | None = None) -> ResultDir:
    """Run one experiment into a fresh result directory and draw its plots; `scale` changes the
    scale of the fabrics it builds (recorded as the parameter `scale`); `cluster` spreads them
    over several servers."""
    resolved = resolve_experiment_target(experiment, target)
    params = resolve_params(experiment, quick, overrides or {}, resolved)
    check_scale(experiment, fabric, scale or {})
    if scale:
        params["scale"] = dict(scale)
    if fabric is not None and experiment.fabrics and fabric not in experiment.fabrics:
        raise ExperimentError(f"{experiment.name} runs on {', '.join(experiment.fabrics)}, not {fabric}")
    result = allocate(experiment.name, out, base)
    try:
        requested = {"target_requested": target} if target != resolved else {}  # what was typed
        result.write_params(experiment.name, params, quick=quick, target=resolved, fabric=fabric,
                            target_versions=get_target(resolved).versions(),
                            **requested)
        if target not in ("auto", resolved):
            progress(f"{experiment.name}: computes on {resolved} (no {target} switches): "
                     f"target {resolved} recorded")
        progress(f"{experiment.name}: writing to {result.path}")
        context = RunContext(result, params, quick, resolved, fabric, progress, cluster)
        started = time.monotonic()
        _measure(experiment, context)
        _draw(experiment, result)
        progress(f"{experiment.name}: done in {time.monotonic() - started:.1f} s, "
                 f"{len(result.read_params()['plots'])} plot(s) in {result.path}")
    finally:
        result.close()
    return result


def _measure(experiment: Experiment, ctx: RunContext) -> None:
    """The run's measuring step; its end recorded in params.json: failed, or interrupted
    (Ctrl-C) with the rows measured so far kept."""
    started = time.monotonic()
    try:
        experiment.run(ctx)
    except KeyboardInterrupt:
        _record_end(ctx.out, status=INTERRUPTED, duration_s=round(time.monotonic() - started, 3))
        ctx.progress(f"{experiment.name}: interrupted: what it measured so far is in "
                     f"{ctx.out.path} (status {INTERRUPTED})")
        raise
    except BaseException as error:
        _record_end(ctx.out, status="failed", error=f"{type(error).__name__}: {error}",
                    duration_s=round(time.monotonic() - started, 3))
        raise
    ctx.out.update_params(duration_s=round(time.monotonic() - started, 3))


def _draw(experiment: Experiment, result: ResultDir) -> None:
    """The plot step after a complete measurement: its failure (a bug, a full disk) leaves the
    run complete, `plot_error` recorded, for `fabric-lab replot` to redraw from its CSV files."""
    try:
        plots = experiment.plot(result)
    except BaseException as error:
        reason = f"{type(error).__name__}: {error}"
        _record_end(result, status="complete", plots=[], plot_error=reason)
        if not isinstance(error, Exception):  # Ctrl-C while drawing: the data is complete
            raise
        raise PlotError(f"{experiment.name}: measured completely into {result.path}, but its "
                        f"plots failed ({reason}); `fabric-lab replot {result.path}` draws "
                        "them from the CSV files") from None
    result.update_params(status="complete", plots=[plot.name for plot in plots])


def _record_end(result: ResultDir, **fields: Any) -> None:
    """Record how the run ended, if the disk lets us (a full disk keeps it `incomplete`)."""
    with contextlib.suppress(OSError):
        result.update_params(**fields)


def resolve_experiment_target(experiment: Experiment, target: str) -> str:
    """The target a run of `experiment` uses: `auto` is p4switch; a target the experiment does
    not run on gives its first target (it drives no switch processes)."""
    try:
        resolved = get_target(target).name
    except TargetError as err:
        raise ExperimentError(str(err)) from None
    return resolved if resolved in experiment.targets else experiment.targets[0]
