"""Writing an experiment's plots: every figure laid out, saved as PNG and closed the same way."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def save_figure(fig: Any, path: Path, dpi: int = 120) -> Path:
    """Lay `fig` out, write it to `path` as PNG and close it; returns `path`."""
    import matplotlib.pyplot as plt  # the caller has drawn with it: already imported

    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path
