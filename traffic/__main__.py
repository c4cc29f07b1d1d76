"""`python -m traffic ACTION ...`: the lab's one traffic tool (`traffic.command`)."""

import sys

from traffic.command import main

if __name__ == "__main__":
    sys.exit(main())
