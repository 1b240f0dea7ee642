"""The server manager's decisions: batching, states, restarts, timeouts, -32042 retries, results."""

from __future__ import annotations

import math

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_sansio.errors import ConnectionClosed, LocalProtocolError, RequestError, SessionExpired, Unauthorized
from mcp_sansio.hostconfig import (
    ExpansionProblem,
    HttpServerConfig,
    Scope,
    ServerConfig,
    ServerEntry,
    ServerState,
    StdioServerConfig,
    Transport,
)
from mcp_sansio.listcache import ListKind
from mcp_sansio.manager import (
    ManagerConfig,
    NamedPrompt,
    NamedTool,
    PromptRoute,
    ServerManagerCore,
    ServerResource,
    ServerResourceTemplate,
    ToolRoute,
    elicitations_accepted,
    failure_from,
    is_connection_loss,
    timeout_from_env,
)
from mcp_sansio.manager_lifecycle import (
    Connected,
    ConnectionState,
    ConnectPlan,
    Failure,
    Join,
    RestartPolicy,
    ServerStatus,
    ServerUnavailable,
    Unavailable,
    UnknownServer,
    WaitUntil,
)
from mcp_sansio.naming import UnknownPromptName, UnknownToolName
from mcp_sansio.result_policy import KeptResult, OverflowAction, PersistResult, ResultPolicy, ResultRule
from mcp_sansio.retry import RetryPolicy
from mcp_sansio.types import (
    CallToolResult,
    ElicitRequestParams,
    ElicitResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    Prompt,
    ReadResourceResult,
    Resource,
    ResourceContents,
    ResourceTemplate,
    TextContent,
    Tool,
)

LOCAL = StdioServerConfig(command="server")
REMOTE = HttpServerConfig(url="https://example.com/mcp")
# No jitter (0.5), 1 s doubling to at most 8 s, 2 retries; stable after 60 s, cool-down 300 s.
RESTART = RestartPolicy(retry=RetryPolicy(max_attempts=2, initial_delay=1.0, max_delay=8.0),
                        stable_after=60.0, cooldown=300.0)
NO_JITTER = 0.5
BROKEN = Failure(message="cannot start 'server'", stderr_tail="boom\n")


def entry(name: str, config: ServerConfig = LOCAL, *, disabled: bool = False) -> ServerEntry:
    state = ServerState.DISABLED if disabled else ServerState.ENABLED
    return ServerEntry(name=name, config=config, scope=Scope.PROJECT, source="/p/.mcp.json", state=state,
                       state_source="/p/.mcp.local.json")


def core(*entries: ServerEntry, env: dict[str, str] | None = None, **config: object) -> ServerManagerCore:
    options = ManagerConfig(**{"restart": RESTART, **config})  # type: ignore[arg-type]  # overrides of any field
    return ServerManagerCore(entries or (entry("a"),), env=env or {}, config=options)


def started(manager: ServerManagerCore, name: str = "a", now: float = 0.0) -> ServerManagerCore:
    """Queue and start ``name``: it is connecting."""
    assert manager.use(name, now) == Join()
    assert [plan.name for plan in manager.start_due()] == [name]
    return manager


def connected(manager: ServerManagerCore, name: str = "a", now: float = 0.0) -> ServerManagerCore:
    started(manager, name, now).connected(name, now)
    return manager


def failed(manager: ServerManagerCore, name: str = "a", now: float = 0.0) -> ServerManagerCore:
    started(manager, name, now).connect_failed(name, BROKEN, now, NO_JITTER)
    return manager


def tool(name: str, meta: dict[str, object] | None = None) -> Tool:
    return Tool(name=name, input_schema={"type": "object"}, meta=meta)


def text_result(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(text=text)])


# ------------------------------------------------------------------- timeouts


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("1000", 1.0), (" 2500 ", 2.5), ("1500.5", 1.5005), ("", 30.0), ("0", 30.0), ("-5", 30.0),
     ("10s", 30.0), ("1e3", 30.0), ("nan", 30.0)],
)
def test_mcp_timeout_is_milliseconds_and_falls_back_to_the_default(value: str, seconds: float) -> None:
    assert timeout_from_env({"MCP_TIMEOUT": value}, "MCP_TIMEOUT", 30.0) == seconds


def test_missing_timeout_variable_gives_the_default() -> None:
    assert timeout_from_env({}, "MCP_TIMEOUT", 30.0) == 30.0


def test_connect_timeout_comes_from_mcp_timeout_and_defaults_to_30_seconds() -> None:
    assert core().connect_timeout == 30.0
    assert core(env={"MCP_TIMEOUT": "1000"}).connect_timeout == 1.0
    assert core(env={"MCP_TIMEOUT": "1000"}, connect_timeout=5.0).connect_timeout == 5.0


def test_plans_carry_the_connect_timeout() -> None:
    manager = core(env={"MCP_TIMEOUT": "1000"})
    manager.use("a", 0.0)
    assert manager.start_due() == [ConnectPlan(name="a", config=LOCAL, timeout=1.0)]


def test_request_timeout_prefers_the_call_then_the_server_then_the_default() -> None:
    slow = entry("slow", StdioServerConfig(command="s", timeout=120.0))
    manager = core(entry("a"), slow, env={"MCP_TOOL_TIMEOUT": "5000"})
    assert manager.request_timeout("a") == 5.0
    assert manager.request_timeout("slow") == 120.0
    assert manager.request_timeout("slow", 2.0) == 2.0
    assert core().request_timeout("a") == 60.0
    assert core(tool_timeout=7.0).request_timeout("a") == 7.0


@pytest.mark.parametrize("timeout", [0.0, -1.0, math.inf, math.nan])
def test_a_call_timeout_must_be_positive_and_finite(timeout: float) -> None:
    with pytest.raises(LocalProtocolError, match="positive number of seconds"):
        core().request_timeout("a", timeout)


@pytest.mark.parametrize(
    "options",
    [{"max_local": 0}, {"max_remote": 0}, {"list_cache_entries": 0}, {"max_elicitation_retries": -1},
     {"max_relists": -1},
     {"connect_timeout": 0.0}, {"tool_timeout": math.inf}],
)
def test_config_rejects_unusable_limits(options: dict[str, object]) -> None:
    with pytest.raises(LocalProtocolError):
        ManagerConfig(**options)  # type: ignore[arg-type]  # deliberately wrong values


@pytest.mark.parametrize("options", [{"stable_after": -1.0}, {"cooldown": math.inf}])
def test_restart_policy_rejects_unusable_periods(options: dict[str, float]) -> None:
    with pytest.raises(LocalProtocolError, match="finite"):
        RestartPolicy(stable_after=options.get("stable_after", 60.0), cooldown=options.get("cooldown", 300.0))


# ------------------------------------------------------------------- set-up


def test_two_entries_with_one_name_are_rejected() -> None:
    with pytest.raises(LocalProtocolError, match="configured twice"):
        core(entry("a"), entry("a"))


def test_placeholders_are_expanded_and_what_is_missing_is_reported() -> None:
    config = StdioServerConfig(command="${BIN}/server", args=("${MISSING}",))
    manager = core(entry("a", config), env={"BIN": "/opt"})
    manager.use("a", 0.0)
    [plan] = manager.start_due()
    assert plan.config == StdioServerConfig(command="/opt/server", args=("${MISSING}",))
    [warning] = manager.warnings
    assert (warning.server, warning.variable) == ("a", "MISSING")
    assert warning.problem is ExpansionProblem.MISSING_VARIABLE


def test_status_tells_scope_source_and_transport() -> None:
    ws = HttpServerConfig(url="ws://h/", transport=Transport.WS)
    manager = core(entry("a"), entry("r", REMOTE), entry("w", ws))
    statuses = manager.statuses(0.0)
    assert list(statuses) == ["a", "r", "w"] == manager.names()
    assert statuses["a"] == ServerStatus(name="a", state=ConnectionState.PENDING, scope=Scope.PROJECT,
                                         source="/p/.mcp.json", transport="stdio")
    assert [status.transport for status in statuses.values()] == ["stdio", "http", "ws"]


def test_disabled_servers_are_never_started() -> None:
    manager = core(entry("a", disabled=True))
    assert manager.queue_all() == []
    assert manager.use("a", 0.0) == Unavailable(message="server 'a' is disabled (/p/.mcp.local.json)")
    assert manager.status("a", 0.0).state is ConnectionState.DISABLED


def test_a_transport_the_driver_lacks_fails_for_good() -> None:
    manager = ServerManagerCore([entry("r", REMOTE)], env={}, transports=frozenset({"stdio"}))
    status = manager.status("r", 0.0)
    assert (status.state, status.error, status.retry_at) == (
        ConnectionState.FAILED, "this driver cannot connect to http servers", None)
    assert manager.queue_all() == []
    assert manager.use("r", 1e9) == Unavailable(
        message="server 'r' failed: this driver cannot connect to http servers")


def test_unknown_server_names_are_refused() -> None:
    with pytest.raises(UnknownServer, match="no server is named 'b'") as info:
        core().use("b", 0.0)
    assert str(info.value) == "no server is named 'b'"


# ------------------------------------------------------------------ batching


def test_at_most_three_local_and_twenty_remote_servers_start_at_once() -> None:
    locals_ = [entry(f"l{i}") for i in range(5)]
    remotes = [entry(f"r{i}", REMOTE) for i in range(25)]
    manager = core(*locals_, *remotes)
    assert len(manager.queue_all()) == 30
    plans = manager.start_due()
    assert [plan.name for plan in plans] == [f"l{i}" for i in range(3)] + [f"r{i}" for i in range(20)]
    assert manager.start_due() == []
    manager.connected("l1", 1.0)
    assert [plan.name for plan in manager.start_due()] == ["l3"]
    manager.connect_failed("r0", BROKEN, 1.0, NO_JITTER)
    assert [plan.name for plan in manager.start_due()] == ["r20"]


def test_limits_are_configurable() -> None:
    manager = core(*(entry(f"l{i}") for i in range(3)), max_local=1)
    manager.queue_all()
    assert [plan.name for plan in manager.start_due()] == ["l0"]


def test_queue_all_waits_for_attempts_under_way_and_queues_nothing_twice() -> None:
    manager = core(entry("a"), entry("b"), entry("c"))
    started(manager, "a")
    assert manager.queue_all() == ["a", "b", "c"]
    assert manager.queue_all() == ["a", "b", "c"]
    assert [plan.name for plan in manager.start_due()] == ["b", "c"]


@given(st.lists(st.tuples(st.sampled_from(["use", "start", "succeed", "fail", "lose"]),
                          st.integers(min_value=0, max_value=9)), max_size=80))
def test_batching_never_exceeds_its_limits(operations: list[tuple[str, int]]) -> None:
    manager = core(*(entry(f"l{i}") for i in range(5)), *(entry(f"r{i}", REMOTE) for i in range(5)),
                   max_local=2, max_remote=3)
    now = 0.0
    for operation, index in operations:
        now += 1.0
        name = manager.names()[index]
        state = manager.status(name, now).state
        if operation == "use" and state is not ConnectionState.CONNECTING:
            manager.use(name, now)
        elif operation == "start":
            manager.start_due()
        elif operation in ("succeed", "fail") and state is ConnectionState.CONNECTING:
            if operation == "succeed":
                manager.connected(name, now)
            else:
                manager.connect_failed(name, BROKEN, now, NO_JITTER)
        elif operation == "lose" and state is ConnectionState.CONNECTED:
            manager.connection_lost(name, BROKEN, now, NO_JITTER)
        connecting = [n for n, s in manager.statuses(now).items() if s.state is ConnectionState.CONNECTING]
        assert sum(n.startswith("l") for n in connecting) <= 2
        assert sum(n.startswith("r") for n in connecting) <= 3


# ------------------------------------------------------------ state machine


def test_a_use_of_a_pending_server_queues_it_and_joins() -> None:
    manager = core()
    assert manager.use("a", 0.0) == Join()
    assert manager.attempting("a")
    assert manager.use("a", 0.0) == Join()
    assert len(manager.start_due()) == 1
    assert manager.use("a", 0.0) == Join()
    assert manager.status("a", 0.0).state is ConnectionState.CONNECTING


def test_a_successful_attempt_connects() -> None:
    manager = connected(core())
    assert manager.use("a", 1.0) == Connected()
    assert manager.connected_names() == ["a"]
    assert not manager.attempting("a")


def test_a_failed_attempt_records_why_and_when_to_retry() -> None:
    manager = failed(core(), now=10.0)
    status = manager.status("a", 10.0)
    assert (status.state, status.error, status.stderr_tail, status.attempts, status.retry_at) == (
        ConnectionState.FAILED, "cannot start 'server'", "boom\n", 1, 11.0)


def test_an_outcome_without_an_attempt_is_a_local_error() -> None:
    with pytest.raises(LocalProtocolError, match="succeed is not allowed while server 'a' is pending"):
        core().connected("a", 0.0)
    with pytest.raises(LocalProtocolError, match="lose is not allowed while server 'a' is pending"):
        core().connection_lost("a", BROKEN, 0.0, NO_JITTER)


def test_unauthorized_needs_auth_and_is_not_retried() -> None:
    manager = started(core(entry("a", REMOTE)))
    manager.connect_failed("a", failure_from(Unauthorized("401", status=401, params={})), 0.0, NO_JITTER)
    status = manager.status("a", 1e9)
    assert (status.state, status.error, status.retry_at) == (
        ConnectionState.NEEDS_AUTH, "HTTP 401: 401", None)
    assert manager.use("a", 1e9) == Unavailable(message="server 'a' needs authorization: HTTP 401: 401")


# ------------------------------------------------------------------ restarts


def test_a_use_during_backoff_waits_then_retries() -> None:
    manager = failed(core(), now=10.0)
    assert manager.use("a", 10.5) == WaitUntil(at=11.0)
    assert manager.use("a", 11.0) == Join()


def test_backoff_doubles_until_the_episode_is_given_up() -> None:
    manager = core()
    now = 0.0
    for attempt, delay in ((1, 1.0), (2, 2.0)):
        started(manager, now=now).connect_failed("a", BROKEN, now, NO_JITTER)
        status = manager.status("a", now)
        assert (status.attempts, status.retry_at) == (attempt, now + delay)
        now += delay
    started(manager, now=now).connect_failed("a", BROKEN, now, NO_JITTER)
    assert manager.status("a", now).retry_at == now + 300.0
    assert manager.use("a", now + 299.0) == Unavailable(
        message="server 'a' failed: cannot start 'server'; gave up after 3 attempts, next try in 1 s")


def test_a_given_up_server_gets_a_fresh_episode_after_the_cooldown() -> None:
    manager = core(restart=RestartPolicy(retry=RetryPolicy(max_attempts=0), cooldown=100.0))
    failed(manager, now=0.0)
    assert isinstance(manager.use("a", 50.0), Unavailable)
    assert manager.use("a", 100.0) == Join()
    manager.start_due()
    manager.connect_failed("a", BROKEN, 100.0, NO_JITTER)
    assert manager.status("a", 100.0).attempts == 1


def test_jitter_spreads_the_retry() -> None:
    manager = started(core(restart=RestartPolicy(retry=RetryPolicy(initial_delay=1.0, jitter=0.5))))
    manager.connect_failed("a", BROKEN, 0.0, 0.0)
    assert manager.status("a", 0.0).retry_at == 0.5


def test_a_lost_connection_forgets_its_lists_and_schedules_a_restart() -> None:
    manager = connected(core())
    manager.store("a", ListKind.TOOLS, [tool("t")], manager.begin_list("a", ListKind.TOOLS), 0.0)
    manager.connection_lost("a", Failure(message="exited"), 5.0, NO_JITTER)
    status = manager.status("a", 5.0)
    assert (status.state, status.error, status.attempts, status.retry_at) == (
        ConnectionState.FAILED, "exited", 1, 6.0)
    assert manager.cached("a", ListKind.TOOLS, 5.0) is None
    assert manager.use("a", 6.0) == Join()


def test_crashes_soon_after_connecting_add_up_to_giving_up() -> None:
    manager = core()
    now = 0.0
    for _ in range(3):
        connected(manager, now=now)
        now += 1.0
        manager.connection_lost("a", BROKEN, now, NO_JITTER)
        retry_at = manager.status("a", now).retry_at
        assert retry_at is not None
        now = retry_at if retry_at < now + 300.0 else now
    assert manager.status("a", now).attempts == 3
    assert retry_at == now + 300.0
    assert isinstance(manager.use("a", now + 1.0), Unavailable)


def test_attempts_reset_after_a_stable_period() -> None:
    manager = failed(core(), now=0.0)
    connected(manager, now=1.0)
    assert manager.status("a", 30.0).attempts == 1
    assert manager.status("a", 61.0).attempts == 0
    manager.connection_lost("a", BROKEN, 61.0, NO_JITTER)
    status = manager.status("a", 61.0)
    assert (status.attempts, status.retry_at) == (1, 62.0)


def test_close_ends_every_connection_and_refuses_later_uses() -> None:
    manager = connected(core(entry("a"), entry("b"), entry("c"), entry("d", disabled=True)))
    started(manager, "b")
    manager.use("c", 0.0)
    manager.store("a", ListKind.PROMPTS, [], manager.begin_list("a", ListKind.PROMPTS), 0.0)
    manager.close()
    assert [status.state.value for status in manager.statuses(0.0).values()] == [
        "pending", "pending", "pending", "disabled"]
    assert manager.cached("a", ListKind.PROMPTS, 0.0) is None
    assert manager.start_due() == []
    assert manager.queue_all() == []
    with pytest.raises(LocalProtocolError, match="closed"):
        manager.use("a", 0.0)


# ------------------------------------------------------------ shell prefix


def test_stdio_commands_start_after_the_environment_prefix_then_their_own() -> None:
    own = StdioServerConfig(command="node", args=("s.js",), shell_prefix=("bun", "run"))
    manager = core(entry("a", own), entry("b"), entry("r", REMOTE),
                   env={"MCP_SANSIO_SHELL_PREFIX": "'/opt/sand box' --"})
    for name in ("a", "b", "r"):
        manager.use(name, 0.0)
    plans = {plan.name: plan.config for plan in manager.start_due()}
    sandbox = "/opt/sand box"
    assert plans == {"a": StdioServerConfig(command=sandbox, args=("--", "bun", "run", "node", "s.js")),
                     "b": StdioServerConfig(command=sandbox, args=("--", "server")), "r": REMOTE}
    assert [manager.status(name, 0.0).shell_prefix for name in ("a", "b", "r")] == [
        "'/opt/sand box' -- bun run", "'/opt/sand box' --", ""]


def test_without_a_prefix_commands_start_as_written() -> None:
    manager = core(env={"MCP_SANSIO_SHELL_PREFIX": "  "})
    assert manager.use("a", 0.0) == Join()
    assert [plan.config for plan in manager.start_due()] == [LOCAL]
    assert manager.status("a", 0.0).shell_prefix == ""


def test_a_prefix_that_cannot_be_split_fails_every_stdio_server_but_no_remote_one() -> None:
    manager = core(entry("a"), entry("r", REMOTE), env={"MCP_SANSIO_SHELL_PREFIX": "'unclosed"})
    assert manager.status("a", 0.0).state is ConnectionState.FAILED
    assert "MCP_SANSIO_SHELL_PREFIX cannot be split into words" in (manager.status("a", 0.0).error or "")
    assert isinstance(manager.use("a", 0.0), Unavailable)
    assert manager.use("r", 0.0) == Join()


# --------------------------------------------------------------------- lists


def test_listings_are_cached_until_a_list_changed_notification() -> None:
    manager = connected(core())
    manager.store("a", ListKind.RESOURCES, ["r"], manager.begin_list("a", ListKind.RESOURCES), 0.0)
    manager.store("a", ListKind.TOOLS, [tool("t")], manager.begin_list("a", ListKind.TOOLS), 0.0)
    assert manager.cached("a", ListKind.RESOURCES, 1.0) == ["r"]
    manager.notification_received("a", "notifications/message")
    manager.notification_received("a", "notifications/resources/list_changed")
    assert manager.cached("a", ListKind.RESOURCES, 1.0) is None
    assert manager.cached("a", ListKind.TOOLS, 1.0) == [tool("t")]


def test_a_listing_made_stale_while_it_ran_is_not_cached() -> None:
    manager = connected(core())
    token = manager.begin_list("a", ListKind.TOOLS)
    manager.notification_received("a", "notifications/tools/list_changed")
    manager.store("a", ListKind.TOOLS, [tool("old")], token, 0.0)
    assert manager.cached("a", ListKind.TOOLS, 0.0) is None
    assert manager.status("a", 0.0).tool_count is None


def test_a_listing_a_list_changed_overtook_is_fetched_again_then_stored() -> None:
    manager = connected(core())
    token = manager.begin_list("a", ListKind.TOOLS)
    manager.notification_received("a", "notifications/tools/list_changed")
    assert manager.store_result("a", ListKind.TOOLS, ListToolsResult(tools=[tool("old")]), token, 0.0) is None
    assert manager.status("a", 0.0).tool_count is None
    token = manager.begin_list("a", ListKind.TOOLS)
    fresh = ListToolsResult(tools=[tool("old"), tool("late")])
    assert manager.store_result("a", ListKind.TOOLS, fresh, token, 0.0) == [tool("old"), tool("late")]
    assert manager.cached("a", ListKind.TOOLS, 0.0) == [tool("old"), tool("late")]
    assert [named.name for named in manager.named_tools()] == ["mcp__a__old", "mcp__a__late"]


def test_a_listing_overtaken_again_and_again_is_used_uncached_after_max_relists() -> None:
    manager = connected(core(max_relists=2))
    outcomes = []
    for _ in range(3):
        token = manager.begin_list("a", ListKind.TOOLS)
        manager.notification_received("a", "notifications/tools/list_changed")
        result = ListToolsResult(tools=[tool("t")])
        outcomes.append(manager.store_result("a", ListKind.TOOLS, result, token, 0.0))
    assert outcomes == [None, None, [tool("t")]]
    assert manager.cached("a", ListKind.TOOLS, 0.0) is None
    assert manager.status("a", 0.0).tool_count == 1


def test_relists_are_counted_in_a_row_only() -> None:
    manager = connected(core(max_relists=1))
    for _ in range(3):  # overtaken once, then fresh: the budget starts again each time
        token = manager.begin_list("a", ListKind.PROMPTS)
        manager.notification_received("a", "notifications/prompts/list_changed")
        assert manager.store_result("a", ListKind.PROMPTS, None, token, 0.0) is None
        token = manager.begin_list("a", ListKind.PROMPTS)
        assert manager.store_result("a", ListKind.PROMPTS, None, token, 0.0) == []


def test_a_listing_of_an_unknown_server_is_refused() -> None:
    with pytest.raises(UnknownServer):
        core().store_result("nobody", ListKind.TOOLS, None, 0, 0.0)


def test_a_resource_read_is_not_stored_as_a_list() -> None:
    manager = connected(core())
    with pytest.raises(LocalProtocolError, match="store_read"):
        manager.store("a", ListKind.RESOURCE_READ, [], 0, 0.0)
    with pytest.raises(LocalProtocolError, match="store_read"):
        manager.store_result("a", ListKind.RESOURCE_READ, None, 0, 0.0)


def test_a_tools_listing_sets_the_tool_count() -> None:
    manager = connected(core())
    manager.store("a", ListKind.TOOLS, [tool("x"), tool("y")], manager.begin_list("a", ListKind.TOOLS), 0.0)
    assert manager.status("a", 0.0).tool_count == 2


def test_a_listing_with_a_ttl_hint_expires_that_long_after_it_was_stored() -> None:
    manager = connected(core())
    token = manager.begin_list("a", ListKind.TOOLS)
    manager.store("a", ListKind.TOOLS, [tool("t")], token, 10.0, ttl_ms=2000, cache_scope="private")
    assert manager.cached("a", ListKind.TOOLS, 11.9) == [tool("t")]
    assert manager.cached("a", ListKind.TOOLS, 12.0) is None


def test_a_listing_hinted_immediately_stale_is_not_cached_but_still_names_the_tools() -> None:
    manager = connected(core())
    manager.store("a", ListKind.TOOLS, [tool("t")], manager.begin_list("a", ListKind.TOOLS), 0.0,
                  ttl_ms=0, cache_scope="public")
    assert manager.cached("a", ListKind.TOOLS, 0.0) is None
    assert manager.status("a", 0.0).tool_count == 1


def test_a_public_listing_outlives_a_lost_connection_until_its_ttl_ends() -> None:
    manager = connected(core())
    manager.store("a", ListKind.TOOLS, [tool("t")], manager.begin_list("a", ListKind.TOOLS), 0.0,
                  ttl_ms=60_000, cache_scope="public")
    manager.store("a", ListKind.PROMPTS, [], manager.begin_list("a", ListKind.PROMPTS), 0.0,
                  ttl_ms=60_000, cache_scope="private")
    manager.connection_lost("a", BROKEN, 5.0, NO_JITTER)
    assert manager.cached("a", ListKind.TOOLS, 6.0) == [tool("t")]
    assert manager.cached("a", ListKind.PROMPTS, 6.0) is None
    assert manager.cached("a", ListKind.TOOLS, 60.0) is None


def test_closing_the_manager_drops_public_listings_too() -> None:
    manager = connected(core())
    manager.store("a", ListKind.TOOLS, [tool("t")], manager.begin_list("a", ListKind.TOOLS), 0.0,
                  ttl_ms=60_000, cache_scope="public")
    manager.close()
    assert manager.cached("a", ListKind.TOOLS, 0.0) is None


def test_a_list_result_is_stored_with_its_hints_and_its_items_returned() -> None:
    manager = connected(core())
    result = ListToolsResult(tools=[tool("t")], ttl_ms=1000, cache_scope="public")
    assert manager.store_result("a", ListKind.TOOLS, result, manager.begin_list("a", ListKind.TOOLS),
                                0.0) == [tool("t")]
    assert manager.cached("a", ListKind.TOOLS, 0.5) == [tool("t")]
    assert manager.cached("a", ListKind.TOOLS, 1.0) is None


def _read(ttl_ms: int | None, scope: str | None = "public") -> ReadResourceResult:
    return ReadResourceResult(contents=[ResourceContents(uri="file:///a", text="a")], ttl_ms=ttl_ms,
                              cache_scope=scope)


def test_a_read_is_cached_only_as_long_as_its_ttl_hint_says() -> None:
    manager = connected(core())
    for ttl_ms, uri in ((None, "file:///none"), (0, "file:///zero"), (2000, "file:///a")):
        token = manager.begin_list("a", ListKind.RESOURCE_READ)
        manager.store_read("a", uri, _read(ttl_ms), token, 10.0)
    assert manager.cached_read("a", "file:///none", 10.0) is None
    assert manager.cached_read("a", "file:///zero", 10.0) is None
    assert manager.cached_read("a", "file:///a", 11.9) == _read(2000)
    assert manager.cached_read("a", "file:///a", 12.0) is None


def test_a_resource_update_drops_the_cached_reads_and_any_read_under_way() -> None:
    manager = connected(core())
    manager.store_read("a", "file:///a", _read(60_000), manager.begin_list("a", ListKind.RESOURCE_READ), 0.0)
    token = manager.begin_list("a", ListKind.RESOURCE_READ)
    manager.notification_received("a", "notifications/resources/updated")
    assert manager.cached_read("a", "file:///a", 1.0) is None
    manager.store_read("a", "file:///a", _read(60_000), token, 1.0)
    assert manager.cached_read("a", "file:///a", 1.0) is None


def test_only_public_reads_outlive_a_lost_connection_and_none_a_closed_manager() -> None:
    manager = connected(core())
    for uri, scope in (("file:///pub", "public"), ("file:///priv", "private")):
        token = manager.begin_list("a", ListKind.RESOURCE_READ)
        manager.store_read("a", uri, _read(60_000, scope), token, 0.0)
    manager.connection_lost("a", BROKEN, 1.0, NO_JITTER)
    assert manager.cached_read("a", "file:///pub", 2.0) == _read(60_000, "public")
    assert manager.cached_read("a", "file:///priv", 2.0) is None
    manager.close()
    assert manager.cached_read("a", "file:///pub", 2.0) is None


def test_a_list_the_server_does_not_have_is_stored_empty_until_invalidated() -> None:
    manager = connected(core())
    token = manager.begin_list("a", ListKind.PROMPTS)
    assert manager.store_result("a", ListKind.PROMPTS, None, token, 0.0) == []
    assert manager.cached("a", ListKind.PROMPTS, 1e9) == []


# --------------------------------------------------------------------- tools


def listed(manager: ServerManagerCore, name: str, *tools: Tool) -> None:
    manager.store(name, ListKind.TOOLS, list(tools), manager.begin_list(name, ListKind.TOOLS), 0.0)


def test_tools_of_connected_servers_get_model_facing_names() -> None:
    manager = connected(connected(core(entry("a"), entry("b.c"))), "b.c")
    listed(manager, "a", tool("echo"))
    listed(manager, "b.c", tool("echo"), tool("add"))
    assert manager.named_tools() == [
        NamedTool(name="mcp__a__echo", server="a", tool=tool("echo")),
        NamedTool(name="mcp__b_c__echo", server="b.c", tool=tool("echo")),
        NamedTool(name="mcp__b_c__add", server="b.c", tool=tool("add")),
    ]
    assert manager.route("mcp__b_c__add") == ToolRoute(server="b.c", tool="add", timeout=60.0)


def test_a_failed_server_keeps_its_names_so_a_call_can_restart_it() -> None:
    manager = connected(core(entry("a"), entry("b")))
    listed(manager, "a", tool("poke"))
    manager.connection_lost("a", BROKEN, 1.0, NO_JITTER)
    assert manager.named_tools() == []
    assert manager.route("mcp__a__poke", 3.0) == ToolRoute(server="a", tool="poke", timeout=3.0)


def test_an_unknown_model_name_is_refused() -> None:
    with pytest.raises(UnknownToolName, match="no tool is named 'mcp__a__nope'"):
        core().route("mcp__a__nope")


# ---------------------------------------------------- prompts and resources


def prompt(name: str) -> Prompt:
    return Prompt(name=name)


def prompts_listed(manager: ServerManagerCore, name: str, *prompts: Prompt) -> None:
    token = manager.begin_list(name, ListKind.PROMPTS)
    manager.store_result(name, ListKind.PROMPTS, ListPromptsResult(prompts=list(prompts)), token, 0.0)


def test_prompts_are_named_like_tools_and_routed_back() -> None:
    manager = connected(connected(core(entry("a"), entry("b.c"))), "b.c")
    prompts_listed(manager, "a", prompt("greet"))
    prompts_listed(manager, "b.c", prompt("greet"), prompt("review code"))
    assert manager.named_prompts() == [
        NamedPrompt(name="mcp__a__greet", server="a", prompt=prompt("greet")),
        NamedPrompt(name="mcp__b_c__greet", server="b.c", prompt=prompt("greet")),
        NamedPrompt(name="mcp__b_c__review_code", server="b.c", prompt=prompt("review code")),
    ]
    assert manager.route_prompt("mcp__b_c__review_code", 5.0) == PromptRoute(
        server="b.c", prompt="review code", timeout=5.0)
    assert manager.named_tools() == []  # a table of their own


def test_prompts_are_cleared_with_the_connection_but_still_route() -> None:
    manager = connected(core())
    prompts_listed(manager, "a", prompt("greet"))
    manager.connection_lost("a", BROKEN, 1.0, NO_JITTER)
    assert manager.cached("a", ListKind.PROMPTS, 1.0) is None
    assert manager.named_prompts() == []
    assert manager.route_prompt("mcp__a__greet").server == "a"


def test_a_prompt_list_changed_renames_on_the_next_listing() -> None:
    manager = connected(core())
    prompts_listed(manager, "a", prompt("old"))
    manager.notification_received("a", "notifications/prompts/list_changed")
    assert manager.cached("a", ListKind.PROMPTS, 0.0) is None
    prompts_listed(manager, "a", prompt("new"))
    assert [named.name for named in manager.named_prompts()] == ["mcp__a__new"]
    with pytest.raises(UnknownPromptName, match="no prompt is named 'mcp__a__old'"):
        manager.route_prompt("mcp__a__old")


def test_resources_and_templates_of_connected_servers_come_with_their_server() -> None:
    manager = connected(connected(core(entry("a"), entry("b"), entry("c"))), "b")
    resource = Resource(uri="file:///r", name="r")
    template = ResourceTemplate(uri_template="file:///{path}", name="files")
    for name, kind, result in (
        ("a", ListKind.RESOURCES, ListResourcesResult(resources=[resource])),
        ("a", ListKind.RESOURCE_TEMPLATES, ListResourceTemplatesResult(resource_templates=[template])),
        ("b", ListKind.RESOURCES, None),
    ):
        manager.store_result(name, kind, result, manager.begin_list(name, kind), 0.0)
    assert manager.named_resources() == [ServerResource(server="a", resource=resource),
                                         ServerResourceTemplate(server="a", template=template)]
    manager.connection_lost("a", BROKEN, 1.0, NO_JITTER)
    assert manager.named_resources() == []


def test_servers_for_a_name_are_the_configured_ones_it_may_belong_to() -> None:
    manager = core(entry("demo"), entry("other"), entry("off", disabled=True))
    assert manager.servers_for("mcp__demo__echo") == ["demo"]
    assert manager.servers_for("mcp__off__x") == ["off"]
    assert manager.servers_for("mcp__nobody__x") == []


def test_an_unroutable_name_of_a_failed_server_says_it_failed_and_why() -> None:
    manager = failed(core(entry("a"), entry("b")))
    error = manager.unroutable("mcp__a__poke", ListKind.TOOLS, 0.0)
    assert isinstance(error, ServerUnavailable)
    assert (error.server, error.state) == ("a", ConnectionState.FAILED)
    assert str(error) == "tool 'mcp__a__poke': server 'a' failed: cannot start 'server'"


def test_an_unroutable_name_of_a_disabled_or_untried_server_says_so() -> None:
    manager = core(entry("off", disabled=True), entry("later"))
    assert str(manager.unroutable("mcp__off__x", ListKind.PROMPTS, 0.0)) == (
        "prompt 'mcp__off__x': server 'off' is disabled (/p/.mcp.local.json)")
    assert str(manager.unroutable("mcp__later__x", ListKind.TOOLS, 0.0)) == (
        "tool 'mcp__later__x': server 'later' is not connected")


def test_an_unroutable_name_of_connected_servers_is_unknown() -> None:
    manager = connected(core())
    assert isinstance(manager.unroutable("mcp__a__x", ListKind.TOOLS, 0.0), UnknownToolName)
    error = manager.unroutable("mcp__zz__x", ListKind.PROMPTS, 0.0)
    assert isinstance(error, UnknownPromptName) and str(error) == "no prompt is named 'mcp__zz__x'"


# ---------------------------------------------------------- -32042 retries


ELICITATION = {"mode": "url", "message": "Sign in", "url": "https://example.com/auth", "elicitationId": "e1"}


def url_error(data: object = None) -> RequestError:
    data = {"elicitations": [ELICITATION]} if data is None else data
    return RequestError(-32042, "URL elicitation required", data)


def test_a_32042_hands_its_elicitations_over_at_most_three_times() -> None:
    manager = core()
    expected = [ElicitRequestParams(mode="url", message="Sign in", url="https://example.com/auth",
                                    elicitation_id="e1")]
    decisions = [manager.elicitation_retry(url_error(), retries) for retries in range(4)]
    assert decisions == [expected, expected, expected, None]


def test_the_elicitation_retry_limit_is_configurable() -> None:
    assert core(max_elicitation_retries=0).elicitation_retry(url_error(), 0) is None


@pytest.mark.parametrize(
    "error",
    [RequestError(-32603, "internal", {"elicitations": [ELICITATION]}), url_error({"elicitations": "no"}),
     url_error({"elicitations": []}), url_error("text")],
    ids=["other-code", "malformed", "empty", "not-an-object"],
)
def test_other_errors_are_not_retried(error: RequestError) -> None:
    assert core().elicitation_retry(error, 0) is None


@pytest.mark.parametrize(
    ("answers", "accepted"),
    [([ElicitResult(action="accept"), {"action": "accept"}], True), ([], True),
     ([ElicitResult(action="decline")], False), ([{"action": "cancel"}], False), (["accept"], False)],
)
def test_a_retry_needs_every_elicitation_accepted(answers: list[object], accepted: bool) -> None:
    assert elicitations_accepted(answers) is accepted


# ------------------------------------------------------------------ failures


def test_failures_read_as_one_line_with_the_stderr_tail() -> None:
    closed = ConnectionClosed("the server process exited", returncode=1, stderr_tail="a\nfatal: boom\n")
    message = "the server process exited (exit status 1); stderr: fatal: boom"
    assert failure_from(closed) == Failure(message=message, stderr_tail="a\nfatal: boom\n")
    assert failure_from(TimeoutError(), stderr_tail="t") == Failure(message="TimeoutError", stderr_tail="t")
    assert failure_from(OSError("line one\nline two")).message == "line one line two"
    assert len(failure_from(ValueError("x" * 1000)).message) == 300


def test_closed_and_expired_connections_are_losses() -> None:
    assert is_connection_loss(ConnectionClosed("gone"))
    assert is_connection_loss(SessionExpired("expired"))
    assert not is_connection_loss(RequestError(-1, "no"))


def test_server_unavailable_names_the_server_and_state() -> None:
    error = ServerUnavailable("nope", server="a", state=ConnectionState.FAILED)
    assert (str(error), error.server, error.state) == ("nope", "a", ConnectionState.FAILED)


# ------------------------------------------------------------------- results


def test_a_small_result_comes_back_as_it_was() -> None:
    manager = connected(core())
    result = text_result("ok")
    route = ToolRoute(server="a", tool="t", timeout=1.0)
    decision = manager.shape_result(route, result)
    assert isinstance(decision, KeptResult) and not decision.truncated
    assert manager.final_result(result, decision) is result


def test_a_result_over_the_tools_own_hint_is_truncated() -> None:
    manager = connected(core())
    listed(manager, "a", tool("t", meta={"anthropic/maxResultSizeChars": 40}))
    route = ToolRoute(server="a", tool="t", timeout=1.0)
    result = text_result("x" * 100)
    final = manager.final_result(result, manager.shape_result(route, result))
    assert final.content == [TextContent(text="x" * 40),
                             TextContent(text="[... truncated 60 of 100 characters ...]")]


def test_a_persisted_result_points_at_its_file() -> None:
    policy = ResultPolicy(max_tokens=10, tools={"a": {"t": ResultRule(action=OverflowAction.PERSIST)}})
    manager = core(result_policy=policy)
    route = ToolRoute(server="a", tool="t", timeout=1.0)
    result = msgspec.structs.replace(text_result("y" * 100), is_error=True)
    decision = manager.shape_result(route, result)
    assert isinstance(decision, PersistResult) and decision.content_bytes == b"y" * 100
    with pytest.raises(LocalProtocolError, match="needs the path"):
        manager.final_result(result, decision)
    final = manager.final_result(result, decision, "/tmp/r.txt")
    [note] = final.content
    assert isinstance(note, TextContent) and "/tmp/r.txt" in note.text and final.is_error


def test_results_respect_max_mcp_output_tokens() -> None:
    manager = core(env={"MAX_MCP_OUTPUT_TOKENS": "5"})
    decision = manager.shape_result(ToolRoute(server="a", tool="t", timeout=1.0), text_result("z" * 100))
    assert isinstance(decision, KeptResult) and decision.truncated


def test_a_tool_listed_twice_by_one_server_is_kept_once_with_one_warning() -> None:
    manager = connected(core())
    first, again = tool("echo"), msgspec.structs.replace(tool("echo"), description="again")
    for _ in range(2):  # the same listing twice: the host hears of it once
        token = manager.begin_list("a", ListKind.TOOLS)
        listing = ListToolsResult(tools=[first, again, tool("x"), tool("x")])
        assert manager.store_result("a", ListKind.TOOLS, listing, token, 0.0) == [first, tool("x")]
    assert [named.tool for named in manager.named_tools()] == [first, tool("x")]
    assert manager.next_warning() == ("server 'a' listed the tool names 'echo', 'x' more than once: "
                                      "the first of each is used, the others are left out")
    assert manager.next_warning() is None


def test_a_prompt_listed_twice_by_one_server_is_kept_once() -> None:
    manager = connected(core())
    token = manager.begin_list("a", ListKind.PROMPTS)
    listing = ListPromptsResult(prompts=[prompt("p"), prompt("p")])
    assert manager.store_result("a", ListKind.PROMPTS, listing, token, 0.0) == [prompt("p")]
    assert manager.next_warning() == ("server 'a' listed the prompt name 'p' more than once: the first "
                                      "of each is used, the others are left out")
