"""Collective communication patterns: schedules, rank placement, and a runner over real hosts."""
