"""The experiment framework: what every experiment runs on.

`experiment` (parameters, `execute`, the run context), `results` (result directories, CSV,
params.json), `provenance`, `registry` (the experiments `fabric-lab run` knows), `report` (the
HTML report), `telemetry` (per-queue samples while a run goes), `session` (`FabricSession`: one
running fabric, built, programmed, looked after and torn down).
"""

from experiments.framework.experiment import (
    Experiment,
    ExperimentError,
    RunContext,
    check_scale,
    execute,
    resolve_experiment_target,
    resolve_params,
    scaled_fabric,
)

__all__ = ["Experiment", "ExperimentError", "RunContext", "check_scale", "execute",
           "resolve_experiment_target", "resolve_params", "scaled_fabric"]
