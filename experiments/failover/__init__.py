"""Link failures and recoveries: `experiment` (`fabric-lab run failover`) and `trial` (one
failure, its flows' outcomes), on the framework's `FailoverLab` (`experiments.framework.
failover_lab`) and `recovery`."""
