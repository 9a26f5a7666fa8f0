"""HTTP for API back-ends: streaming requests, retries with backoff, errors a user can fix.

Transient failures (connection refused while a server starts, 429, 5xx, Anthropic's 529) are
retried with exponential backoff before any output was streamed; everything else becomes a
``ModelError`` whose text says what to do. A server that stops answering times out.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import httpx

from engine.errors import GenerationCancelled, ModelError
from engine.llm.base import load_model_json

log = logging.getLogger("mnemo.llm")
logging.getLogger("httpx").setLevel(logging.WARNING)  # request lines carry no value in our logs

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
MAX_RETRY_WAIT_S = 20.0


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
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.provider = provider
        self.retries = retries
        self.backoff_s = backoff_s
        self.timeout_s = timeout_s
        self._client = httpx.Client(
            timeout=httpx.Timeout(timeout_s, connect=min(10.0, timeout_s)),
            follow_redirects=True,
        )

    def close(self) -> None:
        self._client.close()

    def get_json(self, path: str, headers: dict[str, str]) -> Any:
        """A small GET (model lists, health checks) with the same error handling."""
        with self._open("GET", path, headers, None) as response:
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
        """POST ``body`` and yield server-sent events as (event name, parsed data)."""
        with self._open("POST", path, headers, body) as response:
            event: str | None = None
            try:
                for line in response.iter_lines():
                    if cancel is not None and cancel.is_set():
                        raise GenerationCancelled("The reply was stopped.")
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
            except httpx.TimeoutException as error:
                raise self._timeout() from error
            except httpx.TransportError as error:
                raise ModelError(
                    f"The connection to the {self.provider} server at {self.base_url} broke "
                    f"while it was answering ({error}); try again."
                ) from error

    @contextmanager
    def _open(
        self, method: str, path: str, headers: dict[str, str], body: dict[str, Any] | None
    ) -> Iterator[httpx.Response]:
        url = f"{self.base_url}{path}"
        log.info("%s %s", method, url)  # never the headers: they hold the key
        attempt = 0
        while True:
            try:
                request = self._client.build_request(method, url, headers=headers, json=body)
                response = self._client.send(request, stream=True)
            except httpx.TimeoutException as error:
                if attempt < self.retries:
                    attempt += 1
                    self._wait(attempt, None)
                    continue
                raise self._timeout() from error
            except httpx.TransportError as error:
                if attempt < self.retries:
                    attempt += 1
                    self._wait(attempt, None)
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
                self._wait(attempt, response.headers.get("retry-after"))
                continue
            raise self._status_error(response)

    def _wait(self, attempt: int, retry_after: str | None) -> None:
        delay = self.backoff_s * 2 ** (attempt - 1)
        if retry_after:
            with suppress(ValueError):
                delay = max(delay, float(retry_after))
        delay = min(delay, MAX_RETRY_WAIT_S)
        log.info("%s: retrying in %.1f s (attempt %d)", self.provider, delay, attempt)
        time.sleep(delay)

    def _timeout(self) -> ModelError:
        return ModelError(
            f"The {self.provider} server at {self.base_url} did not answer within "
            f"{self.timeout_s:.0f} s; it may be overloaded or stuck. Try again later."
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
        if status >= 500:
            return ModelError(
                f"The {self.provider} server had an internal error ({status}: {detail}) even after "
                f"{self.retries} retries; try again later."
            )
        return ModelError(f"The {self.provider} server rejected the request ({status}: {detail}).")


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
