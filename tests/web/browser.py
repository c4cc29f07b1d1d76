"""Driving the web view in headless Chromium (Debian's, through playwright).

The page's Content-Security-Policy forbids string evaluation, so waits poll with Python."""

from __future__ import annotations

import time
from collections.abc import Callable

from tests.web.conftest import CHROMIUM, FLAGS


def launch(playwright):
    return playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)


def wait_until(check: Callable[[], object], timeout: float, what: str, poll: float = 0.1):
    """Poll `check` until it returns something true; its last value on timeout in the error."""
    deadline = time.monotonic() + timeout
    value = None
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(poll)  # the page updates four times a second
    raise AssertionError(f"{what} within {timeout:g} s (last: {value!r})")


def updates(page) -> int:
    return int(page.locator("body").get_attribute("data-updates") or 0)


def open_view(page, url: str, timeout: float = 15.0) -> None:
    """Load the page and wait until it has drawn the fabric and had two live updates."""
    errors: list[str] = []
    page.on("pageerror", lambda err: errors.append(str(err)))
    page.goto(url)
    wait_until(lambda: updates(page) >= 2 or errors or page.locator("body").get_attribute("data-error"),
               timeout, "two live updates")
    assert not errors and not page.locator("body").get_attribute("data-error"), \
        (errors, page.locator("body").get_attribute("data-error"))
