"""What the load-balancing experiments share: a fabric running one load-balancing mode (`lab`),
one switch driven directly (`switch`, `single_switch`), balls-into-bins expectations
(`ballsbins`)."""
