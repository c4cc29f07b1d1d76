"""Bring one switch to its intended state: pipeline, then only the entities that differ.

Idempotent by construction: the pipeline is pushed only when the device's cookie differs from the
pipeline's, and table/profile state is read back and compared, so a second run writes nothing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from p4.v1 import p4runtime_pb2

from controller.intent import Intent, describe_update
from controller.p4rt import P4RuntimeClient, P4RuntimeError, WriteError
from controller.pipeline import Pipeline
from controller.routes import SwitchRoutes
from controller.state import DeviceState, add_read_entities, plan_updates
from topos.errors import FabricLabError


class ControllerError(FabricLabError, RuntimeError):
    """Programming a switch failed: which switch, what was being written, the device's answer."""

    def __init__(self, switch: str, message: str):
        self.switch = switch
        super().__init__(f"switch {switch}: {message}")


@dataclass
class SyncReport:
    switch: str
    pipeline_pushed: bool = False
    inserted: int = 0
    modified: int = 0
    deleted: int = 0
    unchanged: int = 0
    seconds: float = 0.0
    pipeline_seconds: float = 0.0

    @property
    def writes(self) -> int:
        return self.inserted + self.modified + self.deleted

    def __str__(self) -> str:
        pushed = (f"pipeline pushed ({self.pipeline_seconds:.2f} s), "
                  if self.pipeline_pushed else "")
        return (f"{self.switch}: {pushed}{self.inserted} inserted, {self.modified} modified, "
                f"{self.deleted} deleted, {self.unchanged} unchanged ({self.seconds:.2f} s)")


def ensure_pipeline(client: P4RuntimeClient, pipeline: Pipeline) -> bool:
    """Push `pipeline` unless the device already runs it; True when pushed."""
    if client.pipeline_cookie() == pipeline.cookie:
        return False
    client.set_pipeline(pipeline.p4info, pipeline.device_config, pipeline.cookie)
    return True


def read_state(client: P4RuntimeClient, intent: Intent) -> DeviceState:
    state = add_read_entities(DeviceState(), client.read(intent.read_entities()))
    try:
        add_read_entities(state, client.read([intent.default_read_entity()]))
    except P4RuntimeError as err:
        if err.code != "UNIMPLEMENTED":
            raise
        # Default entries cannot be read on this target: rewriting the default is harmless.
    return state


def controller_error(switch: str, intent: Intent, err: WriteError) -> ControllerError:
    """A failed write as a ControllerError: one line per failed update, in P4 terms."""
    if not err.failures:
        return ControllerError(switch, f"{err.operation} failed: {err.code}: {err.detail}")
    lines = [f"  {describe_update(intent.schema, f.update)}: {f.code}: {f.message}"
             for f in err.failures]
    return ControllerError(switch, f"{len(err.failures)} update(s) failed:\n" + "\n".join(lines))


def sync_switch(client: P4RuntimeClient, intent: Intent, routes: SwitchRoutes,
                pipeline: Pipeline | None = None) -> SyncReport:
    """Make the device hold exactly what `routes` asks for; report what was written."""
    started = time.monotonic()
    report = SyncReport(routes.switch)
    try:
        if pipeline is not None:
            report.pipeline_pushed = ensure_pipeline(client, pipeline)
            report.pipeline_seconds = time.monotonic() - started
        have = intent.readable(read_state(client, intent))
        want = intent.state(intent.adopt_group_ids(routes, have))
        for batch in plan_updates(want, have):
            client.write(batch)
            for update in batch:
                if update.type == p4runtime_pb2.Update.INSERT:
                    report.inserted += 1
                elif update.type == p4runtime_pb2.Update.MODIFY:
                    report.modified += 1
                else:
                    report.deleted += 1
    except WriteError as err:
        raise controller_error(routes.switch, intent, err) from None
    except P4RuntimeError as err:
        raise ControllerError(routes.switch, str(err)) from None
    report.unchanged = want.count() - report.inserted - report.modified
    report.seconds = time.monotonic() - started
    return report
