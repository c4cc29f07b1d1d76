"""AI Fabric Lab: the `fabric-lab` command line."""
