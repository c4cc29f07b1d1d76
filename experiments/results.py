"""Result directories: where an experiment run writes its CSV, parameters and plots.

A run never overwrites an earlier one: the default place is `results/<experiment>/<timestamp>/`,
and an explicit `--out DIR` must be new or empty.
"""

from __future__ import annotations

import csv
import json
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from experiments.provenance import provenance

PARAMS_FILE = "params.json"


class ResultDirError(Exception):
    """The requested result directory cannot be used."""


def allocate(experiment: str, out: Path | None = None, base: Path = Path("results")) -> Path:
    """Create and return a fresh directory for one run of `experiment`."""
    if out is not None:
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            raise ResultDirError(f"{out} exists and is not an empty directory; results are never overwritten")
        out.mkdir(parents=True, exist_ok=True)
        return out
    stamp = time.strftime("%Y%m%d-%H%M%S")
    parent = base / experiment
    parent.mkdir(parents=True, exist_ok=True)
    for suffix in [""] + [f"-{i}" for i in range(1, 1000)]:
        candidate = parent / f"{stamp}{suffix}"
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        return candidate
    raise ResultDirError(f"no free result directory under {parent} for {stamp}")


class ResultDir:
    """One run's directory with writers for the files every experiment produces."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def write_params(self, experiment: str, params: Mapping[str, Any], **extra: Any) -> Path:
        record = {"experiment": experiment, "params": dict(params), **provenance(), **extra}
        return self.write_json(PARAMS_FILE, record)

    def update_params(self, **fields: Any) -> None:
        record = self.read_params()
        record.update(fields)
        self.write_json(PARAMS_FILE, record)

    def read_params(self) -> dict[str, Any]:
        return json.loads((self.path / PARAMS_FILE).read_text())

    def write_json(self, name: str, data: Any) -> Path:
        target = self.path / name
        target.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
        return target

    def write_csv(self, name: str, rows: Iterable[Mapping[str, Any]],
                  fieldnames: Sequence[str]) -> Path:
        target = self.path / name
        with target.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(fieldnames))
            writer.writeheader()
            for row in rows:
                writer.writerow({key: row.get(key, "") for key in fieldnames})
        return target

    def read_csv(self, name: str) -> list[dict[str, str]]:
        with (self.path / name).open(newline="") as handle:
            return list(csv.DictReader(handle))

    def plots(self) -> list[Path]:
        return sorted(self.path.glob("*.png"))
