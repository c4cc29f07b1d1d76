"""The experiment framework: what every experiment runs on, and what experiments share.

An experiment package imports from here, never from another experiment.

Running an experiment: `experiment` (parameters, `execute`, the run context, `scaled_fabric`,
`isolated`), `results` (result directories, CSV, params.json), `provenance`, `registry` (the
experiments `fabric-lab run` knows), `report` (the HTML report).

A running fabric: `session` (`FabricSession`: one fabric, built, programmed, looked after and torn
down), `telemetry` (per-queue samples while a run goes), `lb_lab` (`LbLab`: one load-balancing
mode, flows through `traffic.agent` workers, link counters), `failover_lab` (`FailoverLab`: paced
flows, path tracing, links and switches to fail; `pick_failure`, `settle`), `flows` (the paced
flows' processes, `FlowRun`), `recovery` (what a failure cost one flow: loss window, recovery).

One switch without a fabric: `engine_switch` (`EngineSwitch`, `LbSwitch`: a pipeline in the
p4switch engine, packet by packet; `roce_frame`), `ballsbins` (what uniform hashing predicts).
"""

from experiments.framework.experiment import (
    Experiment,
    ExperimentError,
    RunContext,
    check_scale,
    execute,
    isolated,
    resolve_experiment_target,
    resolve_params,
    scaled_fabric,
)

__all__ = ["Experiment", "ExperimentError", "RunContext", "check_scale", "execute", "isolated",
           "resolve_experiment_target", "resolve_params", "scaled_fabric"]
