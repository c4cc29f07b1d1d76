"""One module per area, each with `CASES: list[Case]` (see tests/hostile/inputs.py)."""
