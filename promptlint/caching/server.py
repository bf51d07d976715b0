"""The emulator's transport: waitress, a maintained pure-Python WSGI server, on loopback.

The emulator's rules live in :mod:`promptlint.caching.emulator`; this module only serves them
with bounds a test suite's load and a hostile client cannot break: a thread pool, a listen
backlog, a cap on open connections, an idle/slow-client timeout, a body limit (413), and every
error waitress itself answers (a bad ``Content-Length``, oversized headers or body) in the
provider's JSON error shape instead of a text page.
"""

from __future__ import annotations

import json
import logging
import signal
import socket
import sys
import threading
from typing import Any

import click
from waitress.channel import HTTPChannel
from waitress.server import create_server
from waitress.task import ErrorTask

from promptlint.caching.emulator import MAX_BODY_BYTES, ApiError, Emulator, error_body
from promptlint.caching.model import CacheModel

THREADS = 8
"""Worker threads; the cache model is fast and holds one lock, so more would only queue."""
CONNECTION_LIMIT = 512
"""Open connections at most; past this waitress stops accepting until some close (they wait in
the backlog instead of being reset)."""
BACKLOG = 1024
IDLE_SECONDS = 30.0
"""A connection with no complete request for this long is closed (idle and slow clients)."""


class _JsonErrorTask(ErrorTask):
    """waitress's own error replies (bad framing, too large) in the provider's JSON error shape."""

    def execute(self) -> None:
        error = self.request.error
        path = getattr(self.request, "path", "") or ""
        if isinstance(path, bytes):
            path = path.decode("latin-1")
        message = str(error.body or error.reason)
        if error.code == 413:
            message = "Request exceeds the maximum allowed number of bytes."
        body = json.dumps(error_body(path, ApiError(error.code, message))).encode("utf-8")
        self.status = f"{error.code} {error.reason}"
        self.response_headers.append(("Content-Type", "application/json"))
        self.set_close_on_finish()
        self.content_length = len(body)
        self.write(body)


class _Channel(HTTPChannel):
    error_task_class = _JsonErrorTask


class EmulatorServer:
    """The emulator on a real HTTP server; ``url`` is what SDK ``base_url`` options take.

    ``start()`` serves on a background thread, ``shutdown()`` stops it. ``cache`` and ``app``
    (the :class:`Emulator`) are exposed for tests.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, cache: CacheModel | None = None, log: bool = False,
                 *, threads: int = THREADS, connection_limit: int = CONNECTION_LIMIT,
                 idle_seconds: float = IDLE_SECONDS, max_body: int = MAX_BODY_BYTES):
        if not logging.getLogger("waitress").handlers:  # a user's own logging set-up wins
            quiet_waitress(log)
        self.app = Emulator(cache, log)
        self.cache = self.app.cache
        listen = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        self._server = create_server(
            self.app, listen=listen, threads=threads, connection_limit=connection_limit, backlog=BACKLOG,
            channel_timeout=idle_seconds, cleanup_interval=max(0.5, min(idle_seconds / 2, 30.0)),
            max_request_body_size=max_body, max_request_header_size=256 * 1024, ident="promptlint-emulator",
            expose_tracebacks=False, clear_untrusted_proxy_headers=False)
        self._server.channel_class = _Channel
        self._thread: threading.Thread | None = None
        self._closed = False

    @property
    def server_address(self) -> tuple[str, int]:
        """(host, port) the server listens on."""
        return self._server.effective_host, self._server.effective_port

    @property
    def url(self) -> str:
        """``http://host:port`` (an IPv6 host in brackets)."""
        host, port = self.server_address
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{port}"

    def start(self) -> threading.Thread:
        """Serve on a background thread."""
        self._thread = threading.Thread(target=self._server.run, name="promptlint-emulator", daemon=True)
        self._thread.start()
        return self._thread

    def shutdown(self) -> None:
        """Stop serving: close every socket from the server's own loop, stop the workers."""
        server = self._server
        if self._closed:
            return
        from waitress import wasyncore

        try:
            if self._thread is None or not self._thread.is_alive():
                raise OSError("not serving")
            server.trigger.pull_trigger(lambda: wasyncore.close_all(server._map))
        except OSError:  # the loop is gone or its wake-up pipe is: close from here
            wasyncore.close_all(server._map, ignore_all=True)
        if self._thread is not None:
            self._thread.join(timeout=10)
        # close_all closed every socket and the trigger pipe exactly once; closing them again
        # later would close whatever file descriptors the numbers were reused for
        self._closed = True
        server.task_dispatcher.shutdown(timeout=5)

    def server_close(self) -> None:
        """Release the listening socket and the trigger pipe (done by :meth:`shutdown` already;
        safe to call twice)."""
        self.shutdown()


def quiet_waitress(verbose: bool) -> None:
    """Route waitress's own log (queue depth, connection limit) to stderr with ``verbose``, else nowhere."""
    logger = logging.getLogger("waitress")
    logger.propagate = False
    logger.handlers[:] = []
    if verbose:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("emulate: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    else:
        logger.addHandler(logging.NullHandler())


@click.command("emulate")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on (loopback by default).")
@click.option("--port", default=0, show_default=True, type=click.IntRange(0, 65535), help="Port; 0 picks a free one.")
@click.option("--verbose", is_flag=True, help="Log each request to stderr.")
def emulate_command(host: str, port: int, verbose: bool) -> None:
    """Run the offline prompt-cache emulator (Anthropic Messages, OpenAI Chat and Responses,
    Gemini generateContent and cachedContents).

    Prints its URL (the SDKs' base URL, for every provider) on the first line of stdout, then
    serves until SIGINT or SIGTERM and exits 0. Exit 2 when it cannot listen.
    """
    quiet_waitress(verbose)
    try:
        server = EmulatorServer(host, port, log=verbose)
    except (OSError, ValueError, socket.gaierror) as exc:
        click.echo(f"promptlint emulate: cannot listen on {host}:{port}: {getattr(exc, 'strerror', None) or exc}",
                   err=True)
        sys.exit(2)
    stop = threading.Event()

    def _stop(signum: int, frame: Any) -> None:  # noqa: ARG001 - signal handler signature
        stop.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    server.start()
    click.echo(server.url)
    sys.stdout.flush()
    while not stop.wait(0.2):  # a timed wait lets the signal handler run promptly
        pass
    server.shutdown()
    server.server_close()
