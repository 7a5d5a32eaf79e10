"""A local OpenAI-compatible HTTP server for tests, benchmarks and demos.

Speaks the real wire format of ``POST /v1/chat/completions``, ``POST /v1/completions`` (with
``echo`` and ``logprobs``) and ``GET /v1/models``, and can be scripted: answer with any function,
fail the next N requests (429 with ``Retry-After``, 500, ...), send malformed bodies, and it
records every request it receives.

    python -m fakes.openai_server --port 8765 --latency 0.2
    python -m fakes.openai_server --port 8765 --responder judge   # answers like a pairwise judge
    export OPENAI_BASE_URL=http://127.0.0.1:8765/v1

In Python::

    with FakeOpenAIServer(latency=0.2) as server:
        server.fail_next(1, status=429, retry_after=1)
        ...  # point the client at server.base_url
        assert len(server.completion_requests) == 2

Control endpoints for a server started from the command line: ``GET /_fake/stats`` (request
counts), ``POST /_fake/reset`` (forget requests and scripted faults), ``POST /_fake/fail``
(body ``{"count": 2, "status": 429, "retry_after": 1}``) and ``POST /_fake/malform``
(body ``{"count": 1, "kind": "invalid_json"}``).

Rate limits (``--rpm``, ``--tpm``, or ``rate_limits=RateLimits(...)``) are enforced like OpenAI's:
per-minute limits refilled continuously, with a burst of ``burst_seconds`` worth of each; a request
is charged 1 request and its prompt tokens plus ``max_tokens`` on arrival. Every completion answer
carries ``x-ratelimit-{limit,remaining,reset}-{requests,tokens}``; a request over a limit gets 429
with ``Retry-After`` and ``retry-after-ms`` (the time until it would fit) and nothing else happens.

Token counts are made up but consistent: a token is a word or a punctuation mark with its leading
whitespace, an image is 85 tokens. Log-probabilities are deterministic in (previous token, token).

Chat requests may carry vLLM's ``prompt_logprobs`` (with ``add_generation_prompt`` and
``continue_final_message``): the prompt is rendered with a ChatML-style template
(:func:`chat_prompt_tokens`) and the answer gets vLLM's top-level ``prompt_logprobs`` list, whose
values depend on the request's images too (:func:`fake_prompt_logprob`).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

IMAGE_TOKENS = 85
_TOKEN = re.compile(r"\s*\w+|\s*[^\w\s]|\s+$")
MALFORMED_KINDS = ("invalid_json", "no_choices", "empty_choices", "not_object", "no_message", "html")
COMPLETION_PATHS = ("/v1/chat/completions", "/v1/completions")


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text)


def fake_logprob(previous: str, token: str) -> float:
    digest = hashlib.sha256(f"{previous}\x00{token}".encode()).digest()
    return -round(0.05 + int.from_bytes(digest[:2], "big") / 65535 * 7.95, 4)


SPECIAL_TOKEN_IDS = {"<|im_start|>": 1, "<|im_end|>": 2, "<|image_pad|>": 3}
MAX_PROMPT_LOGPROBS = 20  # vLLM's default --max-logprobs


def token_id(token: str) -> int:
    """A stable id per token text (special tokens have small fixed ids)."""
    if token in SPECIAL_TOKEN_IDS:
        return SPECIAL_TOKEN_IDS[token]
    return 1000 + int.from_bytes(hashlib.sha256(token.encode()).digest()[:4], "big") % 100_000_000


def images_key(urls: list[str]) -> str:
    """What the fake's prompt log-probabilities know of the images: a digest of their URLs."""
    return hashlib.sha256("\n".join(urls).encode()).hexdigest()[:16] if urls else ""


def fake_prompt_logprob(key: str, previous: str, token: str) -> float:
    """The log-probability of a prompt token after ``previous``, given images with ``images_key`` ``key``."""
    return fake_logprob(f"{key}\x00{previous}" if key else previous, token)


def chat_prompt_tokens(messages: list, *, add_generation_prompt: bool = True, continue_final_message: bool = False) -> list[str]:
    """The prompt tokens of a chat request under a ChatML-style template: each message is
    ``<|im_start|>`` + role + newline + content + ``<|im_end|>`` + newline, an image is
    ``IMAGE_TOKENS`` image tokens; the generation prompt opens an assistant turn; with
    ``continue_final_message`` the last message is left open (no ``<|im_end|>``)."""
    tokens: list[str] = []
    for index, message in enumerate(messages):
        tokens += ["<|im_start|>", *tokenize(f"{message.get('role')}\n")]
        content = message.get("content")
        parts = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
        for part in parts:
            if not isinstance(part, dict):
                continue
            if part.get("type") == "image_url":
                tokens += ["<|image_pad|>"] * IMAGE_TOKENS
            elif part.get("type") == "text":
                tokens += tokenize(str(part.get("text") or ""))
        if not (continue_final_message and index == len(messages) - 1):
            tokens += ["<|im_end|>", "\n"]
    if add_generation_prompt:
        tokens += ["<|im_start|>", *tokenize("assistant\n")]
    return tokens


def image_urls(messages: list) -> list[str]:
    return [
        str((part.get("image_url") or {}).get("url", ""))
        for message in messages
        if isinstance(message, dict) and isinstance(message.get("content"), list)
        for part in message["content"]
        if isinstance(part, dict) and part.get("type") == "image_url" and isinstance(part.get("image_url"), dict)
    ]


@dataclass
class Reply:
    """What a responder returns when it wants to set the usage numbers itself."""

    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: object
    received_at: float = field(default_factory=time.time)


Responder = Callable[[str, dict], "str | Reply"]


def message_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict) and part.get("type") == "text")
    return ""


def count_images(messages: list) -> int:
    return sum(
        1
        for message in messages
        if isinstance(message, dict) and isinstance(message.get("content"), list)
        for part in message["content"]
        if isinstance(part, dict) and part.get("type") == "image_url"
    )


def echo_responder(endpoint: str, body: dict) -> str:
    """The default: repeat the last user message (chat) or the prompt (completions)."""
    if endpoint == "chat":
        users = [m for m in body.get("messages", []) if isinstance(m, dict) and m.get("role") == "user"]
        text = message_text(users[-1].get("content")) if users else ""
        images = count_images(users[-1:])
        suffix = f" [{images} image{'s' if images != 1 else ''}]" if images else ""
        return f"You said: {text}{suffix}"
    return f" You said: {body.get('prompt', '')}"


class _Script:
    """Scripted faults, consumed one per completion request in arrival order."""

    def __init__(self) -> None:
        self._faults: deque[dict] = deque()
        self._lock = threading.Lock()

    def add(self, fault: dict, count: int) -> None:
        with self._lock:
            self._faults.extend(dict(fault) for _ in range(count))

    def take(self) -> dict | None:
        with self._lock:
            return self._faults.popleft() if self._faults else None

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._faults)


_JUDGED = re.compile(r"Response A:\s*(?P<a>.*?)\n\s*Response B:\s*(?P<b>.*?)(?:\n\n|$)", re.DOTALL)
_PREFERRED = re.compile(r"(?:Overall, Response|prefer(?:s|red)? Response)\s*([AB])\b", re.IGNORECASE)


def judge_responder(endpoint: str, body: dict) -> str:
    """A stand-in pairwise judge: prefers the longer response (a crude but deterministic rule),
    reasons briefly, and ends with the phrase crowdbench's judge prompt asks for; answers the
    verdict-extraction prompt with one letter. Other requests are echoed."""
    if endpoint != "chat":
        return echo_responder(endpoint, body)
    users = [m for m in body.get("messages", []) if isinstance(m, dict) and m.get("role") == "user"]
    text = message_text(users[-1].get("content")) if users else ""
    if "Which response did the judge finally prefer" in text:
        found = _PREFERRED.findall(text.split("Judge's comparison:", 1)[-1])
        return found[-1].upper() if found else "none"
    match = _JUDGED.search(text)
    if not match:
        return echo_responder(endpoint, body)
    a, b = match.group("a").strip(), match.group("b").strip()
    better = "A" if len(a) >= len(b) else "B"
    return (f"Step 1: the instruction asks for a response grounded in the image description. "
            f"Step 2: Response A has {len(a.split())} words, Response B has {len(b.split())} words; "
            f"the longer one covers more of what is asked.\nOverall, Response {better} is better.")


RESPONDERS = {"echo": echo_responder, "judge": judge_responder}


def _go_duration(seconds: float) -> str:
    """Seconds as OpenAI writes its reset headers: ``"120ms"``, ``"1.5s"``, ``"6m0s"``."""
    if seconds < 1:
        return f"{max(0, round(seconds * 1000))}ms"
    minutes, rest = divmod(seconds, 60)
    rest_text = f"{rest:.3f}".rstrip("0").rstrip(".") + "s"
    return f"{int(minutes)}m{rest_text}" if minutes else rest_text


class _Bucket:
    def __init__(self, per_minute: float, burst_seconds: float, now: float) -> None:
        self.per_minute = per_minute
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate * burst_seconds)
        self.level = self.capacity
        self.updated = now

    def refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.updated) * self.rate)
        self.updated = now

    def wait_for(self, amount: float) -> float:
        return max(0.0, (amount - self.level) / self.rate)


class RateLimits:
    """Requests and tokens per minute as token buckets (thread-safe); ``clock`` for tests."""

    def __init__(self, *, rpm: float | None = None, tpm: float | None = None, burst_seconds: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if (rpm is not None and rpm <= 0) or (tpm is not None and tpm <= 0) or burst_seconds <= 0:
            raise ValueError("rate limits and the burst must be positive")
        self.clock = clock
        now = clock()
        self.requests = _Bucket(rpm, burst_seconds, now) if rpm else None
        self.tokens = _Bucket(tpm, burst_seconds, now) if tpm else None
        self._lock = threading.Lock()
        self.accepted = 0
        self.refused = 0
        self.charged_tokens = 0

    def charge(self, tokens: int) -> tuple[bool, dict[str, str]]:
        """Take one request and ``tokens`` when both fit: (accepted, headers to send)."""
        with self._lock:
            now = self.clock()
            buckets = [(b, amount) for b, amount in ((self.requests, 1), (self.tokens, tokens)) if b is not None]
            for bucket, _ in buckets:
                bucket.refill(now)
            wait = max((bucket.wait_for(amount) for bucket, amount in buckets), default=0.0)
            accepted = wait == 0
            if accepted:
                for bucket, amount in buckets:
                    bucket.level -= amount
                self.accepted += 1
                self.charged_tokens += tokens
            else:
                self.refused += 1
            headers = {}
            for name, bucket in (("requests", self.requests), ("tokens", self.tokens)):
                if bucket is None:
                    continue
                headers[f"x-ratelimit-limit-{name}"] = str(int(bucket.per_minute))
                headers[f"x-ratelimit-remaining-{name}"] = str(max(0, int(bucket.level)))
                headers[f"x-ratelimit-reset-{name}"] = _go_duration((bucket.capacity - bucket.level) / bucket.rate)
            if not accepted:
                headers["retry-after-ms"] = str(max(1, round(wait * 1000)))
                headers["Retry-After"] = str(max(1, int(wait + 0.999)))
            return accepted, headers

    def stats(self) -> dict:
        with self._lock:
            return {"accepted": self.accepted, "rate_limited": self.refused, "charged_tokens": self.charged_tokens}


def charged_tokens(endpoint: str, body: dict) -> int:
    """What a request counts against the tokens limit: its prompt tokens plus ``max_tokens`` per choice."""
    if endpoint == "chat":
        messages = body.get("messages") or []
        prompt = sum(len(tokenize(message_text(m.get("content")))) for m in messages if isinstance(m, dict))
        prompt += IMAGE_TOKENS * count_images(messages)
    else:
        prompts = body.get("prompt")
        prompts = prompts if isinstance(prompts, list) else [prompts]
        prompt = sum(len(tokenize(p)) for p in prompts if isinstance(p, str))
    limit = body.get("max_completion_tokens", body.get("max_tokens"))
    try:
        completion = int(limit) * int(body.get("n") or 1) if limit is not None else 16
    except (TypeError, ValueError):
        completion = 16
    return prompt + completion


class FakeOpenAIServer:
    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        latency: float = 0.0,
        responder: Responder | None = None,
        models: tuple[str, ...] = ("fake-model",),
        api_key: str | None = None,
        verbose: bool = False,
        rate_limits: RateLimits | None = None,
    ) -> None:
        self.latency = latency
        self.rate_limits = rate_limits
        self.responder: Responder = responder or echo_responder
        self.models = models
        self.api_key = api_key  # when set, requests without "Bearer <api_key>" get 401
        self.verbose = verbose
        self._script = _Script()
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self.in_flight = 0  # completion requests being answered right now
        self.peak_in_flight = 0
        self._httpd = _Server((host, port), _handler_for(self))
        self._thread: threading.Thread | None = None

    # ---- lifecycle ---------------------------------------------------------------------------

    @property
    def host(self) -> str:
        return self._httpd.server_address[0]

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    def start(self) -> FakeOpenAIServer:
        # A short poll interval makes stop() quick; the server thread is idle between polls.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()

    # ---- scripting ---------------------------------------------------------------------------

    def fail_next(
        self, count: int = 1, *, status: int = 429, retry_after: float | str | None = None, message: str | None = None
    ) -> None:
        """The next ``count`` completion requests get ``status`` (with ``Retry-After`` if given)."""
        self._script.add({"status": status, "retry_after": retry_after, "message": message}, count)

    def malform_next(self, count: int = 1, *, kind: str = "invalid_json") -> None:
        """The next ``count`` completion requests get HTTP 200 with a broken body."""
        if kind not in MALFORMED_KINDS:
            raise ValueError(f"kind must be one of {MALFORMED_KINDS}")
        self._script.add({"malformed": kind}, count)

    def reset(self) -> None:
        self._script.clear()
        with self._lock:
            self._requests.clear()
            self.peak_in_flight = self.in_flight

    def _enter(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    @property
    def scripted_faults_left(self) -> int:
        return len(self._script)

    # ---- what was received -------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def completion_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.method == "POST" and r.path in COMPLETION_PATHS]

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def stats(self) -> dict:
        by_path: dict[str, int] = {}
        for request in self.requests:
            if not request.path.startswith("/_fake/"):
                by_path[request.path] = by_path.get(request.path, 0) + 1
        return {
            "received": sum(by_path.values()),
            "by_path": by_path,
            "peak_in_flight": self.peak_in_flight,
            "scripted_faults_left": len(self._script),
            "rate_limits": self.rate_limits.stats() if self.rate_limits is not None else None,
        }

    # ---- responses ---------------------------------------------------------------------------

    def answer(self, endpoint: str, body: dict) -> dict:
        """The JSON body of a successful response (real OpenAI shape)."""
        n = int(body.get("n") or 1)
        limit = body.get("max_completion_tokens", body.get("max_tokens"))
        if endpoint == "chat":
            return self._chat(body, n, limit)
        return self._completion(body, n, limit)

    def _reply(self, endpoint: str, body: dict, limit: int | None) -> tuple[list[str], str, Reply]:
        reply = self.responder(endpoint, body)
        if isinstance(reply, str):
            reply = Reply(reply)
        tokens = tokenize(reply.text)
        finish = "stop"
        if limit is not None and len(tokens) > int(limit):
            tokens, finish = tokens[: int(limit)], "length"
        return tokens, finish, reply

    def _chat(self, body: dict, n: int, limit: int | None) -> dict:
        messages = body["messages"]
        prompt_tokens = sum(len(tokenize(message_text(m.get("content")))) for m in messages) + IMAGE_TOKENS * count_images(
            messages
        )
        choices, completion_tokens = [], 0
        for index in range(n):
            tokens, finish, reply = self._reply("chat", body, limit)
            completion_tokens += reply.completion_tokens if reply.completion_tokens is not None else len(tokens)
            logprobs = None
            if body.get("logprobs"):
                top = int(body.get("top_logprobs") or 0)
                logprobs = {"content": [self._chat_logprob(prev, tok, top) for prev, tok in zip(["", *tokens], tokens)]}
            choices.append(
                {
                    "index": index,
                    "message": {"role": "assistant", "content": "".join(tokens), "refusal": None},
                    "logprobs": logprobs,
                    "finish_reason": finish,
                }
            )
            if reply.prompt_tokens is not None:
                prompt_tokens = reply.prompt_tokens
        if body.get("prompt_logprobs") is None:
            return self._envelope("chatcmpl", "chat.completion", body, choices, prompt_tokens, completion_tokens)
        prompt = chat_prompt_tokens(
            messages,
            add_generation_prompt=body.get("add_generation_prompt", True) is not False,
            continue_final_message=bool(body.get("continue_final_message")),
        )
        answer = self._envelope("chatcmpl", "chat.completion", body, choices, len(prompt), completion_tokens)
        answer["prompt_logprobs"] = self._prompt_logprobs(prompt, images_key(image_urls(messages)), int(body["prompt_logprobs"]))
        return answer

    @staticmethod
    def _prompt_logprobs(prompt: list[str], key: str, top: int) -> list:
        """vLLM's shape: None first, then {token_id: {logprob, rank, decoded_token}} with the prompt's
        own token first and the ``top`` most likely tokens after it."""
        entries: list = [None]
        for previous, token in zip(prompt, prompt[1:]):
            logprob = fake_prompt_logprob(key, previous, token)
            rank = 1 + token_id(previous + token) % 3  # the prompt's token is not always the likeliest
            entry = {str(token_id(token)): {"logprob": logprob, "rank": rank, "decoded_token": token}}
            for better in range(1, top + 1):
                if better == rank:
                    continue
                alternative = f"{token}~{better}"
                entry[str(token_id(alternative))] = {
                    "logprob": round(logprob + 0.5 * (rank - better), 4), "rank": better, "decoded_token": alternative,
                }
            entries.append(entry)
        return entries

    @staticmethod
    def _chat_logprob(previous: str, token: str, top: int) -> dict:
        logprob = fake_logprob(previous, token)
        alternatives = [{"token": token, "logprob": logprob, "bytes": list(token.encode())}]
        alternatives += [
            {"token": f"{token}{k}", "logprob": logprob - k, "bytes": list(f"{token}{k}".encode())} for k in range(1, top)
        ]
        return {"token": token, "logprob": logprob, "bytes": list(token.encode()), "top_logprobs": alternatives[:top]}

    def _completion(self, body: dict, n: int, limit: int | None) -> dict:
        prompts = body["prompt"] if isinstance(body["prompt"], list) else [body["prompt"]]
        echo = bool(body.get("echo"))
        wanted_logprobs = body.get("logprobs")
        choices, prompt_tokens, completion_tokens = [], 0, 0
        for prompt in prompts:
            prompt_part = tokenize(prompt)
            prompt_tokens += len(prompt_part)
            for _ in range(n):
                tokens, finish, reply = self._reply("completions", {**body, "prompt": prompt}, limit)
                completion_tokens += reply.completion_tokens if reply.completion_tokens is not None else len(tokens)
                if reply.prompt_tokens is not None:
                    prompt_tokens = reply.prompt_tokens
                logprobs = None
                if wanted_logprobs is not None:
                    logprobs = self._completion_logprobs(prompt_part, tokens, echo, int(wanted_logprobs))
                choices.append(
                    {
                        "text": (prompt if echo else "") + "".join(tokens),
                        "index": len(choices),
                        "logprobs": logprobs,
                        "finish_reason": finish,
                    }
                )
        return self._envelope("cmpl", "text_completion", body, choices, prompt_tokens, completion_tokens)

    @staticmethod
    def _completion_logprobs(prompt: list[str], generated: list[str], echo: bool, top: int) -> dict:
        # With echo the prompt tokens come first, and the very first one has no logprob (null), as
        # in the real API: nothing precedes it to condition on.
        shown = (prompt if echo else []) + generated
        previous = (["", *prompt] if echo else [prompt[-1] if prompt else ""]) + generated
        tokens, token_logprobs, top_logprobs, offsets = [], [], [], []
        offset = 0
        for position, token in enumerate(shown):
            tokens.append(token)
            offsets.append(offset)
            offset += len(token)
            if echo and position == 0:
                token_logprobs.append(None)
                top_logprobs.append(None)
                continue
            logprob = fake_logprob(previous[position], token)
            token_logprobs.append(logprob)
            alternatives = {token: logprob}
            for k in range(1, top):
                alternatives[f"{token}{k}"] = round(logprob - k, 4)
            top_logprobs.append(dict(list(alternatives.items())[:top]))
        return {"tokens": tokens, "token_logprobs": token_logprobs, "top_logprobs": top_logprobs, "text_offset": offsets}

    def _envelope(self, prefix: str, kind: str, body: dict, choices: list, prompt_tokens: int, completion_tokens: int) -> dict:
        return {
            "id": f"{prefix}-{uuid.uuid4().hex[:24]}",
            "object": kind,
            "created": int(time.time()),
            "model": body["model"],
            "system_fingerprint": "fp_fake",
            "choices": choices,
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    def models_list(self) -> dict:
        created = int(time.time())
        return {
            "object": "list",
            "data": [{"id": name, "object": "model", "created": created, "owned_by": "fake"} for name in self.models],
        }


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    # The default backlog of 5 drops connections when dozens of clients connect at once.
    request_queue_size = 512

    def handle_error(self, request, client_address) -> None:
        # A client that gave up (a cancelled batch, a timeout) is normal here, not worth a traceback.
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


def _error_body(message: str, kind: str, code: str | None = None, param: str | None = None) -> dict:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def _handler_for(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as clients' connection pools expect
        server_version = "FakeOpenAI/1.0"
        timeout = 120  # idle keep-alive connections are closed after this
        # Headers and body leave in two writes; with Nagle on, the body waits for the client's
        # delayed ACK (up to 40 ms per response).
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args) -> None:  # noqa: A002 - the stdlib's name
            if server.verbose:
                super().log_message(format, *args)

        def _send(self, status: int, payload: bytes, content_type: str = "application/json", headers=None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        def _send_json(self, status: int, body: object, headers=None) -> None:
            self._send(status, json.dumps(body).encode(), headers=headers)

        def _read_body(self) -> tuple[bytes, object]:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                return raw, json.loads(raw) if raw else None
            except ValueError:
                return raw, None

        def _authorized(self) -> bool:
            if server.api_key is None:
                return True
            if self.headers.get("Authorization") == f"Bearer {server.api_key}":
                return True
            self._send_json(
                401, _error_body("Incorrect API key provided.", "invalid_request_error", "invalid_api_key")
            )
            return False

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            server._record(RecordedRequest("GET", self.path, dict(self.headers), None))
            if self.path == "/_fake/stats":
                self._send_json(200, server.stats())
            elif self.path.rstrip("/") == "/v1/models":
                if self._authorized():
                    self._send_json(200, server.models_list())
            else:
                self._send_json(404, _error_body(f"Unknown path {self.path}", "invalid_request_error"))

        def do_POST(self) -> None:  # noqa: N802
            raw, body = self._read_body()
            server._record(RecordedRequest("POST", self.path, dict(self.headers), body if body is not None else raw))
            if self.path.startswith("/_fake/"):
                self._control(body if isinstance(body, dict) else {})
                return
            endpoint = {"/v1/chat/completions": "chat", "/v1/completions": "completions"}.get(self.path)
            if endpoint is None:
                self._send_json(404, _error_body(f"Unknown path {self.path}", "invalid_request_error"))
                return
            server._enter()
            try:
                self._complete(endpoint, body)
            finally:
                server._leave()

        def _complete(self, endpoint: str, body: object) -> None:
            limit_headers = {}
            if server.rate_limits is not None and isinstance(body, dict):
                if not self._authorized():
                    return
                accepted, limit_headers = server.rate_limits.charge(charged_tokens(endpoint, body))
                if not accepted:  # refused on arrival, as a real rate limiter does
                    self._send_json(429, _error_body("Rate limit reached (requests or tokens per minute).",
                                                     "requests", "rate_limit_exceeded"), headers=limit_headers)
                    return
            if not self._authorized():
                return
            fault = server._script.take()
            # A scripted refusal (429) is answered on arrival, as a real rate limiter does; other
            # faults and every answer come after the configured latency.
            if fault is not None and fault.get("status") == 429:
                self._fail(fault)
                return
            if server.latency:
                time.sleep(server.latency)
            if fault is not None and "status" in fault:
                self._fail(fault)
                return
            problem = self._invalid(endpoint, body)
            if problem:
                self._send_json(400, _error_body(problem[1], "invalid_request_error", param=problem[0]))
                return
            if fault is not None:
                self._malformed(fault["malformed"], endpoint, body)
                return
            try:
                answer = server.answer(endpoint, body)
            except Exception as exc:  # noqa: BLE001 - a broken responder is a server error
                self._send_json(500, _error_body(f"responder failed: {exc}", "server_error"))
                return
            self._send_json(200, answer, headers=limit_headers)

        @staticmethod
        def _invalid(endpoint: str, body: object) -> tuple[str, str] | None:
            if not isinstance(body, dict):
                return "body", "We could not parse the JSON body of your request."
            if not body.get("model"):
                return "model", "you must provide a model parameter"
            if endpoint == "chat":
                messages = body.get("messages")
                if not isinstance(messages, list) or not messages:
                    return "messages", "'messages' must be a non-empty array"
                if any(not isinstance(m, dict) or "role" not in m for m in messages):
                    return "messages", "every message needs a 'role'"
                problem = Handler._invalid_prompt_logprobs(body)
                if problem:
                    return problem
            elif not isinstance(body.get("prompt"), str | list):
                return "prompt", "'prompt' must be a string or an array of strings"
            return None

        @staticmethod
        def _invalid_prompt_logprobs(body: dict) -> tuple[str, str] | None:
            """vLLM's checks of its chat-template and prompt-logprob parameters."""
            if body.get("continue_final_message") and body.get("add_generation_prompt", True):
                return "continue_final_message", (
                    "Cannot set both `continue_final_message` and `add_generation_prompt` to True.")
            if body.get("continue_final_message") and body["messages"][-1].get("role") != "assistant":
                return "continue_final_message", "continue_final_message needs a final assistant message"
            wanted = body.get("prompt_logprobs")
            if wanted is None:
                return None
            if isinstance(wanted, bool) or not isinstance(wanted, int) or wanted < 0:
                return "prompt_logprobs", "`prompt_logprobs` must be a non-negative integer."
            if wanted > MAX_PROMPT_LOGPROBS:
                return "prompt_logprobs", (
                    f"Requested prompt logprobs of {wanted}, which is greater than max allowed: {MAX_PROMPT_LOGPROBS}")
            if body.get("stream"):
                return "prompt_logprobs", "`prompt_logprobs` are not available when `stream=True`."
            return None

        def _fail(self, fault: dict) -> None:
            status = int(fault["status"])
            headers = {}
            if fault.get("retry_after") is not None:
                headers["Retry-After"] = str(fault["retry_after"])
            if status == 429:
                kind = "rate_limit_exceeded"
            else:
                kind = "server_error" if status >= 500 else "invalid_request_error"
            message = fault.get("message") or f"{HTTPStatus(status).phrase} (scripted)"
            self._send_json(status, _error_body(message, kind, kind), headers=headers)

        def _malformed(self, kind: str, endpoint: str, body: dict) -> None:
            good = server.answer(endpoint, body)
            if kind == "invalid_json":
                self._send(200, json.dumps(good).encode()[:40])
            elif kind == "no_choices":
                good.pop("choices")
                self._send_json(200, good)
            elif kind == "empty_choices":
                self._send_json(200, {**good, "choices": []})
            elif kind == "not_object":
                self._send_json(200, [good])
            elif kind == "no_message":
                self._send_json(200, {**good, "choices": [{"index": 0, "finish_reason": "stop"}]})
            else:
                self._send(200, b"<html><body>502 Bad Gateway</body></html>", content_type="text/html")

        def _control(self, body: dict) -> None:
            if self.path == "/_fake/reset":
                server.reset()
                self._send_json(200, {"reset": True})
            elif self.path == "/_fake/fail":
                server.fail_next(
                    int(body.get("count", 1)), status=int(body.get("status", 429)), retry_after=body.get("retry_after")
                )
                self._send_json(200, {"scripted_faults_left": server.scripted_faults_left})
            elif self.path == "/_fake/malform":
                server.malform_next(int(body.get("count", 1)), kind=body.get("kind", "invalid_json"))
                self._send_json(200, {"scripted_faults_left": server.scripted_faults_left})
            else:
                self._send_json(404, _error_body(f"Unknown control path {self.path}", "invalid_request_error"))

    return Handler


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each completion answer")
    parser.add_argument("--model", action="append", dest="models", help="model name listed by /v1/models")
    parser.add_argument("--api-key", help="require this bearer key (default: accept any request)")
    parser.add_argument("--verbose", action="store_true", help="log every request")
    parser.add_argument("--rpm", type=float, help="enforce this many requests per minute (429 beyond it)")
    parser.add_argument("--tpm", type=float, help="enforce this many tokens per minute (prompt + max_tokens)")
    parser.add_argument("--burst-seconds", type=float, default=1.0,
                        help="how many seconds of each limit may be used at once (default 1)")
    parser.add_argument("--responder", choices=sorted(RESPONDERS), default="echo",
                        help="echo the prompt (default), or act as a pairwise judge (prefers the longer response)")
    args = parser.parse_args(argv)
    server = FakeOpenAIServer(
        host=args.host,
        port=args.port,
        latency=args.latency,
        models=tuple(args.models or ("fake-model",)),
        api_key=args.api_key,
        verbose=args.verbose,
        responder=RESPONDERS[args.responder],
        rate_limits=RateLimits(rpm=args.rpm, tpm=args.tpm, burst_seconds=args.burst_seconds)
        if args.rpm or args.tpm else None,
    )
    print(f"Fake OpenAI-compatible server on {server.base_url} (latency {args.latency}s)", flush=True)
    print(f"  export OPENAI_BASE_URL={server.base_url} LLM_MODEL={server.models[0]}", flush=True)
    try:
        server._httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server._httpd.server_close()


if __name__ == "__main__":
    main()
