"""HTTP for API back-ends: streaming requests, retries with backoff, errors a user can fix.

Transient failures (connection refused while a server starts, 429, 5xx, Anthropic's 529) are
retried with exponential backoff before any output was streamed; everything else becomes a
``ModelError`` whose text says what to do. A server that stops answering times out, and one
that never stops (a trickle of chunks, comments only, an endless answer) is cut off: a step,
retries and all, has one overall deadline, and a stream one size limit.
"""

from __future__ import annotations

import logging
import re
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import httpx

from engine.errors import ContextOverflowError, GenerationCancelled, MnemoError, ModelError
from engine.llm.base import load_model_json

log = logging.getLogger("mnemo.llm")
logging.getLogger("httpx").setLevel(logging.WARNING)  # request lines carry no value in our logs

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
MAX_RETRY_WAIT_S = 20.0
# A step's whole time, retries included. Generous: a 7B model on a laptop's CPU writes 1,024
# tokens in about three minutes; a server slower than that is stuck, or hostile.
STEP_DEADLINE_S = 300.0
MAX_STREAM_CHARS = 4_000_000  # a stream's lines in all; the adapters cut replies far sooner
WATCH_INTERVAL_S = 0.1


class ApiClient:
    """One API endpoint with its retry policy. ``provider`` names it in error messages."""

    def __init__(
        self,
        base_url: str,
        provider: str,
        *,
        timeout_s: float = 60.0,
        retries: int = 3,
        backoff_s: float = 1.0,
        deadline_s: float = STEP_DEADLINE_S,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.provider = provider
        self.retries = retries
        self.backoff_s = backoff_s
        self.timeout_s = timeout_s
        self.deadline_s = deadline_s
        self._client = httpx.Client(
            timeout=httpx.Timeout(timeout_s, connect=min(10.0, timeout_s)),
            follow_redirects=True,
        )

    def close(self) -> None:
        self._client.close()

    def get_json(
        self, path: str, headers: dict[str, str], body: dict[str, Any] | None = None
    ) -> Any:
        """A small GET (model lists, health checks), or a POST of ``body``, with the same
        error handling."""
        deadline = time.monotonic() + self.deadline_s
        method = "GET" if body is None else "POST"
        with self._open(method, path, headers, body, deadline) as response:
            response.read()
            try:
                return response.json()
            except ValueError as error:
                raise ModelError(
                    f"The {self.provider} server at {self.base_url} did not answer with JSON; "
                    "check that the base URL points at its API."
                ) from error

    def stream_events(
        self,
        path: str,
        headers: dict[str, str],
        body: dict[str, Any],
        cancel: threading.Event | None = None,
    ) -> Iterator[tuple[str | None, Any]]:
        """POST ``body`` and yield server-sent events as (event name, parsed data), within the
        step's deadline (``cancel`` and the deadline cut the stream even while it is silent)."""
        deadline = time.monotonic() + self.deadline_s
        with self._open("POST", path, headers, body, deadline) as response:
            done = threading.Event()
            cut = threading.Event()
            threading.Thread(
                target=_watch,
                args=(response, deadline, cancel, done, cut),
                name="mnemo-api-watch",
                daemon=True,
            ).start()
            event: str | None = None
            received = 0
            try:
                for line in response.iter_lines():
                    if cancel is not None and cancel.is_set():
                        raise GenerationCancelled("The reply was stopped.")
                    if time.monotonic() > deadline:
                        raise self._over_deadline()
                    received += len(line)
                    if received > MAX_STREAM_CHARS:
                        raise ModelError(
                            f"The {self.provider} server sent more than {MAX_STREAM_CHARS:,} "
                            "characters for one step; it was stopped. Try again, or check the "
                            "server."
                        )
                    if line.startswith("event:"):
                        event = line[6:].strip()
                    elif line.startswith("data:"):
                        data = line[5:].strip()
                        if data == "[DONE]":
                            return
                        value, problem = load_model_json(data)
                        if problem:
                            raise ModelError(
                                f"The {self.provider} server sent an event that could not be read "
                                f"({problem}); try again, and check that the base URL points at "
                                "an API server."
                            )
                        yield event, value
                        event = None
                if cut.is_set():  # the watch shut the socket: the stream ended early, not done
                    raise self._cut_short(cancel)
            except (httpx.TimeoutException, httpx.TransportError, httpx.StreamError) as error:
                # The read's own timeout is what is left of the step, so it may fire just
                # before the watch does: past the deadline, either says the same.
                if cut.is_set() or time.monotonic() >= deadline - WATCH_INTERVAL_S:
                    raise self._cut_short(cancel) from error
                if isinstance(error, httpx.TimeoutException):
                    raise self._timeout() from error
                raise ModelError(
                    f"The connection to the {self.provider} server at {self.base_url} broke "
                    f"while it was answering ({error}); try again."
                ) from error
            finally:
                done.set()

    @contextmanager
    def _open(
        self,
        method: str,
        path: str,
        headers: dict[str, str],
        body: dict[str, Any] | None,
        deadline: float,
    ) -> Iterator[httpx.Response]:
        url = f"{self.base_url}{path}"
        log.info("%s %s", method, url)  # never the headers: they hold the key
        attempt = 0
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise self._over_deadline()
            timeout = httpx.Timeout(min(self.timeout_s, left), connect=min(10.0, left))
            try:
                request = self._client.build_request(
                    method, url, headers=headers, json=body, timeout=timeout
                )
                response = self._client.send(request, stream=True)
            except httpx.TimeoutException as error:
                # Not reached yet: try again. Reached, but silent for the whole timeout: a
                # second wait as long would only double the person's (4 tries took 247 s).
                if isinstance(error, httpx.ConnectTimeout) and attempt < self.retries:
                    attempt += 1
                    self._wait(attempt, None, deadline)
                    continue
                raise self._timeout() from error
            except httpx.TransportError as error:
                if attempt < self.retries:
                    attempt += 1
                    self._wait(attempt, None, deadline)
                    continue
                raise ModelError(
                    f"Cannot reach the {self.provider} server at {self.base_url} ({error}); "
                    "check that it is running and that the address in the model settings is right."
                ) from error
            if response.status_code < 400:
                try:
                    yield response
                finally:
                    response.close()
                return
            response.read()
            response.close()
            if response.status_code in RETRYABLE_STATUS and attempt < self.retries:
                attempt += 1
                self._wait(attempt, response.headers.get("retry-after"), deadline)
                continue
            raise self._status_error(response)

    def _wait(self, attempt: int, retry_after: str | None, deadline: float) -> None:
        delay = self.backoff_s * 2 ** (attempt - 1)
        if retry_after:
            with suppress(ValueError):
                delay = max(delay, float(retry_after))
        delay = min(delay, MAX_RETRY_WAIT_S, max(0.0, deadline - time.monotonic()))
        log.info("%s: retrying in %.1f s (attempt %d)", self.provider, delay, attempt)
        time.sleep(delay)

    def _timeout(self) -> ModelError:
        return ModelError(
            f"The {self.provider} server at {self.base_url} did not answer within "
            f"{self.timeout_s:.0f} s; it may be overloaded or stuck. Try again later."
        )

    def _cut_short(self, cancel: threading.Event | None) -> MnemoError:
        if cancel is not None and cancel.is_set():
            return GenerationCancelled("The reply was stopped.")
        return self._over_deadline()

    def _over_deadline(self) -> ModelError:
        return ModelError(
            f"The {self.provider} server at {self.base_url} did not finish its answer within "
            f"{self.deadline_s:.0f} s, so it was stopped; it may be overloaded or stuck. Try "
            "again later."
        )

    def _status_error(self, response: httpx.Response) -> ModelError:
        status = response.status_code
        detail = _error_detail(response)
        if status in (401, 403):
            return ModelError(
                f"The {self.provider} server refused the API key ({status}: {detail}); set a "
                f"valid key with `mnemo keys set {self.provider}` or in the settings."
            )
        if status == 404:
            return ModelError(
                f"The {self.provider} server at {self.base_url} answered 404 ({detail}); check "
                "the base URL and the model name in the model settings."
            )
        if status == 429:
            return ModelError(
                f"The {self.provider} server keeps refusing requests as too many (rate limit: "
                f"{detail}); wait a minute and try again, or check your plan's limits."
            )
        told = _context_size(response, detail) if status in (400, 413) else None
        if told is not None:
            return ContextOverflowError(
                f"The {self.provider} server's context window is {told:,} tokens, smaller than "
                "Mnemo assumed; Mnemo now fits its messages to it, so send your message again "
                "(`mnemo settings model.context_length N` sets the size yourself).",
                told,
            )
        if status >= 500:
            return ModelError(
                f"The {self.provider} server had an internal error ({status}: {detail}) even after "
                f"{self.retries} retries; try again later."
            )
        return ModelError(f"The {self.provider} server rejected the request ({status}: {detail}).")


def _watch(
    response: httpx.Response,
    deadline: float,
    cancel: threading.Event | None,
    done: threading.Event,
    cut: threading.Event,
) -> None:
    """Shut a stream's socket at the deadline or on ``cancel``, even while the server sends
    nothing: a read blocked on a silent server returns, and the step ends."""
    while not done.wait(WATCH_INTERVAL_S):
        if time.monotonic() > deadline or (cancel is not None and cancel.is_set()):
            cut.set()
            stream = response.extensions.get("network_stream")
            sock = stream.get_extra_info("socket") if stream is not None else None
            if sock is not None:
                with suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            return


# How servers say a prompt is past their window: llama-cpp-python's "exceed context window of
# 2048", OpenAI's and vLLM's "maximum context length is 2048 tokens".
_CONTEXT_SAID = re.compile(
    r"(?:context (?:window|length|size)|maximum context length is)\D{0,12}?(\d{3,7})", re.I
)


def _context_size(response: httpx.Response, detail: str) -> int | None:
    """The context size a refusal gives, if it is one about the prompt's length (llama.cpp's
    own server gives ``n_ctx`` beside its message)."""
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        error = None
    if isinstance(error, dict) and isinstance(error.get("n_ctx"), int) and error["n_ctx"] > 0:
        return int(error["n_ctx"])
    found = _CONTEXT_SAID.search(detail)
    return int(found.group(1)) if found else None


def _error_detail(response: httpx.Response) -> str:
    """The server's own error message, short (never the request, which holds no key anyway)."""
    try:
        payload = response.json()
    except ValueError:
        return response.text[:200].strip() or response.reason_phrase
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, dict):
        return str(error.get("message") or error.get("type") or error)[:200]
    if isinstance(error, str):
        return error[:200]
    return str(payload)[:200]
