"""One degraded link during training: every rank slows, the lab names the link."""
