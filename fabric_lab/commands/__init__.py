"""Subcommands of `fabric-lab`; each module has `register(subparsers)` setting `func` on its parser."""
