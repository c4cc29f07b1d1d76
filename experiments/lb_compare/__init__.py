"""Load-balancing modes compared: `experiment`, `scenarios`, `plots`."""
