"""The experiments `fabric-lab run` knows, by name."""

from __future__ import annotations

import importlib

from experiments.framework import Experiment

# One package per experiment; its `experiment` module defines EXPERIMENT.
_MODULES: tuple[str, ...] = ("ecmp_hashing", "failover", "lb_compare", "topology_aware", "incast",
                            "hpn_segment", "rail_vs_clos", "straggler", "rank_mapping", "scaling",
                            "pfc_deadlock", "cc_compare", "loss_recovery")


def all_experiments() -> dict[str, Experiment]:
    experiments = {}
    for module_name in _MODULES:
        experiment = importlib.import_module(f"experiments.{module_name}.experiment").EXPERIMENT
        experiments[experiment.name] = experiment
    return experiments


def get(name: str) -> Experiment:
    experiments = all_experiments()
    if name not in experiments:
        raise KeyError(f"unknown experiment {name!r}; known: {', '.join(sorted(experiments)) or 'none'}")
    return experiments[name]
