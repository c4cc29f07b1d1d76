"""STF tests (p4c's `.stf` format) run against the embedded switch."""

from p4switch.stf.parser import StfSyntaxError, parse_stf, parse_stf_file
from p4switch.stf.runner import Outcome, StfResult, run_statements, run_stf_files

__all__ = [
    "Outcome",
    "StfResult",
    "StfSyntaxError",
    "parse_stf",
    "parse_stf_file",
    "run_statements",
    "run_stf_files",
]
