"""A lossy link: go-back-N against selective retransmission (IRN's and Ultra Ethernet's)."""
