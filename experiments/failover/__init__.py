"""Link failures and recoveries: `experiment` (`fabric-lab run failover`), `lab` (a fabric with
flows running and links to fail), `flows` (the flow workers in the hosts), `trial`, `measure`."""
