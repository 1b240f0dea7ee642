"""Pure reconnection decisions for lost Streamable HTTP streams.

:func:`decide` answers "when may attempt *n* start, if at all?" from a
:class:`RetryPolicy`, the caller's clock and jitter, and the server's SSE ``retry:``
value, which the MCP spec (Streamable HTTP, "Resumability and Redelivery") tells
clients to honour: the first reconnection waits exactly that long, and when it fails
again the backoff grows from there, never below it, so a server that says ``retry: 0``
and closes at once is not reconnected to in a tight loop. It never reads a clock or a
random source (STYLE.md section 1).
"""

from __future__ import annotations

import math

import msgspec

from mcp_sansio.errors import LocalProtocolError

__all__ = ["GiveUp", "RetryAt", "RetryPolicy", "decide"]


class RetryPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """Bounded exponential backoff with jitter.

    Attempt ``n`` waits ``initial_delay * multiplier ** (n - 1)`` seconds, capped at
    ``max_delay``, then scaled by a factor in ``[1 - jitter, 1 + jitter)`` and capped
    again, so a delay never exceeds ``max_delay``. When the server sent ``retry:``, the
    first attempt waits exactly that, and attempt ``n`` the larger of it and the delay
    above for ``n - 1``.

    A stream that worked (it delivered a message, or stayed open ``max_delay``) starts
    the count over; one that keeps ending at once is given up after ``max_attempts``.

    Attributes:
        max_attempts: retries allowed after the first failure; 0 disables retrying.
        initial_delay: the delay before the first retry, in seconds.
        max_delay: the largest backoff delay, in seconds.
        multiplier: growth per attempt; at least 1, so delays never shrink.
        jitter: the fraction of the delay that jitter may add or remove, in [0, 1].
    """

    max_attempts: int = 5
    initial_delay: float = 1.0
    max_delay: float = 30.0
    multiplier: float = 2.0
    jitter: float = 0.2

    def __post_init__(self) -> None:
        """Reject policies that cannot give sensible delays.

        Raises:
            LocalProtocolError: a negative count or delay, ``max_delay`` below
                ``initial_delay``, a ``multiplier`` below 1, a ``jitter`` outside
                [0, 1], or any value that is not finite.
        """
        values = (self.initial_delay, self.max_delay, self.multiplier, self.jitter)
        if not all(math.isfinite(value) for value in values):
            raise LocalProtocolError(f"RetryPolicy values must be finite: {self!r}")
        if self.max_attempts < 0:
            raise LocalProtocolError(f"max_attempts must be >= 0, got {self.max_attempts}")
        if self.initial_delay < 0:
            raise LocalProtocolError(f"initial_delay must be >= 0, got {self.initial_delay}")
        if self.max_delay < self.initial_delay:
            raise LocalProtocolError(
                f"max_delay ({self.max_delay}) is below initial_delay ({self.initial_delay})"
            )
        if self.multiplier < 1:
            raise LocalProtocolError(f"multiplier must be >= 1, got {self.multiplier}")
        if not 0 <= self.jitter <= 1:
            raise LocalProtocolError(f"jitter must be within [0, 1], got {self.jitter}")


class RetryAt(msgspec.Struct, frozen=True, kw_only=True):
    """Make attempt ``attempt`` at time ``at`` (the driver's clock, seconds)."""

    at: float
    attempt: int


class GiveUp(msgspec.Struct, frozen=True, kw_only=True):
    """Stop retrying: ``attempts`` retries were made and the policy allows no more."""

    reason: str
    attempts: int


def decide(
    policy: RetryPolicy, attempt: int, now: float, server_retry: float | None, jitter: float
) -> RetryAt | GiveUp:
    """When to make retry number ``attempt``, or that there is none.

    Args:
        policy: the bounds and backoff curve.
        attempt: the retry about to be made; 1 is the first retry.
        now: the current time on the driver's monotonic clock, in seconds.
        server_retry: the stream's SSE ``retry:`` value in seconds, or ``None``. When
            given, the first retry waits exactly that (no jitter, no cap), and later ones
            the backoff of the attempt before, but never less; a negative value counts
            as 0.
        jitter: entropy in [0, 1) from the driver; 0.5 means no change.

    Returns:
        :class:`GiveUp` once ``attempt`` exceeds ``policy.max_attempts``, else
        :class:`RetryAt` with ``at >= now``.

    Raises:
        LocalProtocolError: ``attempt`` is below 1, ``jitter`` is outside [0, 1), or
            ``now`` or ``server_retry`` is not finite.
    """
    if attempt < 1:
        raise LocalProtocolError(f"attempt must be >= 1, got {attempt}")
    if not 0 <= jitter < 1:
        raise LocalProtocolError(f"jitter must be within [0, 1), got {jitter}")
    if not math.isfinite(now) or (server_retry is not None and not math.isfinite(server_retry)):
        raise LocalProtocolError(f"now and server_retry must be finite: {now}, {server_retry}")
    if attempt > policy.max_attempts:
        return GiveUp(reason=f"the policy allows {policy.max_attempts} retries", attempts=attempt - 1)
    floor = 0.0 if server_retry is None else max(server_retry, 0.0)
    step = attempt if server_retry is None else attempt - 1  # the server's retry: is step 0
    if not step:
        return RetryAt(at=now + floor, attempt=attempt)
    factor = 1 + policy.jitter * (2 * jitter - 1)
    delay = min(_backoff_delay(policy, step) * factor, policy.max_delay)
    return RetryAt(at=now + max(delay, floor), attempt=attempt)


def _backoff_delay(policy: RetryPolicy, attempt: int) -> float:
    """The capped delay before retry ``attempt``, without jitter, in seconds."""
    try:
        delay = policy.initial_delay * policy.multiplier ** (attempt - 1)
    except OverflowError:
        return policy.max_delay
    return min(delay, policy.max_delay)
