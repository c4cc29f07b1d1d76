"""ECMP hashing imbalance on one switch: `experiment`."""
