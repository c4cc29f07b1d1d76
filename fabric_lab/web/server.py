"""The web view's HTTP server (aiohttp), on 127.0.0.1 only, in a thread of its own.

    server = WebServer(monitor, actions, fabric_json(spec), port=0).start()
    server.url            # http://127.0.0.1:PORT/
    server.stop()

Routes: `/` the page (with a per-server token in a meta tag), `/static/...` its script, style
and the vendored chart library, `/api/fabric` the drawing, `/api/stream` the live state as
server-sent events (`interval` apart), `POST /api/action` a button's request.

It takes commands from its own page only: every request must name this server in `Host` (a page
of another site reached through a rebound DNS name sends its own name), and a POST must come
from the page's origin (`Origin` is set by browsers on every cross-origin and every POST
request), carry the token in `X-Fabric-Lab-Token` and be JSON (which a plain HTML form cannot
send).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web

from fabric_lab.web.actions import ActionError, Actions
from fabric_lab.web.monitor import FabricMonitor

log = logging.getLogger(__name__)
STATIC = Path(__file__).resolve().parent / "static"
HOST = "127.0.0.1"
TOKEN_HEADER = "X-Fabric-Lab-Token"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class WebServer:
    def __init__(self, monitor: FabricMonitor, actions: Actions, fabric: dict, *, port: int = 0,
                 interval: float = 0.25):
        self.monitor, self.actions, self.fabric = monitor, actions, fabric
        self.port = port
        self.interval = interval
        self.token = secrets.token_urlsafe(24)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._stopping: asyncio.Event | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/"

    # ---- lifecycle -----------------------------------------------------------------------
    def start(self, timeout: float = 10.0) -> WebServer:
        self._thread = threading.Thread(target=self._serve, name="web-view", daemon=True)
        self._thread.start()
        if not self._started.wait(timeout):
            raise RuntimeError(f"the web view did not start within {timeout:g} s")
        if self._error is not None:
            raise RuntimeError(f"the web view cannot listen on {HOST}:{self.port}: "
                               f"{self._error}") from self._error
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
            site = web.TCPSite(self._runner, HOST, self.port, reuse_address=False)
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

    def _hosts(self) -> set[str]:
        return {f"{HOST}:{self.port}", f"localhost:{self.port}"}

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.host not in self._hosts():
            return web.Response(status=403, text="forbidden: unknown Host\n")
        origin = request.headers.get("Origin")
        if origin is not None and origin not in {f"http://{h}" for h in self._hosts()}:
            return web.Response(status=403, text="forbidden: another origin\n")
        if request.method not in ("GET", "HEAD"):
            if origin is None:
                return web.Response(status=403, text="forbidden: no Origin\n")
            if not secrets.compare_digest(request.headers.get(TOKEN_HEADER, ""), self.token):
                return web.Response(status=403, text="forbidden: no valid token\n")
            if request.content_type != "application/json":
                return web.Response(status=415, text="want application/json\n")
        response = await handler(request)
        if response.prepared:  # a stream: its headers are out already
            return response
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Content-Security-Policy"] = (
            "default-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
        return response

    async def _index(self, _request: web.Request) -> web.Response:
        page = (STATIC / "index.html").read_text()
        page = page.replace("{{TOKEN}}", self.token).replace("{{FABRIC}}", self.fabric["name"])
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
