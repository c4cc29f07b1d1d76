"""A task run every `period` seconds on a daemon thread, with a clean start/stop.

The link watcher, link prober, PFC watchdog and telemetry sampler all share this loop: the
next round starts one period after the previous one started (a slow round shortens the wait,
it does not shift the schedule), and errors of the listed kinds are handed to `on_error`
instead of ending the thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class Periodic:
    def __init__(self, name: str, period: float, tick: Callable[[], object], *,
                 immediate: bool = False,
                 errors: tuple[type[BaseException], ...] = (),
                 on_error: Callable[[BaseException], None] | None = None) -> None:
        """`immediate`: the first round runs at start, not one period later."""
        self.name = name
        self.period = period
        self.tick = tick
        self.immediate = immediate
        self.errors = errors
        self.on_error = on_error
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _run(self) -> None:
        if not self.immediate and self._stop.wait(self.period):
            return
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self.tick()
            except self.errors as err:
                if self.on_error is not None:
                    self.on_error(err)
            self._stop.wait(max(0.0, self.period - (time.monotonic() - started)))
