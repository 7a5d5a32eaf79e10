"""HTTP plumbing shared by the crowd-provider fakes (MTurk, Prolific).

A fake is a :class:`FakeService` subclass that turns an :class:`HTTPRequest` into an
:class:`HTTPResponse`. This module gives every fake the same life cycle (a free localhost port, a
background thread, ``url``, ``stop()``, use as a context manager), the same record of the calls it
received, the same scripted faults ("the next N calls of operation X fail") and the same command
line. Rehearsal controls are Python methods on the fake; the names listed in ``CONTROL_METHODS``
are also reachable as ``POST /_fake/<name>`` with keyword arguments as a JSON object, so a fake
started from the command line can be driven by another process.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

CONTROL_PREFIX = "/_fake/"


@dataclass(frozen=True)
class HTTPRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # names lower-cased
    body: bytes

    def header(self, name: str, default: str = "") -> str:
        return self.headers.get(name.lower(), default)

    def json(self) -> Any:
        return json.loads(self.body.decode("utf-8")) if self.body else None


@dataclass
class HTTPResponse:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    # Close the connection instead of answering (the client sees it closed before any answer).
    dropped: bool = False

    @classmethod
    def drop(cls) -> HTTPResponse:
        return cls(0, dropped=True)

    @classmethod
    def json(cls, status: int, payload: Any, content_type: str = "application/json",
             headers: dict[str, str] | None = None) -> HTTPResponse:
        body = json.dumps(payload, default=_json_default).encode("utf-8")
        return cls(status, body, {"Content-Type": content_type, **(headers or {})})


@dataclass(frozen=True)
class RecordedCall:
    """One request as the fake understood it, and how it answered."""

    operation: str
    params: Any
    status: int
    error: str | None  # the error code or type the fake answered with, None on success
    at: float  # the fake's clock, epoch seconds


@dataclass
class _Fault:
    remaining: int
    operation: str | None
    respond: Callable[[], HTTPResponse]
    after_processing: bool

    def matches(self, operation: str) -> bool:
        return self.remaining > 0 and self.operation in (None, operation)


class Clock:
    """Wall-clock time plus an offset, so rehearsals can jump past deadlines and expiries."""

    def __init__(self) -> None:
        self._offset = 0.0
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return time.time() + self._offset

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._offset += seconds


class FakeService:
    """Base class of the fakes: server life cycle, call log, scripted faults, controls."""

    #: rehearsal methods exposed as ``POST /_fake/<name>``
    CONTROL_METHODS: frozenset[str] = frozenset({"calls", "advance_time", "reset_calls", "drop_next"})
    DEFAULT_PORT = 0

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._host = host
        self._requested_port = port
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        # One lock for all state: requests are served on several threads.
        self._lock = threading.RLock()
        self._calls: list[RecordedCall] = []
        self._faults: list[_Fault] = []
        self.clock = Clock()

    # -- life cycle ---------------------------------------------------------------------------

    def start(self) -> FakeService:
        if self._server is not None:
            return self
        self._server = _Server((self._host, self._requested_port), _handler_for(self))
        self._thread = threading.Thread(
            # A short poll interval keeps stop() quick; tests start and stop many fakes.
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
            name=f"{type(self).__name__}", daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        self._server.close_connections()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("the fake is not running; call start() first")
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://{self._host}:{self.port}"

    # -- call log -----------------------------------------------------------------------------

    def calls(self, operation: str | None = None) -> list[RecordedCall]:
        """Every call received, oldest first, including those answered with an injected fault."""
        with self._lock:
            return [c for c in self._calls if operation is None or c.operation == operation]

    def reset_calls(self) -> None:
        with self._lock:
            self._calls.clear()

    def advance_time(self, seconds: float) -> None:
        """Move the fake's clock forward (deadlines, expiries, auto-approval)."""
        self.clock.advance(seconds)

    # -- scripted faults ----------------------------------------------------------------------

    def _add_fault(self, count: int, operation: str | None, respond: Callable[[], HTTPResponse],
                   after_processing: bool = False) -> None:
        if count < 1:
            raise ValueError("count must be at least 1")
        with self._lock:
            self._faults.append(_Fault(count, operation, respond, after_processing))

    def drop_next(self, count: int = 1, operation: str | None = None, after_processing: bool = True) -> None:
        """Close the connection of the next ``count`` calls (of ``operation``, or any) without an
        answer. By default the call takes effect first, as when the network fails after the server
        did the work: a retry then meets what the first attempt made (an idempotency token, a state
        already set). With ``after_processing=False`` nothing happens before the connection closes."""
        self._add_fault(count, operation, HTTPResponse.drop, after_processing)

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def _take_fault(self, operation: str) -> _Fault | None:
        for fault in self._faults:
            if fault.matches(operation):
                fault.remaining -= 1
                return fault
        return None

    # -- request handling ---------------------------------------------------------------------

    def _operation_of(self, request: HTTPRequest) -> tuple[str, Any]:
        """(operation name, parameters) used for the call log and to match scripted faults."""
        raise NotImplementedError

    def _handle(self, request: HTTPRequest, operation: str, params: Any) -> HTTPResponse:
        raise NotImplementedError

    def _error_code_of(self, response: HTTPResponse) -> str | None:
        """The error code a response carries, for the call log; None on success."""
        return None if response.status < 400 else str(response.status)

    def _logged_error_of(self, response: HTTPResponse) -> str | None:
        return "connection closed" if response.dropped else self._error_code_of(response)

    def dispatch(self, request: HTTPRequest) -> HTTPResponse:
        if request.path.startswith(CONTROL_PREFIX):
            return self._control(request)
        operation, params = self._operation_of(request)
        with self._lock:
            fault = self._take_fault(operation)
            if fault is not None and not fault.after_processing:
                response = fault.respond()
            else:
                response = self._handle(request, operation, params)
                if fault is not None:
                    # The work is done but the answer is lost, as after a network timeout.
                    response = fault.respond()
            self._calls.append(RecordedCall(operation, params, response.status,
                                            self._logged_error_of(response), self.clock.now()))
        return response

    def _control(self, request: HTTPRequest) -> HTTPResponse:
        name = request.path[len(CONTROL_PREFIX):].strip("/")
        if request.method != "POST" or name not in self.CONTROL_METHODS:
            return HTTPResponse.json(404, {"error": f"unknown control {request.method} {name!r}",
                                           "controls": sorted(self.CONTROL_METHODS)})
        try:
            kwargs = request.json() or {}
            result = getattr(self, name)(**kwargs)
        except (TypeError, ValueError, KeyError, LookupError) as exc:
            return HTTPResponse.json(400, {"error": str(exc)})
        return HTTPResponse.json(200, {"result": result})

    # -- command line -------------------------------------------------------------------------

    @classmethod
    def main(cls, argv: Iterable[str] | None = None, description: str | None = None) -> None:
        parser = argparse.ArgumentParser(description=description or cls.__doc__)
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=cls.DEFAULT_PORT)
        cls._add_arguments(parser)
        args = parser.parse_args(list(argv) if argv is not None else None)
        fake = cls._from_arguments(args)
        fake.start()
        print(f"{cls.__name__} listening on {fake.url} (controls: POST {CONTROL_PREFIX}<name>)",
              flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
        finally:
            fake.stop()

    @classmethod
    def _add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """Subclasses add their own command-line options here."""

    @classmethod
    def _from_arguments(cls, args: argparse.Namespace) -> FakeService:
        return cls(host=args.host, port=args.port)


def _json_default(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # Rebinding a fixed port right after a previous run must not fail.
    allow_reuse_address = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()

    def process_request(self, request, client_address) -> None:
        with self._open_lock:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        """End kept-alive connections too, so a stopped fake answers nobody."""
        with self._open_lock:
            open_sockets, self._open = list(self._open), set()
        for sock in open_sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # the client already closed it


def _handler_for(service: FakeService) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # Keep-alive: boto3 and httpx reuse connections.
        protocol_version = "HTTP/1.1"
        # Headers and body go out in separate writes; with Nagle on, each kept-alive request
        # would wait for the client's delayed ACK (about 40 ms).
        disable_nagle_algorithm = True
        server_version = f"{type(service).__name__}/1"

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            parts = urlsplit(self.path)
            request = HTTPRequest(
                method=self.command,
                path=parts.path,
                query=parse_qs(parts.query, keep_blank_values=True),
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body,
            )
            try:
                response = service.dispatch(request)
            except Exception as exc:  # a bug in the fake must surface as a 500, not a hang
                traceback.print_exc(file=sys.stderr)
                response = HTTPResponse.json(500, {"error": f"{type(exc).__name__}: {exc}"})
            if response.dropped:
                # No status line, no headers: the client reads an end of stream.
                self.close_connection = True
                try:
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                return
            self.send_response(response.status)
            for name, value in response.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(response.body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(response.body)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _serve

        def log_message(self, format: str, *args: Any) -> None:
            # Quiet by default: tests make hundreds of calls.
            pass

    return Handler
