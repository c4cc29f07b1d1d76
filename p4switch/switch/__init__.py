"""The p4switch process: ports, traffic manager, data-plane loop, runtime CLI channel."""
