"""The C data plane of p4switch, under construction (README.md in this directory)."""
