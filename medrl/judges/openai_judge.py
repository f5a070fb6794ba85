"""A judge on any OpenAI-compatible chat endpoint: OpenAI (GPT-5-mini, GPT-4o), a vLLM server,
or ``medrl serve-judge``. Built on the official ``openai`` SDK (``AsyncOpenAI``).

What makes ~100K calls per epoch affordable and safe:

- bounded concurrency (a semaphore of ``concurrency`` requests in flight);
- retries with exponential backoff and jitter on 429, 5xx, timeouts, connection errors and
  malformed HTTP bodies (``Retry-After`` honoured, capped); the SDK's own retries are off so every
  retry is counted; an unparseable verdict is re-asked ``parse_retries`` times;
- strict verdict parsing (:mod:`medrl.judges.replies`): what does not parse is *unscored*;
- a persistent SQLite cache keyed by model + messages + parameters (:mod:`medrl.judges.cache`),
  and de-duplication of identical requests in flight (GRPO groups repeat short answers);
- accounting in :class:`~medrl.judges.base.JudgeStats` (calls, cache hits, merged duplicates,
  retries, failures, input/output tokens).

The API key is read from the environment variable ``api_key_env``; it never appears in a log line
or in an error message (every message is passed through :meth:`OpenAIJudge._sanitise`). Local
servers need no key ("EMPTY" is sent). A password or token inside ``base_url``
(``http://user:pw@host/v1``, ``?token=...``) is sent to the endpoint but never written or logged:
the judge's ``endpoint``, its identity (eval folders, cache keys) and its messages carry the URL
redacted by :func:`medrl.common.urls.redact_url`. A query in ``base_url`` is sent with every
request (``default_query``), not glued into the request path.

Redirects are never followed: an endpoint answering 301/302/303/307/308 makes the request
unscored (never cached) with an error naming the configured URL and the redirect's target. A
verdict from a server the user did not name must not be scored, nor cached under the named
endpoint, where it would answer for the honest server later.

All requests run on one event loop owned by the judge (a daemon thread), so the HTTP client,
the semaphore and the in-flight table are shared by every caller - TRL's reward loop,
``run_sync`` from plain code, several reward functions at once.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import hashlib
import io
import json
import logging
import os
import random
import re
import threading
from pathlib import Path
from typing import Any, Callable, Sequence

from medrl.judges import prompts
from medrl.judges.base import JUDGES, JudgeAuthError, JudgeStats, source_version
from medrl.judges.cache import JudgeCache, cache_key
from medrl.answers.guard import guard_answer
from medrl.judges.replies import (
    VerdictParseError,
    parse_audit,
    parse_key_steps,
    parse_o_x,
    parse_score,
    parse_step_verdicts,
    parse_yes_no,
)
from medrl.common.text import clean_obj, clean_text
from medrl.common.urls import origin, redact_logged_urls, redact_url, redact_urls_in, url_secrets, without_query
from medrl.types import Verdict

log = logging.getLogger("medrl.judges")

_SECRETISH = re.compile(r"(sk-[A-Za-z0-9_\-]{6,}|Bearer\s+[^\s\"',}]+)", re.IGNORECASE)
#: HTTP statuses of a redirect: never followed (module docstring), the request is unscored.
REDIRECTS = frozenset({301, 302, 303, 307, 308})
#: Default longest side, in pixels, of an image sent to the judge (downscaled, JPEG).
IMAGE_MAX_SIDE = 768
# reasoning models reject an explicit temperature
_NO_TEMPERATURE = re.compile(r"^(gpt-5|o1|o3|o4)", re.IGNORECASE)


@JUDGES.register("openai")
class OpenAIJudge:
    """LLM judge over an OpenAI-compatible ``/v1/chat/completions`` endpoint.

    Args:
        model: model name at the endpoint ("gpt-5-mini", "Qwen/Qwen3-4B-Instruct-2507", ...).
        base_url: endpoint root (``http://127.0.0.1:8000/v1``); None = api.openai.com.
        api_key_env: environment variable holding the key; required when ``base_url`` is None.
        cache_path: SQLite file; None = ``<medrl cache>/judge_cache.sqlite``; ":memory:" = none kept.
        concurrency: requests in flight at most.
        timeout: seconds per request (per attempt, enforced as a hard limit).
        max_retries: retries per request after the first try.
        retry_budget: total seconds one request may take over all its attempts and backoff
            delays (default ``2 * timeout``; None or 0 = no total limit): an attempt gets
            ``min(timeout, what is left)`` and no retry starts once it is spent, so a judge
            slower than ``timeout`` costs a request at most this long, not
            ``timeout * (max_retries + 1)``. Time waiting for a concurrency slot is not counted.
        backoff / max_backoff: first backoff delay and its cap, in seconds (exponential, jittered).
        parse_retries: re-asks after an unparseable verdict (counted in ``max_retries``).
        temperature: sampling temperature; "auto" = 0.0, or omitted for reasoning models
            (gpt-5*, o1/o3/o4) that only accept their default.
        max_tokens: cap on the reply (sent as ``max_completion_tokens``); None = endpoint default.
        answer_format: "yes_no" (MediX-R1) or "o_x" (MRPO App. H.1) for answer correctness.
        images: attach the record's image (when a caller gives one) to answer-correctness,
            binary-grade and step-verification requests, downscaled to ``image_max_side`` pixels
            on its longest side and sent as a base64 JPEG ``image_url`` part (MRPO App. H.1-H.2).
            Off: ``image=`` is ignored and every request is text only. (``multimodal`` is the
            old name of this switch.)
        image_max_side: longest side of an image sent to the judge (default 768).
        extra_body: extra JSON fields for the endpoint (e.g. vLLM's ``chat_template_kwargs``).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        cache_path: str | os.PathLike | None = None,
        concurrency: int = 16,
        timeout: float = 60.0,
        max_retries: int = 4,
        retry_budget: float | str | None = "auto",
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        parse_retries: int = 1,
        temperature: float | str | None = "auto",
        max_tokens: int | None = None,
        answer_format: str = "yes_no",
        images: bool = False,
        image_max_side: int = IMAGE_MAX_SIDE,
        multimodal: bool | None = None,
        extra_body: dict | None = None,
        name: str | None = None,
    ):
        import openai

        if not model:
            raise ValueError("OpenAIJudge: model name is empty")
        if answer_format not in ("yes_no", "o_x"):
            raise ValueError(f"OpenAIJudge: answer_format must be 'yes_no' or 'o_x', got {answer_format!r}")
        key = os.environ.get(api_key_env, "") if api_key_env else ""
        if not key:
            if base_url is None:
                raise RuntimeError(
                    f"OpenAIJudge({model!r}): no API key - set the environment variable {api_key_env} "
                    "or pass base_url for a local OpenAI-compatible server"
                )
            key = "EMPTY"
        self._secrets = ([key] if key != "EMPTY" and len(key) >= 4 else []) + url_secrets(base_url)
        self.api_key_env = api_key_env
        self.model = model
        self.base_url = base_url
        #: ``base_url`` as it may be written or logged: no password, no query secrets
        self.endpoint = redact_url(base_url) or "https://api.openai.com/v1"
        self.name = name or f"openai:{model}"
        self.stats = JudgeStats()
        self.concurrency = max(1, int(concurrency))
        self.timeout = float(timeout)
        if not self.timeout > 0:
            raise ValueError(f"OpenAIJudge: timeout must be a positive number of seconds, got {timeout!r}")
        if retry_budget == "auto":
            retry_budget = 2 * self.timeout
        if retry_budget is not None and not float(retry_budget) >= 0:
            raise ValueError(f"OpenAIJudge: retry_budget must be seconds >= 0 (0 = no limit), got {retry_budget!r}")
        self.retry_budget = float(retry_budget) if retry_budget else None
        self.max_retries = max(0, int(max_retries))
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.parse_retries = max(0, int(parse_retries))
        self.answer_format = answer_format
        self.images = bool(images if multimodal is None else (images or multimodal))
        if int(image_max_side) < 16:
            raise ValueError(f"OpenAIJudge: image_max_side must be at least 16 pixels, got {image_max_side}")
        self.image_max_side = int(image_max_side)
        self._fatal: JudgeAuthError | None = None
        if temperature == "auto":
            temperature = None if _NO_TEMPERATURE.match(model) else 0.0
        self._params: dict[str, Any] = {}
        if temperature is not None:
            self._params["temperature"] = float(temperature)
        if max_tokens is not None:
            self._params["max_completion_tokens"] = int(max_tokens)
        if extra_body:
            self._params["extra_body"] = dict(extra_body)
        if cache_path is None:
            from medrl.common.paths import cache_dir

            cache_path = cache_dir() / "judge_cache.sqlite"
        # keyed by what decides the verdicts (endpoint, model, prompt version, answer format): a
        # verdict of one judge never answers for another
        self.cache = JudgeCache(cache_path, namespace=self.identity())
        url, query = without_query(base_url) if base_url else (base_url, {})
        redact_logged_urls("httpx", "httpx2")  # HTTP clients log every request's URL at INFO
        self._client = openai.AsyncOpenAI(base_url=url, api_key=key, max_retries=0, timeout=self.timeout,
                                          default_query=query or None,
                                          http_client=openai.DefaultAsyncHttpxClient(follow_redirects=False))
        self._openai = openai
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._sem: asyncio.Semaphore | None = None
        self._inflight: dict[str, asyncio.Task] = {}
        self._failures_logged = 0
        #: the training run's spend journal (:class:`medrl.judges.cost.SpendJournal`), set by the
        #: trainer's cost callback: paid requests are recorded, replayed ones claimed as spent
        self.spend_journal: Any = None

    @property
    def multimodal(self) -> bool:  # old name of ``images``
        return self.images

    #: An OpenAI-compatible endpoint can take image parts (whether the served model reads them
    #: is checked by :meth:`check_images`).
    supports_images = True

    def identity(self) -> dict[str, Any]:
        """What decides this judge's verdicts, for eval folders (never the key itself)."""
        return {"spec": self.name, "endpoint": self.endpoint, "model": self.model,
                "prompt_version": source_version(prompts), "answer_format": self.answer_format,
                "images": self.images, "image_max_side": self.image_max_side if self.images else None}

    def check_images(self) -> None:
        """One tiny request with a 16x16 image: raises ``ValueError`` at start when the
        endpoint refuses image parts (HTTP 400/404/415/422), instead of every call failing later."""
        from PIL import Image

        msgs = _with_images([{"role": "user", "content": "Reply with YES."}],
                            [Image.new("RGB", (16, 16), (128, 128, 128))], self.image_max_side)

        async def probe() -> None:
            await self._client.chat.completions.create(model=self.model, messages=msgs, timeout=self.timeout,
                                                       **self._params)

        loop = self._ensure_loop()
        try:
            asyncio.run_coroutine_threadsafe(probe(), loop).result(timeout=self.timeout + 5)
        except self._openai.APIStatusError as exc:
            if exc.status_code in (401, 403):
                self._auth_failed(exc)
            if exc.status_code in (400, 404, 415, 422):
                raise ValueError(
                    f"judge {self.name} at {self.endpoint} refused a request with an image "
                    f"(HTTP {exc.status_code}: {self._sanitise(str(exc))}); serve a vision-language judge "
                    "or turn judge images off (no --judge-images / judge.images: false)") from None
        except Exception as exc:  # noqa: BLE001 - outages are handled per call, not here
            log.warning("judge %s: image probe failed (%s); continuing", self.name, self._sanitise(str(exc)))

    def __repr__(self) -> str:
        return f"OpenAIJudge(model={self.model!r}, base_url={self.endpoint!r}, concurrency={self.concurrency})"

    # ------------------------------------------------------------------ the six tasks
    async def answer_correct(self, question: str, reference: str, prediction: str, *, image: Any = None,
                             check: str = "strict") -> Verdict:
        from medrl.answers import Verdict as Answer, override

        if check == "paper":  # MRPO App. H.1: the judge alone decides, O/X, no override tier
            return await self._submit(prompts.answer_correct(question, reference, prediction, check="paper"),
                                      parse_o_x, image)

        # the tier that may override an LLM judge (docs/judges.md "Two tiers"): the answer's shape or an
        # unambiguous contradiction is incorrect, true identity correct, without a request; everything
        # else (an unknown symbol or word included) is the LLM's judgement
        if not (reference or "").strip():
            why = guard_answer(prediction, reference, question=question)
            if why:
                return Verdict.ok(False, guard=why)
        else:
            d = override(prediction, reference, question=question)
            if d.verdict is not Answer.UNDECIDED:
                return Verdict.ok(d.verdict is Answer.CORRECT, guard=str(d))
        # MediX-R1's compact check always replies YES/NO and never shows the question
        parser = parse_yes_no if self.answer_format == "yes_no" or check == "medix" else parse_o_x
        msgs = prompts.answer_correct(question, reference, prediction, self.answer_format, check=check)
        return await self._submit(msgs, parser, image)

    async def verify_steps(
        self,
        question: str,
        reference: str,
        steps: Sequence[str],
        *,
        gold_reasoning: str | None = None,
        evidence: dict | None = None,
        image: Any = None,
        step_prompt: str = "hardened",
    ) -> Verdict:
        steps = list(steps)
        if not steps:
            return Verdict.ok([], guard="no steps")
        msgs = prompts.verify_steps(question, reference, steps, gold_reasoning, evidence, step_prompt)
        n = len(steps)
        return await self._submit(msgs, lambda t: parse_step_verdicts(t, n), image)

    async def consistency(self, question: str, reasoning: str, answer: str, *, check: str = "paper") -> Verdict:
        if not (reasoning or "").strip():
            return Verdict.ok(False, guard="empty reasoning")
        why = guard_answer(answer, None, allow_one_char=True)
        if why:
            return Verdict.ok(False, guard=why)
        return await self._submit(prompts.consistency(question, reasoning, answer, check=check), parse_yes_no)

    async def grade(self, question: str, reference: str, prediction: str, *, rubric: str = "binary",
                    image: Any = None, rounds: int = 1, check: str = "paper") -> Verdict:
        """``image`` is attached for the binary rubric only (judged accuracy, MRPO App. H.1);
        the 0-5 report rubric stays text only (MediX-R1 App. A.3). ``rounds`` > 1: MediX-R1's
        evaluation rounds (:func:`medrl.judges.base.combine_rounds`). ``check``: the binary
        template (:data:`medrl.judges.prompts.GRADE_CHECKS`)."""
        msgs = prompts.grade(question, reference, prediction, rubric, check=check)  # validates rubric
        from medrl.answers import grading_refusal
        from medrl.judges.base import combine_rounds

        why = grading_refusal(reference, prediction, question=question, long_form=rubric != "binary")
        if why:
            return Verdict.ok(0.0, guard=why)
        values, replies = [], []
        for _ in range(max(1, int(rounds))):
            v = await self._submit(msgs, lambda t: parse_score(t, rubric), image if rubric == "binary" else None)
            if not v.scored or rounds <= 1:
                return v
            values.append(v.value)
            replies.append(v.raw)
            msgs = prompts.reevaluate(msgs, v.raw)
        return Verdict.ok(combine_rounds(values, rubric), raw=json.dumps({"rounds": values, "replies": replies}))

    async def audit_vqa(self, question: str, answer: str, *, answer_type: str | None = None) -> Verdict:
        if not (question or "").strip() or not (answer or "").strip():
            return Verdict.ok(
                {"status": "drop", "new_q": question or "", "new_a": answer or "", "notes": "empty question or answer"},
                guard="empty",
            )
        msgs = prompts.audit_vqa(question, answer, answer_type)
        return await self._submit(msgs, lambda t: parse_audit(t, question, answer))

    async def extract_key_steps(self, question: str, answer: str, reasoning: str, *, style: str = "medrl") -> Verdict:
        if not (reasoning or "").strip():
            return Verdict.unscored("no reasoning to extract key steps from")
        return await self._submit(prompts.extract_key_steps(question, answer, reasoning, style), parse_key_steps)

    # ------------------------------------------------------------------ machinery
    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def serve() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                self._thread = threading.Thread(target=serve, name=f"medrl-judge[{self.model}]", daemon=True)
                self._thread.start()
                ready.wait()
                self._loop = loop
            return self._loop

    async def _submit(self, messages: list[dict], parser: Callable[[str], Any], image: Any = None) -> Verdict:
        if self._fatal is not None:
            raise self._fatal
        messages = clean_obj(messages)  # lone surrogates from a model or a data file -> U+FFFD
        if self.images and _has_image(image):
            try:
                messages = _with_images(messages, image, self.image_max_side)
            except Exception as exc:  # noqa: BLE001 - a missing or broken image: this item is unscored
                return self._fail(self._sanitise(f"image not readable ({type(exc).__name__}: {exc})"))
        loop = self._ensure_loop()
        fut = asyncio.run_coroutine_threadsafe(self._request(messages, parser), loop)
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:  # pragma: no cover - only if someone awaits on the judge's own loop
            raise RuntimeError("OpenAIJudge methods must not be awaited on the judge's own loop")
        return await asyncio.wrap_future(fut)

    async def _request(self, messages: list[dict], parser: Callable[[str], Any]) -> Verdict:
        """Runs on the judge's loop: cache, then in-flight de-duplication, then the network."""
        key = cache_key(self.model, _key_messages(messages), self._params)
        cached = self.cache.get(key)
        if cached is not None:
            try:
                value = parser(cached)
            except Exception:  # noqa: BLE001 - the parser changed since (or the entry is bad): ask again
                pass
            else:
                self.stats.cache_hits += 1
                journal = self.spend_journal
                paid = journal.claim(key) if journal is not None else None
                if paid is not None:  # paid by this run before a crash, replayed now: spent, not saved
                    self.stats.replayed += 1
                    self.stats.input_tokens += int(paid[0])
                    self.stats.output_tokens += int(paid[1])
                else:
                    self._count_saved(self.cache.get_usage(key))  # what the hit saved (medrl.judges.cost)
                return Verdict.ok(value, raw=self._sanitise(cached, cap=False), cached=True)
        task = self._inflight.get(key)
        if task is not None:
            self.stats.deduplicated += 1
            merged = await asyncio.shield(task)
            self._count_saved(merged.meta.get("usage"))  # what merging saved (medrl.judges.cost)
            return merged
        task = asyncio.ensure_future(self._send(key, messages, parser))
        self._inflight[key] = task
        task.add_done_callback(lambda _t, k=key: self._inflight.pop(k, None))
        return await asyncio.shield(task)

    async def _send(self, key: str, messages: list[dict], parser: Callable[[str], Any]) -> Verdict:
        spent: list[tuple[int, int]] = [(0, 0)]
        try:
            return await self._attempts(key, messages, parser, spent)
        finally:  # what this request cost, recorded as soon as it is known (medrl.judges.cost.SpendJournal)
            journal = self.spend_journal
            if journal is not None and spent[0] != (0, 0):
                try:
                    journal.record(key, *spent[0])
                except OSError as exc:
                    log.warning("judge %s: could not record spend in %s (%s)", self.name, journal.path, exc)

    async def _attempts(self, key: str, messages: list[dict], parser: Callable[[str], Any],
                        spent: list[tuple[int, int]]) -> Verdict:
        if self._sem is None:
            self._sem = asyncio.Semaphore(self.concurrency)
        self.stats.calls += 1
        used = (0, 0)  # this request's (input, output) tokens over all its attempts
        attempt, parse_failures = 0, 0
        clock = asyncio.get_running_loop().time
        deadline: float | None = None  # set when the first attempt starts (queueing is not counted)
        while True:
            retry_after = None
            try:
                async with self._sem:
                    if self._fatal is not None:  # another request hit 401/403 while this one waited
                        raise self._fatal
                    if deadline is None and self.retry_budget:
                        deadline = clock() + self.retry_budget
                    limit = self.timeout if deadline is None else max(0.01, min(self.timeout, deadline - clock()))
                    try:  # httpx's timeout bounds each read, not the request: wait_for bounds the whole
                        resp = await asyncio.wait_for(self._client.chat.completions.create(
                            model=self.model, messages=messages, timeout=limit, **self._params
                        ), limit + 0.5)
                    except asyncio.TimeoutError:
                        raise self._openai.APITimeoutError(request=None) from None
                text = clean_text(_reply_text(resp))
            except JudgeAuthError:
                raise
            except Exception as exc:  # noqa: BLE001 - every failure becomes a counted verdict
                if getattr(exc, "status_code", None) in (401, 403):
                    self._auth_failed(exc)
                retryable, error, retry_after = self._classify(exc)
            else:
                used = spent[0] = self._count_usage(resp, used)
                try:
                    value = parser(text)
                except Exception as exc:  # noqa: BLE001 - no reply makes the client fail: it is unscored
                    why = exc if isinstance(exc, VerdictParseError) else f"{type(exc).__name__}: {exc}"
                    error = self._sanitise(f"unparseable verdict: {why}")
                    retryable = parse_failures < self.parse_retries
                    parse_failures += 1
                    if not (retryable and attempt < self.max_retries):
                        return self._fail(error, raw=self._sanitise(text, cap=False), attempts=attempt + 1)
                else:
                    text = self._sanitise(text, cap=False)  # an endpoint that echoes the key
                    self.cache.put(key, self.model, text, usage=used)
                    return Verdict.ok(value, raw=text, attempts=attempt + 1, usage=used)
            if not retryable or attempt >= self.max_retries:
                return self._fail(error, attempts=attempt + 1)
            delay = min(self.max_backoff, self.backoff * 2 ** attempt) * (0.5 + random.random() / 2)
            if retry_after is not None:
                delay = min(self.max_backoff, max(delay, retry_after))
            if deadline is not None and clock() + delay >= deadline:
                return self._fail(f"{error}; retry budget of {self.retry_budget:g}s per request spent "
                                  f"(--judge-retry-budget)", attempts=attempt + 1)
            attempt += 1
            self.stats.retries += 1
            await asyncio.sleep(delay)

    def _classify(self, exc: BaseException) -> tuple[bool, str, float | None]:
        """(retryable, sanitised message, Retry-After seconds or None)."""
        oa = self._openai
        status = getattr(exc, "status_code", None)
        retry_after = None
        response = getattr(exc, "response", None)
        if response is not None:
            try:
                retry_after = float(response.headers.get("retry-after"))
            except (TypeError, ValueError, AttributeError):
                retry_after = None
        if isinstance(exc, oa.APITimeoutError):
            retryable, what = True, f"timeout after {self.timeout:g}s (--judge-timeout)"
        elif isinstance(exc, oa.APIConnectionError):
            retryable, what = True, f"connection error ({exc})"
        elif isinstance(exc, oa.APIStatusError) and status in REDIRECTS:
            retryable, what = False, self._redirect_error(exc)
        elif isinstance(exc, oa.APIStatusError):
            retryable = status in (408, 409, 429) or (status or 0) >= 500
            what = f"HTTP {status}: {exc}"
        elif isinstance(exc, (oa.APIResponseValidationError, ValueError, KeyError, IndexError, AttributeError, TypeError)):
            retryable, what = True, f"malformed response ({type(exc).__name__}: {exc})"
        else:
            retryable, what = False, f"{type(exc).__name__}: {exc}"
        return retryable, self._sanitise(what), retry_after

    def _redirect_error(self, exc: BaseException) -> str:
        """The one-line error of a redirect answer: both URLs (redacted), and why it is not followed."""
        response = getattr(exc, "response", None)
        status = getattr(exc, "status_code", None)
        asked = str(getattr(getattr(response, "request", None), "url", "") or self.endpoint)
        target = (response.headers.get("location") if response is not None else None) or "(no Location header)"
        from urllib.parse import urljoin

        target = urljoin(asked, target) if "://" in asked else target
        where = ("another server" if "://" in target and origin(target) != origin(asked)
                 else "another address on the same server")
        return (f"HTTP {status} redirect from {redact_url(asked)} to {redact_url(target)} ({where}); medrl never "
                "follows a judge redirect (its verdict would be scored and cached as this endpoint's) - point "
                "--judge-base-url at the server that should judge")

    def _sanitise(self, text: str, cap: bool = True) -> str:
        """``text`` with the API key, the secrets of ``base_url`` and anything that looks like a
        key or bearer token masked, and every URL in it redacted; cut to 500 characters when
        ``cap``. Used on every error, log line and stored raw reply."""
        text = redact_urls_in(str(text))
        for s in self._secrets:
            text = text.replace(s, "***")
        text = _SECRETISH.sub("***", text)
        return text if not cap or len(text) <= 500 else text[:497] + "..."

    def _auth_failed(self, exc: BaseException) -> None:
        """HTTP 401/403: every later request would fail the same way, so stop the run now."""
        status = getattr(exc, "status_code", None)
        what = "authentication failed" if status == 401 else "permission denied"
        where = self.endpoint
        if self.api_key_env and self._secrets:
            hint = f"check the API key in the environment variable {self.api_key_env}"
        elif self.api_key_env:
            hint = f"the environment variable {self.api_key_env} is not set; set it to the endpoint's key"
        else:
            hint = "this endpoint needs an API key: pass --judge-api-key-env NAME"
        self._fatal = JudgeAuthError(
            f"judge {self.name} at {where}: HTTP {status} {what} ({self._sanitise(str(exc))}); {hint}. "
            "Stopping: every request would fail the same way.")
        raise self._fatal

    def _fail(self, error: str, raw: str = "", attempts: int = 1) -> Verdict:
        self.stats.failures += 1
        self._failures_logged += 1
        n = self._failures_logged
        if n <= 10 or n % 100 == 0:
            log.warning("judge %s: request unscored after %d attempt(s): %s (failure #%d)", self.name, attempts, error, n)
        return Verdict.unscored(error, raw=raw, attempts=attempts)

    def _count_usage(self, resp: Any, used: tuple[int, int] = (0, 0)) -> tuple[int, int]:
        """Add a reply's ``usage`` to the stats; returns ``used`` plus it (a request's total)."""
        usage = getattr(resp, "usage", None)
        tin = int(getattr(usage, "prompt_tokens", 0) or 0)
        tout = int(getattr(usage, "completion_tokens", 0) or 0)
        self.stats.input_tokens += tin
        self.stats.output_tokens += tout
        return used[0] + tin, used[1] + tout

    def _count_saved(self, usage: Any) -> None:
        """A cache hit or a merged duplicate: count the tokens its original request cost."""
        if usage:
            self.stats.saved_input_tokens += int(usage[0])
            self.stats.saved_output_tokens += int(usage[1])

    def close(self) -> None:
        """Close the HTTP client, stop the judge's loop and close the cache."""
        with self._lock:
            loop, self._loop = self._loop, None
        if loop is not None:
            try:
                asyncio.run_coroutine_threadsafe(self._client.close(), loop).result(timeout=5)
            except Exception:  # noqa: BLE001 - closing is best effort
                pass
            loop.call_soon_threadsafe(loop.stop)
            if self._thread is not None:
                self._thread.join(timeout=5)
        self.cache.close()


def _reply_text(resp: Any) -> str:
    """The message text of a chat completion; raises ValueError on a malformed body."""
    choices = getattr(resp, "choices", None)
    if not choices:
        raise ValueError(f"no choices in the reply ({type(resp).__name__})")
    content = choices[0].message.content
    if content is None:
        raise ValueError("reply message has no content")
    return content


def _has_image(image: Any) -> bool:
    if image is None:
        return False
    if isinstance(image, (list, tuple)):
        return any(_has_image(x) for x in image)
    return not (isinstance(image, str) and not image.strip())


def _with_images(messages: list[dict], image: Any, max_side: int = IMAGE_MAX_SIDE) -> list[dict]:
    """Attach ``image`` (one image or a list: PIL image, path, bytes, HF image dict, data: or
    http(s) URL) to the last user turn as ``image_url`` parts after the text."""
    images = [x for x in (image if isinstance(image, (list, tuple)) else [image]) if _has_image(x)]
    parts = [{"type": "image_url", "image_url": {"url": image_data_url(x, max_side)}} for x in images]
    out = [dict(m) for m in messages]
    user = out[-1]
    text = user["content"] if isinstance(user["content"], str) else None
    user["content"] = ([{"type": "text", "text": text}] if text is not None else list(user["content"])) + parts
    return out


_with_image = _with_images  # old name


def _key_messages(messages: list[dict]) -> list[dict]:
    """``messages`` for the cache key: each inline image replaced by the SHA-256 digest of its
    data URL, so the key separates images (and image vs no image) without hashing megabytes."""
    out = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            content = [
                {"type": "image_url", "image_url": {"sha256": hashlib.sha256(
                    p["image_url"]["url"].encode("utf-8")).hexdigest()}}
                if isinstance(p, dict) and p.get("type") == "image_url" else p
                for p in content
            ]
            m = {**m, "content": content}
        out.append(m)
    return out


def image_data_url(image: Any, max_side: int = IMAGE_MAX_SIDE) -> str:
    """A ``data:image/jpeg;base64,...`` URL of ``image`` with its longest side at most
    ``max_side`` pixels (never upscaled). http(s) URLs pass through unchanged (the endpoint
    fetches them; medrl cannot downscale them)."""
    from PIL import Image

    if isinstance(image, str) and image.startswith(("http://", "https://")):
        return image
    if isinstance(image, dict):
        if image.get("bytes"):
            image = image["bytes"]
        elif image.get("path"):
            image = image["path"]
        else:
            raise ValueError("image dict has neither 'bytes' nor 'path'")
    if isinstance(image, str) and image.startswith("data:"):
        image = base64.b64decode(image.split(",", 1)[1])
    if isinstance(image, (str, Path)):
        p = Path(image)
        if not p.is_file():
            raise FileNotFoundError(f"image file not found: {p}")
        st = p.stat()
        return _file_data_url(str(p), st.st_mtime_ns, st.st_size, max_side)
    if isinstance(image, (bytes, bytearray)):
        img = Image.open(io.BytesIO(bytes(image)))
    elif hasattr(image, "save") and hasattr(image, "size"):  # PIL image
        img = image
    else:
        raise TypeError(f"cannot send an image of type {type(image).__name__} to the judge")
    return _encode_jpeg(img, max_side)


@functools.lru_cache(maxsize=256)
def _file_data_url(path: str, mtime_ns: int, size: int, max_side: int) -> str:
    """An image file encoded once per (file version, size): a GRPO group judges the same image
    for every rollout."""
    from PIL import Image

    with Image.open(path) as img:
        return _encode_jpeg(img, max_side)


def _encode_jpeg(img: Any, max_side: int) -> str:
    from PIL import Image, ImageOps

    img = ImageOps.exif_transpose(img) if hasattr(img, "getexif") else img
    img = img.convert("RGB")  # a copy: the caller's image is never changed
    if max(img.size) > max_side:
        img.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=90)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")
