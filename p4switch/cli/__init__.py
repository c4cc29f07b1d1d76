"""Command-line entry points of p4switch."""
