"""Topology-aware placement: `experiment`, `paths` (the path model), `plots`."""
