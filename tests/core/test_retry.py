"""Retry decisions: bounded, never early, the server's ``retry:`` wins, backoff grows and is capped."""

from __future__ import annotations

import math

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_sansio.errors import LocalProtocolError
from mcp_sansio.retry import GiveUp, RetryAt, RetryPolicy, decide

NOW = st.floats(min_value=0, max_value=1e9)
JITTER = st.floats(min_value=0, max_value=1, exclude_max=True)
SERVER_RETRY = st.floats(min_value=-10, max_value=1e6)


@st.composite
def policies(draw: st.DrawFn) -> RetryPolicy:
    """Any valid policy."""
    initial = draw(st.floats(min_value=0, max_value=100))
    return RetryPolicy(
        max_attempts=draw(st.integers(min_value=0, max_value=50)),
        initial_delay=initial,
        max_delay=initial + draw(st.floats(min_value=0, max_value=1000)),
        multiplier=draw(st.floats(min_value=1, max_value=10)),
        jitter=draw(st.floats(min_value=0, max_value=1)),
    )


def delay_with_server(policy: RetryPolicy, attempt: int, server_retry: float) -> float:
    """How long after ``0.0`` retry ``attempt`` is due when the server said ``retry:`` (no jitter)."""
    decision = decide(policy, attempt, 0.0, server_retry, 0.5)
    assert isinstance(decision, RetryAt)
    return decision.at


def delay(policy: RetryPolicy, attempt: int, jitter: float, now: float = 0.0) -> float:
    """How long after ``now`` retry ``attempt`` is due."""
    decision = decide(policy, attempt, now, None, jitter)
    assert isinstance(decision, RetryAt)
    return decision.at - now


@given(policies(), NOW, st.one_of(st.none(), SERVER_RETRY), JITTER)
def test_retries_stop_after_max_attempts(
    policy: RetryPolicy, now: float, server_retry: float | None, jitter: float
) -> None:
    for attempt in range(1, policy.max_attempts + 1):
        decision = decide(policy, attempt, now, server_retry, jitter)
        assert isinstance(decision, RetryAt)
        assert decision.attempt == attempt
    assert decide(policy, policy.max_attempts + 1, now, server_retry, jitter) == GiveUp(
        reason=f"the policy allows {policy.max_attempts} retries", attempts=policy.max_attempts
    )


@given(policies(), st.integers(min_value=1, max_value=60), NOW, st.one_of(st.none(), SERVER_RETRY), JITTER)
def test_retry_is_never_earlier_than_now(
    policy: RetryPolicy, attempt: int, now: float, server_retry: float | None, jitter: float
) -> None:
    decision = decide(policy, attempt, now, server_retry, jitter)
    assert isinstance(decision, GiveUp) or decision.at >= now


@given(policies(), NOW, SERVER_RETRY, JITTER)
def test_the_first_retry_waits_exactly_the_server_retry(
    policy: RetryPolicy, now: float, server_retry: float, jitter: float
) -> None:
    decision = decide(policy, 1, now, server_retry, jitter)
    if policy.max_attempts:
        assert decision == RetryAt(at=now + max(server_retry, 0.0), attempt=1)


@given(policies(), st.integers(min_value=2, max_value=50), NOW, SERVER_RETRY, JITTER)
def test_a_later_retry_backs_off_from_the_attempt_before_but_never_below_the_server_retry(
    policy: RetryPolicy, attempt: int, now: float, server_retry: float, jitter: float
) -> None:
    decision = decide(policy, attempt, now, server_retry, jitter)
    if attempt <= policy.max_attempts:
        assert isinstance(decision, RetryAt)
        backoff = decide(policy, attempt - 1, now, None, jitter)
        assert isinstance(backoff, RetryAt)
        assert decision.at == max(backoff.at, now + max(server_retry, 0.0))


@given(policies(), SERVER_RETRY, JITTER)
def test_delay_is_monotone_in_attempt_with_a_server_retry(
    policy: RetryPolicy, server_retry: float, jitter: float
) -> None:
    attempts = range(1, policy.max_attempts + 1)
    delays = [d.at for d in (decide(policy, n, 0.0, server_retry, jitter) for n in attempts)
              if isinstance(d, RetryAt)]
    assert delays == sorted(delays)


def test_a_server_retry_of_zero_still_backs_off_after_the_first_retry() -> None:
    policy = RetryPolicy()
    assert [delay_with_server(policy, attempt, 0.0) for attempt in range(1, 6)] == [0, 1, 2, 4, 8]


@given(policies(), JITTER)
def test_delay_is_monotone_in_attempt_for_fixed_jitter(policy: RetryPolicy, jitter: float) -> None:
    delays = [delay(policy, attempt, jitter) for attempt in range(1, policy.max_attempts + 1)]
    assert delays == sorted(delays)


@given(policies(), st.integers(min_value=1, max_value=50), JITTER)
def test_delay_never_exceeds_max_delay(policy: RetryPolicy, attempt: int, jitter: float) -> None:
    if attempt <= policy.max_attempts:
        assert delay(policy, attempt, jitter) <= policy.max_delay


@given(policies(), st.integers(min_value=1, max_value=50), JITTER)
def test_jitter_stays_within_its_fraction_of_the_backoff(
    policy: RetryPolicy, attempt: int, jitter: float
) -> None:
    if attempt <= policy.max_attempts:
        backoff = min(policy.initial_delay * policy.multiplier ** (attempt - 1), policy.max_delay)
        assert math.isclose(delay(policy, attempt, 0.5), backoff)
        low, high = backoff * (1 - policy.jitter), backoff * (1 + policy.jitter)
        assert low * (1 - 1e-9) <= delay(policy, attempt, jitter) <= high * (1 + 1e-9)


def test_default_policy_backs_off_exponentially_to_the_cap() -> None:
    policy = RetryPolicy()
    assert [delay(policy, attempt, 0.5) for attempt in range(1, 6)] == [1, 2, 4, 8, 16]
    assert delay(RetryPolicy(max_attempts=10), 6, 0.5) == 30


def test_jitter_zero_and_near_one_span_the_band() -> None:
    policy = RetryPolicy(initial_delay=10.0, jitter=0.2)
    assert delay(policy, 1, 0.0) == 8.0
    assert 11.99 < delay(policy, 1, 0.9999) < 12.0


def test_huge_attempt_number_is_capped_without_overflow() -> None:
    policy = RetryPolicy(max_attempts=10**6, max_delay=60.0)
    assert delay(policy, 10**5, 0.5) == 60.0


def test_zero_max_attempts_gives_up_at_once() -> None:
    decision = decide(RetryPolicy(max_attempts=0), 1, 5.0, None, 0.5)
    assert decision == GiveUp(reason="the policy allows 0 retries", attempts=0)


def test_give_up_counts_the_retries_already_made() -> None:
    decision = decide(RetryPolicy(max_attempts=2), 7, 0.0, None, 0.5)
    assert isinstance(decision, GiveUp)
    assert decision.attempts == 6


def test_server_retry_is_not_capped_by_max_delay() -> None:
    assert decide(RetryPolicy(), 1, 100.0, 3600.0, 0.9) == RetryAt(at=3700.0, attempt=1)
    assert decide(RetryPolicy(), 4, 100.0, 3600.0, 0.9) == RetryAt(at=3700.0, attempt=4)


def test_negative_server_retry_means_now() -> None:
    assert decide(RetryPolicy(), 1, 100.0, -5.0, 0.9) == RetryAt(at=100.0, attempt=1)


@pytest.mark.parametrize(
    "fields",
    [
        {"max_attempts": -1},
        {"initial_delay": -1.0},
        {"initial_delay": 10.0, "max_delay": 5.0},
        {"multiplier": 0.5},
        {"jitter": -0.1},
        {"jitter": 1.5},
        {"initial_delay": math.nan},
        {"max_delay": math.inf},
    ],
)
def test_invalid_policy_is_rejected(fields: dict[str, float]) -> None:
    with pytest.raises(LocalProtocolError):
        msgspec.convert(fields, RetryPolicy)


@pytest.mark.parametrize(
    ("attempt", "now", "server_retry", "jitter"),
    [
        (0, 0.0, None, 0.5),
        (1, 0.0, None, 1.0),
        (1, 0.0, None, -0.1),
        (1, 0.0, None, math.nan),
        (1, math.inf, None, 0.5),
        (1, 0.0, math.nan, 0.5),
        (1, 0.0, math.inf, 0.5),
    ],
)
def test_invalid_decide_arguments_are_rejected(
    attempt: int, now: float, server_retry: float | None, jitter: float
) -> None:
    with pytest.raises(LocalProtocolError):
        decide(RetryPolicy(), attempt, now, server_retry, jitter)
