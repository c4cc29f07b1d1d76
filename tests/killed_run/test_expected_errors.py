"""Every error `fabric-lab` reports as one line names a class that exists: an entry left behind
by a moved module would silently turn that error back into a traceback."""

from __future__ import annotations

import importlib

import pytest

from fabric_lab.cli import EXPECTED_ERRORS, expected_error


@pytest.mark.parametrize(("module", "name"), EXPECTED_ERRORS)
def test_each_expected_error_names_an_exception_class(module: str, name: str) -> None:
    cls = getattr(importlib.import_module(module), name)
    assert isinstance(cls, type) and issubclass(cls, Exception)


def test_a_result_directory_error_is_one_line_and_a_bug_is_not() -> None:
    from experiments.framework.results import ResultDirError

    assert expected_error(ResultDirError("results/x exists"))
    assert not expected_error(KeyError("a bug"))
