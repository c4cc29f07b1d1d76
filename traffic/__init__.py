"""traffic package."""
