"""p4switch package."""
