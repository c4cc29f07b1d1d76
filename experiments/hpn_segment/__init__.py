"""An HPN 7.0 segment: `experiment`, `plots`."""
