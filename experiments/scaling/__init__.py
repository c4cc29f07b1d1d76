"""Iteration time and scaling efficiency against per-GPU bus bandwidth (Baidu's curve)."""
