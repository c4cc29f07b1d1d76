"""What a `fabric-lab train` run measured, kept as it is measured.

The result grows an iteration at a time (`jobs.train.train(on_iteration=...)`); with an output
directory each iteration's rows are appended to iterations.csv and collectives.csv and flushed
as it ends, so a run that stops (Ctrl-C, a switch that died) keeps every iteration it measured.
The directory is claimed before the fabric comes up, as an experiment's is
(`experiments.framework.results.claim`: created, locked, checked empty, params.json with
`"status": "incomplete"`), so an unusable `--out` is found before anything starts. At the end
ranks.csv and summary.json are written whole and params.json records how the run ended.

A write that fails (a full disk, a directory made unwritable) never costs the measurement: the
first failure is kept as one line naming the path, writing stops, and the run goes on to its
report.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from experiments.framework.results import CsvAppender, ResultDir, ResultDirError, claim
from jobs.train import (
    COLLECTIVE_FIELDS,
    ITERATION_FIELDS,
    RANK_FIELDS,
    IterationRun,
    TrainResult,
    iteration_collective_rows,
    iteration_row,
    rank_rows,
    summary,
)

SUMMARY_FILE = "summary.json"


class TrainRecord:
    """The run's result so far and, with `out`, its files; `failure` is the first write that
    failed ("path: reason"), None while every write succeeded."""

    def __init__(self, out: Path | None = None, params: dict[str, Any] | None = None) -> None:
        self.result: TrainResult | None = None
        self.failure: str | None = None
        self.dir: ResultDir | None = None
        self._tables: list[CsvAppender] = []
        self._ended = False
        if out is None:
            return
        self.dir = claim(out)  # ResultDirError (2) or ResultDirInUse (3): nothing started
        try:
            self.dir.write_params("train", params or {})
            self._tables = [self.dir.append_csv("iterations.csv", ITERATION_FIELDS),
                            self.dir.append_csv("collectives.csv", COLLECTIVE_FIELDS)]
        except OSError as err:
            self.dir.close()
            raise ResultDirError(_say(err, out)) from None

    @property
    def iterations(self) -> int:
        return len(self.result.iterations) if self.result else 0

    def iteration(self, result: TrainResult, it: IterationRun) -> None:
        """`on_iteration`: keep the result; append the iteration's rows and flush them."""
        self.result = result
        if not self._tables or self.failure:
            return
        self._write(lambda: self._append(result, it))

    def _append(self, result: TrainResult, it: IterationRun) -> None:
        iterations, collectives = self._tables
        iterations.append(iteration_row(result, it))
        for row in iteration_collective_rows(it):
            collectives.append(row)

    def finish(self, status: str) -> dict[str, Any] | None:
        """The run has ended (`complete`, `interrupted`, `failed`): the summary record (None
        when no iteration was measured), written with ranks.csv when there is a directory.
        Only the first call writes."""
        if self._ended:
            return None
        self._ended = True
        for table in self._tables:  # every row already flushed: closing writes nothing
            with contextlib.suppress(OSError):
                table.close()
        record = None if self.result is None else {**summary(self.result), "status": status}
        if self.dir is not None:
            result_dir, result = self.dir, self.result
            if result is not None:
                self._write(lambda: result_dir.write_csv("ranks.csv", rank_rows(result),
                                                         RANK_FIELDS))
                self._write(lambda: result_dir.write_json(SUMMARY_FILE, record))
            self._write(lambda: result_dir.update_params(status=status,
                                                         iterations=self.iterations))
            result_dir.close()
        return record

    def _write(self, step: Callable[[], object]) -> None:
        """One write; after a failure none is tried (the run's first failure is the one said)."""
        if self.failure:
            return
        try:
            step()
        except OSError as err:
            self.failure = _say(err, self.dir.path if self.dir else Path("."))


def _say(err: OSError, where: Path) -> str:
    """One line naming the path: a rename's target (`filename2`) rather than its temporary."""
    return f"{err.filename2 or err.filename or where}: {err.strerror or err}"
