"""Incast, ECN and PFC: `experiment`, `lab` (the congestion fabric), `trial`, `drops`, `plots`."""
