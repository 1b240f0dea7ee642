"""The servers' pool for plain ``def`` handlers: outcomes on the loop (asyncio's, and under anyio
trio's too), a bound on threads, no stall while under it, cancellation, the caller's context."""

from __future__ import annotations

import asyncio
import contextvars
import threading

import anyio
import pytest

from mcp_sansio_base.anyio_runtime import AnyioPrimitives
from mcp_sansio_base.handler_pool import HandlerPool

DEADLINE = 10.0
VAR: contextvars.ContextVar[str] = contextvars.ContextVar("VAR", default="unset")


async def _outcome(pool: HandlerPool, fn: object) -> tuple[object, BaseException | None, int]:
    loop = asyncio.get_running_loop()
    future: asyncio.Future[tuple[object, BaseException | None, int]] = loop.create_future()
    pool.submit(fn,  # type: ignore[arg-type]
                lambda value, error: future.set_result((value, error, threading.get_ident())))
    return await asyncio.wait_for(future, DEADLINE)


def test_a_job_runs_in_a_worker_and_its_outcome_comes_back_on_the_loop() -> None:
    async def main() -> None:
        pool = HandlerPool(2, asyncio.get_running_loop().call_soon_threadsafe)
        try:
            value, error, on = await _outcome(pool, threading.get_ident)
        finally:
            pool.close()
        assert error is None
        assert value != threading.get_ident()
        assert on == threading.get_ident()

    asyncio.run(main())


def test_a_jobs_exception_is_its_outcome() -> None:
    def fail() -> None:
        raise ValueError("no")

    async def main() -> None:
        pool = HandlerPool(1, asyncio.get_running_loop().call_soon_threadsafe)
        try:
            value, error, _ = await _outcome(pool, fail)
        finally:
            pool.close()
        assert value is None and isinstance(error, ValueError)

    asyncio.run(main())


def test_the_callers_context_is_current_in_the_worker() -> None:
    async def main() -> None:
        pool = HandlerPool(1, asyncio.get_running_loop().call_soon_threadsafe)
        VAR.set("caller")
        try:
            value, _, _ = await _outcome(pool, VAR.get)
        finally:
            pool.close()
        assert value == "caller"

    asyncio.run(main())


def test_a_blocking_job_stalls_no_other_and_the_bound_holds() -> None:
    async def main() -> None:
        pool = HandlerPool(2, asyncio.get_running_loop().call_soon_threadsafe)
        release = threading.Event()
        try:
            blocked = asyncio.ensure_future(_outcome(pool, lambda: release.wait(DEADLINE)))
            value, _, _ = await _outcome(pool, lambda: "free")  # a second worker takes it
            assert value == "free"
            assert not blocked.done()
            third = asyncio.ensure_future(_outcome(pool, lambda: release.wait(DEADLINE)))
            fourth = asyncio.ensure_future(_outcome(pool, lambda: "waited"))
            await asyncio.sleep(0.05)
            assert pool.threads == 2  # never more than the bound: the fourth waits its turn
            assert not fourth.done()
            release.set()
            assert (await fourth)[0] == "waited"
            assert (await blocked)[0] is True and (await third)[0] is True
        finally:
            release.set()
            pool.close()

    asyncio.run(main())


def test_a_job_cancelled_before_a_worker_takes_it_never_runs() -> None:
    async def main() -> None:
        pool = HandlerPool(1, asyncio.get_running_loop().call_soon_threadsafe)
        release = threading.Event()
        ran: list[str] = []
        cancelled: list[str] = []
        outcomes: list[object] = []
        started = threading.Event()

        def block() -> bool:
            started.set()
            return release.wait(DEADLINE)

        try:
            first = asyncio.ensure_future(_outcome(pool, block))
            assert await asyncio.to_thread(started.wait, DEADLINE)  # the only worker is busy
            job = pool.submit(lambda: ran.append("ran"), lambda value, error: outcomes.append(value),
                              lambda: cancelled.append("cancelled"))
            assert job.cancel() is True
            assert job.cancel() is False  # once only
            release.set()
            await first
            last = await _outcome(pool, lambda: "after")  # the queue is past the cancelled job
            assert last[0] == "after"
        finally:
            release.set()
            pool.close()
        assert ran == [] and outcomes == [] and cancelled == ["cancelled"]

    asyncio.run(main())


def test_closing_ends_the_idle_workers_and_refuses_new_jobs() -> None:
    async def main() -> None:
        pool = HandlerPool(2, asyncio.get_running_loop().call_soon_threadsafe)
        await _outcome(pool, lambda: None)
        workers = [t for t in threading.enumerate() if t.name.startswith("mcp-handler_")]
        pool.close()
        for worker in workers:
            worker.join(DEADLINE)
            assert not worker.is_alive()
        with pytest.raises(RuntimeError):
            pool.submit(lambda: None, lambda value, error: None)

    asyncio.run(main())


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_under_anyio_a_job_comes_back_on_the_loop_where_anyio_knows_its_backend(backend: str) -> None:
    async def main() -> None:
        async with anyio.create_task_group() as group:
            primitives = AnyioPrimitives(group, lambda: None, 2)
            pool = primitives.handler_pool
            assert pool is not None
            done = anyio.Event()
            seen: list[object] = []

            def complete(value: object, error: BaseException | None) -> None:
                # anyio's calls need to know their backend: the runner's pump makes some here
                seen.extend([value, error, threading.get_ident(), anyio.current_time() > 0])
                anyio.Event().set()
                done.set()

            try:
                pool.submit(lambda: threading.current_thread().name, complete)
                with anyio.fail_after(DEADLINE):
                    await done.wait()
            finally:
                primitives.stop_handlers()
        name, error, on, timed = seen
        assert str(name).startswith("mcp-handler_") and error is None
        assert on == threading.get_ident() and timed

    anyio.run(main, backend=backend)
