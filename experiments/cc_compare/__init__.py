"""Congestion control compared (none, DCQCN, HPCC): `experiment`, `trial`, `plots`."""
