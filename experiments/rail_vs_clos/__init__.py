"""Rail-optimised HPN 7.0 against a Clos whose servers put all their NICs on one ToR."""
