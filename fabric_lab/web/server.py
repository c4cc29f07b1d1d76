"""The web view's HTTP server (aiohttp), on 127.0.0.1 unless told otherwise, in a thread of its own.

    server = WebServer(monitor, actions, fabric_json(spec), port=0).start()
    server.url            # http://127.0.0.1:PORT/?token=...  (what to open)
    server.url_for("api/state")   # the same token, another path (for scripts)
    server.stop()

Routes: `/` the page, `/static/...` its script, style and the vendored chart library,
`/api/fabric` the drawing, `/api/stream` the live state as server-sent events (`interval`
apart), `POST /api/action` a button's request.

Every request needs the server's token, a random secret made at start, as Jupyter's does: in the
URL (`?token=`), in an `Authorization: token ...` header, or in the cookie the first page load
with the token in its URL sets (HttpOnly, SameSite=Strict, named after the port); without it the
answer is 401, pages and static files included. No page holds the token, so nothing that reads
a page learns it. Besides, a request must name this server in `Host` (a page of another site
reached through a rebound DNS name sends its own name; on a wildcard address any name is
taken, the token guarding alone), and a POST must come from the page's own origin (`Origin`,
which browsers set on every POST) and be JSON (which a plain HTML form cannot send).
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import ipaddress
import json
import logging
import os
import secrets
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web

from fabric_lab.web.actions import ActionError, Actions
from fabric_lab.web.monitor import FabricMonitor
from topos.errors import MachineError

log = logging.getLogger(__name__)
STATIC = Path(__file__).resolve().parent / "static"
HOST = "127.0.0.1"
COOKIE_PREFIX = "fabric-lab-token-"  # + the port: cookies are shared by every port of a host
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class WebViewError(MachineError):
    """The web view cannot listen where it was asked to (the port is taken, no such address)."""


def is_loopback(host: str) -> bool:
    return host == "localhost" or ipaddress.ip_address(host).is_loopback


def _netloc(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class WebServer:
    def __init__(self, monitor: FabricMonitor, actions: Actions, fabric: dict, *, port: int = 0,
                 host: str = HOST, interval: float = 0.25):
        self.monitor, self.actions, self.fabric = monitor, actions, fabric
        self.host, self.port = host, port
        self.interval = interval
        self.token = secrets.token_urlsafe(32)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._stopping: asyncio.Event | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None

    @property
    def wildcard(self) -> bool:
        """Listening on every address of the machine (0.0.0.0, ::)."""
        return self.host != "localhost" and ipaddress.ip_address(self.host).is_unspecified

    @property
    def base_url(self) -> str:
        """The server's root without the token (a wildcard address shown as loopback)."""
        host = ("::1" if ":" in self.host else HOST) if self.wildcard else self.host
        return f"http://{_netloc(host, self.port)}/"

    @property
    def url(self) -> str:
        """The page, with the token: what to open in a browser."""
        return self.url_for("")

    def url_for(self, path: str) -> str:
        """`path` (no leading slash) on this server, with the token."""
        return f"{self.base_url}{path}?token={self.token}"

    @property
    def cookie(self) -> str:
        """The name of the cookie that carries the token after the first page load."""
        return f"{COOKIE_PREFIX}{self.port}"

    def announcement(self) -> str:
        """What to print when the view starts: its URL, and a warning line when it listens
        beyond loopback."""
        if is_loopback(self.host):
            return f"web view: {self.url} (this machine only)"
        where = "every address of this machine" if self.wildcard else self.host
        return (f"web view: {self.url}\n"
                f"warning: the web view listens on {where}, beyond this machine: whoever reaches "
                f"port {self.port} and learns the token (plain HTTP carries it unencrypted) can "
                f"fail links and load programs")

    # ---- lifecycle -----------------------------------------------------------------------
    def start(self, timeout: float = 10.0) -> WebServer:
        self._thread = threading.Thread(target=self._serve, name="web-view", daemon=True)
        self._thread.start()
        if not self._started.wait(timeout):
            raise WebViewError(f"the web view did not start within {timeout:g} s")
        if self._error is not None:
            errno = getattr(self._error, "errno", None)
            reason = os.strerror(errno) if errno else self._error
            raise WebViewError(f"the web view cannot listen on {_netloc(self.host, self.port)}: "
                               f"{reason}") from self._error
        self.monitor.start()
        return self

    def stop(self) -> None:
        self.monitor.stop()
        if self._loop is not None and self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None

    def __enter__(self) -> WebServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _serve(self) -> None:
        self._loop = asyncio.new_event_loop()
        try:
            self._loop.run_until_complete(self._main())
        finally:
            self._loop.close()

    async def _main(self) -> None:
        self._stopping = asyncio.Event()
        self._runner = web.AppRunner(self.app(), handle_signals=False, shutdown_timeout=1.0)
        try:
            await self._runner.setup()
            site = web.TCPSite(self._runner, self.host, self.port, reuse_address=False)
            await site.start()
            self.port = self._runner.addresses[0][1]
        except OSError as err:
            self._error = err
            self._started.set()
            await self._runner.cleanup()
            return
        self._started.set()
        await self._stopping.wait()
        await self._runner.cleanup()

    # ---- the application -----------------------------------------------------------------
    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._guard], client_max_size=16 * 1024)
        app.router.add_get("/", self._index)
        app.router.add_get("/api/fabric", self._fabric)
        app.router.add_get("/api/state", self._state)
        app.router.add_get("/api/stream", self._stream)
        app.router.add_post("/api/action", self._action)
        app.router.add_static("/static/", STATIC, follow_symlinks=False)
        return app

    def _host_allowed(self, host: str) -> bool:
        if self.wildcard:
            return True
        names = {_netloc(HOST, self.port), f"localhost:{self.port}",
                 _netloc(self.host, self.port)}
        return host in names

    def _token_in(self, request: web.Request) -> str | None:
        """How the request carries the token ("query", "header", "cookie"), None if it does not."""
        scheme, _, value = request.headers.get("Authorization", "").partition(" ")
        offered = {"query": request.query.get("token", ""),
                   "header": value.strip() if scheme.lower() == "token" else "",
                   "cookie": request.cookies.get(self.cookie, "")}
        for how, token in offered.items():
            if token and secrets.compare_digest(token.encode(), self.token.encode()):
                return how
        return None

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        how = self._token_in(request)
        response = self._refusal(request, how) or await handler(request)
        if response.prepared:  # a stream: its headers are out already
            return response
        if how == "query":
            response.set_cookie(self.cookie, self.token, httponly=True, samesite="Strict", path="/")
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"  # the token stays off other sites
        response.headers["Content-Security-Policy"] = (
            "default-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; "
            "base-uri 'none'; form-action 'none'")
        return response

    def _refusal(self, request: web.Request, how: str | None) -> web.Response | None:
        """The answer to a request this server does not take (`how`: how it carries the token),
        None to a request it takes."""
        if not self._host_allowed(request.host):
            return web.Response(status=403, text="forbidden: unknown Host\n")
        if how is None:
            return web.Response(status=401, headers={"WWW-Authenticate": "Token"},
                                text="unauthorized: open the URL the web view printed when it "
                                     "started (it ends in ?token=...)\n")
        origin = request.headers.get("Origin")
        if origin is not None and origin != f"http://{request.host}":
            return web.Response(status=403, text="forbidden: another origin\n")
        if request.method not in ("GET", "HEAD"):
            if origin is None:
                return web.Response(status=403, text="forbidden: no Origin\n")
            if request.content_type != "application/json":
                return web.Response(status=415, text="want application/json\n")
        return None

    async def _index(self, _request: web.Request) -> web.Response:
        page = (STATIC / "index.html").read_text()
        page = page.replace("{{FABRIC}}", html.escape(str(self.fabric["name"])))
        return web.Response(text=page, content_type="text/html",
                            headers={"Cache-Control": "no-store"})

    async def _fabric(self, _request: web.Request) -> web.Response:
        return web.json_response(self.fabric)

    async def _state(self, _request: web.Request) -> web.Response:
        loop = asyncio.get_running_loop()
        return web.json_response(await loop.run_in_executor(None, self.monitor.snapshot))

    async def _stream(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream",
                                               "Cache-Control": "no-store"})
        await response.prepare(request)
        loop = asyncio.get_running_loop()
        stopping = self._stopping
        assert stopping is not None  # set when the server starts
        with contextlib.suppress(ConnectionResetError, asyncio.CancelledError):
            while not stopping.is_set():
                state = await loop.run_in_executor(None, self.monitor.snapshot)
                await response.write(f"data: {json.dumps(state)}\n\n".encode())
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(stopping.wait(), self.interval)
        return response

    async def _action(self, request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except ValueError:
            return web.json_response({"ok": False, "message": "the body is not JSON"}, status=400)
        if not isinstance(body, dict):
            return web.json_response({"ok": False, "message": "want a JSON object"}, status=400)
        loop = asyncio.get_running_loop()
        try:
            message = await loop.run_in_executor(None, self.actions.run, body)
        except ActionError as err:
            return web.json_response({"ok": False, "message": str(err)}, status=400)
        log.info("web view: %s", message)
        return web.json_response({"ok": True, "message": message})
