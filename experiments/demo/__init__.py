"""The live failover demo (`fabric-lab demo`): three recoveries back to back on one fabric.

`stages` (what fails, in which order), `measure` (what each stage cost each flow), `view` (the
terminal), `plot` (timeline.png), `run` (all of it, with the verdict).
"""

from experiments.demo.run import DemoFailed, DemoState, run_demo
from experiments.demo.stages import DEFAULT_KINDS, STAGE_KINDS
from experiments.demo.view import LiveView, columns, sparkline

__all__ = ["DEFAULT_KINDS", "STAGE_KINDS", "DemoFailed", "DemoState", "LiveView", "columns",
           "run_demo", "sparkline"]
