"""pystac-client's HTTP, held to the allowed catalog hosts and retried on transient failures (tenacity).

Every request is checked before it is sent: the catalog's root, its search, each page's `next` link (which the API
writes, so it could name any host) and each redirect (checked on the 3xx answer, before it is followed). Timeouts,
refused connections, 408, 429 and 5xx answers are retried with exponential backoff; other answers fail at once.
The session ignores the environment (no proxies, no `.netrc` credentials sent to a catalog).
"""

from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

from pystac_client.exceptions import APIError
from pystac_client.stac_api_io import StacApiIO
from requests import Response
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from geogate.settings import StacSettings
from workers.jobkit.files import allowed_host

TRANSIENT = frozenset({408, 429, 500, 502, 503, 504})
"""Answers worth a retry; None (no answer: a timeout, a refused connection) is one too."""
MAX_BACKOFF_S = 30.0
REASON_CHARS = 300


@dataclass(frozen=True)
class Failure:
    """A request that failed after its attempts: the URL, the last status (None: no answer) and why."""

    url: str
    status: int | None
    attempts: int
    reason: str

    @property
    def transient(self) -> bool:
        return self.status is None or self.status in TRANSIENT


class RequestFailed(Exception):
    """A catalog request failed (after its retries when transient); `failure` says which and how."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(f"{failure.url}: {failure.reason}")
        self.failure = failure


class HostRefused(Exception):
    """A request (a page link, a redirect) would go to a host not in GEOGATE_STAC_CATALOGS; nothing was sent."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.url = url


class GuardedStacIO(StacApiIO):
    """A `StacApiIO` that sends requests only to `allowed` hosts and retries transient failures per `policy`."""

    def __init__(self, allowed: frozenset[str], policy: StacSettings) -> None:
        super().__init__(timeout=policy.timeout_s, max_retries=None)
        self.allowed = allowed
        self.policy = policy
        self.retries = 0
        """Requests sent again after a transient failure, over this object's life."""
        self.refused: str | None = None
        self.session.trust_env = False
        self.session.hooks["response"].append(self._check_redirect)

    def request(
        self,
        href: str,
        method: str | None = None,
        headers: dict[str, str] | None = None,
        parameters: dict[str, Any] | None = None,
    ) -> str:
        """The body of one request, retried while it fails transiently.

        Raises:
            HostRefused: `href`, or a redirect from it, is on a host not allowed.
            RequestFailed: the last attempt's failure (or the first, when not transient).
        """
        self._check(href)
        retrying = Retrying(
            retry=retry_if_exception(lambda exc: isinstance(exc, APIError) and self._transient(exc)),
            stop=stop_after_attempt(self.policy.retries + 1),
            wait=wait_exponential(multiplier=self.policy.backoff_s, max=MAX_BACKOFF_S),
            before_sleep=self._count,
            reraise=True,
        )
        try:
            for attempt in retrying:
                with attempt:
                    return super().request(href, method=method, headers=headers, parameters=parameters)
        except APIError as exc:
            if self.refused is not None:
                raise HostRefused(self.refused) from exc
            status = getattr(exc, "status_code", None)
            failure = Failure(href, status, retrying.statistics.get("attempt_number", 1), _reason(exc))
            raise RequestFailed(failure) from exc
        raise AssertionError("tenacity ends with a result or the last error")  # pragma: no cover

    def _check(self, url: str) -> None:
        if allowed_host(url, self.allowed) is None:
            self.refused = url
            raise HostRefused(url)

    def _check_redirect(self, response: Response, *args: object, **kwargs: object) -> Response:
        if response.is_redirect:
            target = urljoin(response.url, response.headers.get("location", ""))
            if allowed_host(target, self.allowed) is None:
                self.refused = target
                raise HostRefused(target)  # before requests follows it
        return response

    def _transient(self, exc: APIError) -> bool:
        return self.refused is None and Failure("", getattr(exc, "status_code", None), 1, "").transient

    def _count(self, state: RetryCallState) -> None:
        self.retries += 1


def host_of(url: str) -> str:
    """`scheme://host[:port]` of a URL, as an unreadable asset host is named."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.netloc else url[:64]


def _reason(exc: APIError) -> str:
    text = " ".join(str(exc).split())
    return text[:REASON_CHARS] + ("…" if len(text) > REASON_CHARS else "") if text else type(exc).__name__
