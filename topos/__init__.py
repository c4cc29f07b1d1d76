"""topos package."""
