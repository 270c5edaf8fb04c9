"""Chat verdicts through the OpenAI Batch API (`judge: {batch: true}`): the same requests, at batch prices.

The verdict loop (`client.JudgeClient`) is unchanged: where it would POST one /chat/completions request, it
hands the request body to a `BatchQueue`. The queue gathers the bodies that arrive while every unit in flight
builds its request (until `batch_gather_s` passes without a new one), writes them as one JSONL file of
``{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}`` lines (the format vLLM's batch
runner reads too), uploads it (`POST /v1/files`, purpose "batch"), creates a batch (`POST /v1/batches`) and
polls it (`GET /v1/batches/{id}`) with backoff until it ends. Each line of its output file answers the request
of its custom_id; the error file's lines and requests the batch never reached (it expired, was cancelled or
failed) become per-request failures with their cause. A repair (invalid output) is a new request: it goes into
the next batch.

**Never twice.** A request's custom_id is a digest of its body, so the same request gets the same id in every
run. A ledger next to the verdict cache records each input file and batch with the custom_ids it carries,
written before the batch is created and again after: a run killed while its batch is in progress finds the
batch by its id (or, killed between upload and creation, by its input file among the server's batches) and
waits for it rather than submitting the requests again. A request whose batch ended without its answer
(expired, cancelled, failed) may be submitted again; one whose batch is still running never is.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import openai
from openai.types.chat import ChatCompletion

from ragmetrics.errors import JudgeError
from ragmetrics.judge.openai.budget import RequestBudget
from ragmetrics.judge.openai.transport import status_cause
from ragmetrics.judge.openai.usage import CallUsage

__all__ = ["BatchLedger", "BatchQueue", "custom_id"]

logger = logging.getLogger("ragmetrics.judge")

ENDPOINT: Final = "/v1/chat/completions"
COMPLETION_WINDOW: Final = "24h"
"""The one completion window the Batch API offers."""
ENDED = frozenset({"completed", "failed", "expired", "cancelled"})
MAX_REQUESTS_PER_BATCH = 50_000
"""OpenAI's limit on the requests of one batch."""


def custom_id(body: dict[str, Any]) -> str:
    """The request's id in a batch: a digest of its body, the same in every run that asks the same thing."""
    canonical = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return "rm-" + hashlib.sha256(canonical.encode()).hexdigest()[:40]


class BatchLedger:
    """The batches a cache folder's runs submitted: input file, batch id, status and custom_ids of each, in one
    JSON file replaced atomically at every change (a killed run leaves the last complete version)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: list[dict[str, Any]] = []
        if path.exists():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError) as exc:
                raise JudgeError(f"{path}: the batch ledger cannot be read ({exc}); move it aside to start afresh",
                                 cause="internal_error") from None  # fmt: skip
            if not isinstance(data, dict) or not isinstance(data.get("batches"), list):
                raise JudgeError(f"{path}: not a batch ledger (no 'batches' list)", cause="internal_error")
            self.entries = data["batches"]

    def save(self) -> None:
        # Several queues keep one ledger beside one cache (a panel's members, a cascade's views), each with
        # its own entries: a save keeps the file's batches this ledger does not hold (by input file), so no
        # queue erases another's record and a killed run resumes every batch it had in progress.
        mine = {e.get("input_file_id") for e in self.entries}
        others = [e for e in self._on_disk() if isinstance(e, dict) and e.get("input_file_id") not in mine]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps({"batches": [*others, *self.entries]}, indent=1), encoding="utf-8")
        os.replace(temporary, self.path)

    def _on_disk(self) -> list[Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, json.JSONDecodeError) as exc:
            raise JudgeError(f"{self.path}: the batch ledger cannot be read ({exc}); move it aside to start afresh",
                             cause="internal_error") from None  # fmt: skip
        batches = data.get("batches") if isinstance(data, dict) else None
        return batches if isinstance(batches, list) else []

    def running_for(self, ids: set[str]) -> list[dict[str, Any]]:
        """Entries not known to have ended that carry any of `ids` (their answers are on the way)."""
        return [e for e in self.entries if e.get("status") not in ENDED and ids & set(e.get("custom_ids", []))]


@dataclass
class _Waiting:
    body: dict[str, Any]
    futures: list[asyncio.Future[ChatCompletion]] = field(default_factory=list)


class BatchQueue:
    """Gathers chat request bodies into Batch API jobs and hands each its answer (module docstring)."""

    def __init__(
        self,
        api: Callable[[], openai.AsyncOpenAI],
        ledger: BatchLedger,
        *,
        usage: CallUsage,
        scrub: Callable[[str], str] = str,
        gather_s: float = 0.5,
        poll_s: float = 5.0,
        max_poll_s: float = 60.0,
        wait_s: float = 86_400.0,
        max_requests: int | None = None,
        budget: RequestBudget | None = None,
    ) -> None:
        self._api = api
        self.max_requests = max_requests
        self.budget = budget
        """A cap shared with other judges: a gathered request is held against it until answered (counted then)"""
        """A hard cap on the requests answered and waiting (JudgeSettings.max_requests)."""
        self.ledger = ledger
        self.usage = usage
        self.scrub = scrub
        """Takes the API key out of a server's message before it reaches a failure record."""
        self.gather_s = gather_s
        self.poll_s = poll_s
        self.max_poll_s = max_poll_s
        self.wait_s = wait_s
        self._waiting: dict[str, _Waiting] = {}
        self._pending = 0
        """requests gathered or in a running batch, not answered yet (counted against max_requests)"""
        self._timer: asyncio.TimerHandle | None = None
        self._flushes: set[asyncio.Task[None]] = set()

    async def ask(self, call: CallUsage, body: dict[str, Any]) -> ChatCompletion:
        """The answer to one /chat/completions body, from the batch it joins (or the running one holding it)."""
        key = custom_id(body)
        cap = self.max_requests
        # the asker that adds the request to a batch holds it against the caps until it is answered (one hold
        # per batch line, however many askers wait on it): gathered, or submitted in a batch still running,
        # it is promised, and a batch gathering beside a running one must not count it as free
        holds = key not in self._waiting
        if cap is not None and holds and self.usage.calls + self._pending >= cap:
            raise JudgeError(f"not submitted: the budget of {cap} judge requests is spent", cause="budget_reached")
        if holds and self.budget is not None:  # a cap shared with other judges (`budget.RequestBudget`)
            self.budget.hold("not submitted")
        future: asyncio.Future[ChatCompletion] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(key, _Waiting(body)).futures.append(future)
        self._pending += int(holds)
        self._arm()
        try:
            answer = await future
        except BaseException:
            if holds:
                self._pending -= 1
                if self.budget is not None:
                    self.budget.settle(answered=False)
            raise
        if holds:
            self._pending -= 1
            if self.budget is not None:
                self.budget.settle(answered=True)
        call.calls += 1
        self.usage.calls += 1
        usage = answer.usage
        if usage is not None:
            for counter in (call, self.usage):
                counter.batch_prompt_tokens += usage.prompt_tokens or 0
                counter.batch_completion_tokens += usage.completion_tokens or 0
        return answer

    def _arm(self) -> None:
        """(Re)start the quiet period after which the gathered requests go out."""
        if self._timer is not None:
            self._timer.cancel()
        loop = asyncio.get_running_loop()
        delay = 0.0 if len(self._waiting) >= MAX_REQUESTS_PER_BATCH else self.gather_s
        self._timer = loop.call_later(delay, self._start_flush)

    def _start_flush(self) -> None:
        self._timer = None
        waiting, self._waiting = self._waiting, {}
        if not waiting:
            return
        task = asyncio.get_running_loop().create_task(self._flush(waiting))
        self._flushes.add(task)
        task.add_done_callback(self._flushes.discard)

    async def _flush(self, waiting: dict[str, _Waiting]) -> None:
        try:
            jobs: list[Awaitable[None]] = []
            left = set(waiting)
            for entry in self.ledger.running_for(left):
                carried = left & set(entry["custom_ids"])
                left -= carried
                jobs.append(self._finish(entry, {k: waiting[k] for k in carried}))
            if left:
                jobs.append(self._submit({k: waiting[k] for k in sorted(left)}))
            await asyncio.gather(*jobs)
        except BaseException as exc:  # every waiting unit learns why, none waits forever
            failure = _as_judge_error(exc, self.scrub)
            for item in waiting.values():
                for future in item.futures:
                    if not future.done():
                        future.set_exception(failure)
            if not isinstance(exc, Exception):
                raise

    async def _submit(self, waiting: dict[str, _Waiting]) -> None:
        lines = [json.dumps({"custom_id": k, "method": "POST", "url": ENDPOINT, "body": w.body}, ensure_ascii=False)
                 for k, w in waiting.items()]  # fmt: skip
        api = self._api()
        upload = await api.files.create(file=("ragmetrics-batch.jsonl", ("\n".join(lines) + "\n").encode()),
                                        purpose="batch")  # fmt: skip
        entry: dict[str, Any] = {"input_file_id": upload.id, "batch_id": None, "status": "uploaded",
                                 "custom_ids": list(waiting), "created": time.time()}  # fmt: skip
        self.ledger.entries.append(entry)
        self.ledger.save()  # before the batch exists: a run killed now finds it by its input file
        batch = await api.batches.create(input_file_id=upload.id, endpoint=ENDPOINT,
                                         completion_window=COMPLETION_WINDOW)  # fmt: skip
        entry.update(batch_id=batch.id, status=batch.status)
        self.ledger.save()
        logger.info("batch %s: %d requests submitted", batch.id, len(waiting))
        await self._finish(entry, waiting)

    async def _find_batch(self, entry: dict[str, Any]) -> str | None:
        """The id of the batch created from `entry`'s input file (a run killed before it wrote the id)."""
        async for batch in self._api().batches.list(limit=100):
            if batch.input_file_id == entry["input_file_id"]:
                return batch.id
        return None

    async def _finish(self, entry: dict[str, Any], waiting: dict[str, _Waiting]) -> None:
        """Wait for `entry`'s batch to end and hand every waiting request its answer or its failure."""
        api = self._api()
        if entry.get("batch_id") is None:
            found = await self._find_batch(entry)
            if found is None:  # uploaded, never created: it is created now, from the same file
                batch = await api.batches.create(input_file_id=entry["input_file_id"], endpoint=ENDPOINT,
                                                 completion_window=COMPLETION_WINDOW)  # fmt: skip
                found = batch.id
            entry["batch_id"] = found
            self.ledger.save()
        batch_id = str(entry["batch_id"])
        delay, started = self.poll_s, time.monotonic()
        while True:
            batch = await api.batches.retrieve(batch_id)
            if batch.status in ENDED:
                break
            if time.monotonic() - started > self.wait_s:
                raise JudgeError(f"batch {batch_id}: still {batch.status} after {self.wait_s:g} s; "
                                 "run again to keep waiting for it (it is not submitted twice)",
                                 cause="batch_unfinished")  # fmt: skip
            await asyncio.sleep(delay)
            delay = min(self.max_poll_s, delay * 1.5)
        entry["status"] = batch.status
        self.ledger.save()
        answered: dict[str, ChatCompletion | JudgeError] = {}
        for file_id in (batch.output_file_id, batch.error_file_id):
            if file_id:
                content = await api.files.content(file_id)
                answered.update(_read_lines(content.text, batch_id, self.scrub))
        missing = _missing_cause(batch.status, batch_id, getattr(batch, "errors", None))
        for key, item in waiting.items():
            result = answered.get(key, missing)
            for future in item.futures:
                if future.done():
                    continue
                if isinstance(result, JudgeError):
                    future.set_exception(result)
                else:
                    future.set_result(result)

    async def aclose(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for task in list(self._flushes):
            task.cancel()


def _as_judge_error(exc: BaseException, scrub: Callable[[str], str]) -> JudgeError:
    """What a failed upload, creation or poll means for the requests waiting on it: the endpoint's fault by
    its kind (connection, timeout, an HTTP status), a bug only when it is none of those."""
    if isinstance(exc, JudgeError):
        return exc
    if isinstance(exc, openai.APIStatusError):
        message = scrub(exc.message)
        return JudgeError(f"batch: HTTP {exc.status_code}: {message}", cause=status_cause(exc.status_code, message))
    if isinstance(exc, openai.APITimeoutError | TimeoutError):
        return JudgeError(f"batch: no answer in time ({type(exc).__name__})", cause="timeout")
    if isinstance(exc, openai.APIConnectionError):
        return JudgeError(f"batch: the endpoint could not be reached ({type(exc).__name__})", cause="connection")
    return JudgeError(f"batch: {type(exc).__name__}: {scrub(str(exc))}", cause="internal_error")


def _read_lines(text: str, batch_id: str, scrub: Callable[[str], str]) -> dict[str, ChatCompletion | JudgeError]:
    """Output and error file lines by custom_id: a completion, or the failure the line names."""
    out: dict[str, ChatCompletion | JudgeError] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
            key = str(record["custom_id"])
        except (json.JSONDecodeError, KeyError, TypeError):
            logger.warning("batch %s: output line %d is not a batch result; skipped", batch_id, number)
            continue
        response = record.get("response") or {}
        error = record.get("error")
        status = int(response.get("status_code") or 0)
        if error is None and status == 200:
            try:
                out[key] = ChatCompletion.model_validate(response.get("body"))
                continue
            except ValueError as exc:
                error = {"message": f"the answer is not a chat completion ({exc.__class__.__name__})"}
                out[key] = JudgeError(f"batch {batch_id}: {error['message']}", cause="invalid_response")
                continue
        raw_body = response.get("body")
        body: dict[str, Any] = raw_body if isinstance(raw_body, dict) else {}
        message = scrub(str((error or {}).get("message") or (body.get("error") or {}).get("message") or "no message"))
        cause = status_cause(status, str(message)) if status else "server_error"
        out[key] = JudgeError(f"batch {batch_id}: request failed ({status or 'no status'}): {message}", cause=cause)
    return out


def _missing_cause(status: str, batch_id: str, errors: Any) -> JudgeError:
    """The failure of a request a batch ended without answering."""
    if status == "expired":
        return JudgeError(f"batch {batch_id} expired before answering this request", cause="batch_expired")
    if status == "cancelled":
        return JudgeError(f"batch {batch_id} was cancelled before answering this request", cause="batch_cancelled")
    if status == "failed":
        detail = "; ".join(str(getattr(e, "message", e)) for e in (getattr(errors, "data", None) or []))
        return JudgeError(f"batch {batch_id} failed{': ' + detail if detail else ''}", cause="batch_failed")
    return JudgeError(f"batch {batch_id} completed without an answer to this request", cause="invalid_response")
