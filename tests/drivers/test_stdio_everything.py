"""Every driver against the reference "everything" server (Node, TypeScript SDK), over stdio."""

from __future__ import annotations

import base64
import logging

import anyio
import pytest
from peer_servers import everything_stdio

from mcp_sansio import SUPPORTED_VERSIONS, NotificationReceived, RequestError
from mcp_sansio.types import (
    CreateMessageRequestParams,
    ElicitRequestParams,
    ElicitResult,
    ImageContent,
    LoggingMessageNotificationParams,
    PromptReference,
    TextContent,
)

from .driver_adapter import CONCURRENT_DRIVERS, Driver, text_of, until

pytestmark = [pytest.mark.anyio, pytest.mark.peer]

ROOT_A = {"uri": "file:///work/a", "name": "project a"}
ROOT_B = {"uri": "file:///work/b", "name": "project b"}


def log_messages(notes: list[NotificationReceived]) -> list[str]:
    """The ``data`` of every ``notifications/message`` received."""
    return [str(n.params.data) for n in notes if isinstance(n.params, LoggingMessageNotificationParams)]


async def test_handshake_reports_server_identity_and_capabilities(driver: Driver) -> None:
    async with driver.connect(*everything_stdio()) as client:
        assert client.server_info.name == "mcp-servers/everything"
        assert client.server_info.title == "Everything Reference Server"
        assert client.protocol_version in SUPPORTED_VERSIONS
        caps = client.server_capabilities
        assert caps.tools is not None and caps.prompts is not None and caps.logging is not None
        assert caps.resources is not None and caps.resources.subscribe
        assert client.instructions is not None and "Everything Server" in client.instructions
        assert client.pid is not None


async def test_tools_are_listed_and_called(driver: Driver) -> None:
    async with driver.connect(*everything_stdio()) as client:
        names = {tool.name for tool in await client.list_tools()}
        assert {"echo", "get-sum", "trigger-long-running-operation"} <= names
        assert text_of(await client.call_tool("echo", {"message": "héllo"})) == "Echo: héllo"
        assert text_of(await client.call_tool("get-sum", {"a": 2, "b": 40})) == "The sum of 2 and 40 is 42."
        await client.ping()


@pytest.mark.parametrize("driver", CONCURRENT_DRIVERS, indirect=True)
async def test_concurrent_calls_are_matched_to_their_answers(driver: Driver) -> None:
    answers: dict[int, str] = {}

    async def echo(n: int) -> None:
        answers[n] = text_of(await client.call_tool("echo", {"message": f"call {n}"}))

    async with driver.connect(*everything_stdio()) as client, anyio.create_task_group() as group:
        for n in range(32):
            group.start_soon(echo, n)
    assert answers == {n: f"Echo: call {n}" for n in range(32)}


async def test_request_larger_than_the_pipe_is_written_while_reading(driver: Driver) -> None:
    message = "0123456789abcdef" * (256 * 1024)  # 4 MiB: many times what a pipe holds
    async with driver.connect(*everything_stdio()) as client:
        assert text_of(await client.call_tool("echo", {"message": message})) == f"Echo: {message}"
        assert text_of(await client.call_tool("echo", {"message": "small"})) == "Echo: small"


async def test_long_running_tool_reports_each_progress_step(driver: Driver) -> None:
    seen: list[tuple[float, float | None, str | None]] = []
    async with driver.connect(*everything_stdio()) as client:
        result = await client.call_tool(
            "trigger-long-running-operation", {"duration": 0.3, "steps": 3},
            on_progress=lambda progress, total, message: seen.append((progress, total, message)),
        )
    assert "Steps: 3" in text_of(result)
    assert seen == [(1, 3, None), (2, 3, None), (3, 3, None)]


async def test_raising_progress_callback_is_logged_and_the_call_completes(
    driver: Driver, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(progress: float, total: float | None, message: str | None) -> None:
        raise ZeroDivisionError("a bug in the application")

    async with driver.connect(*everything_stdio()) as client:
        result = await client.call_tool("trigger-long-running-operation", {"duration": 0.2, "steps": 2},
                                        on_progress=broken)
        assert "Steps: 2" in text_of(result)
    errors = [r for r in caplog.records if r.levelno == logging.ERROR and r.exc_info]
    assert errors and all(r.exc_info and r.exc_info[0] is ZeroDivisionError for r in errors)


async def test_sampling_handler_returning_a_dict_answers_the_server(driver: Driver) -> None:
    asked: list[CreateMessageRequestParams] = []

    async def sample(params: CreateMessageRequestParams) -> dict[str, object]:
        asked.append(params)
        return {"role": "assistant", "content": {"type": "text", "text": "forty-two"}, "model": "stub-1"}

    async with driver.connect(*everything_stdio(), on_sampling=sample) as client:
        text = text_of(await client.call_tool("trigger-sampling-request", {"prompt": "meaning?"}))
    assert '"model": "stub-1"' in text and "forty-two" in text
    [params] = asked
    assert params.max_tokens == 100
    assert isinstance(params.messages[0].content, TextContent)
    assert params.messages[0].content.text.endswith("meaning?")


async def test_elicitation_handler_returning_a_struct_answers_the_server(driver: Driver) -> None:
    async def elicit(params: ElicitRequestParams) -> ElicitResult:
        assert params.requested_schema is not None and "name" in params.requested_schema["properties"]  # type: ignore[operator]  # JSON schema object
        return ElicitResult(action="accept", content={"name": "Ada", "check": True})

    async with driver.connect(*everything_stdio(), on_elicitation=elicit) as client:
        result = await client.call_tool("trigger-elicitation-request")
    text = "\n".join(block.text for block in result.content if isinstance(block, TextContent))
    assert "- Name: Ada" in text and "- Agreed to terms: true" in text


async def test_handler_raising_request_error_sends_that_error(driver: Driver) -> None:
    async def refuse(params: CreateMessageRequestParams) -> dict[str, object]:
        raise RequestError(-1, "the user said no")

    async with driver.connect(*everything_stdio(), on_sampling=refuse) as client:
        result = await client.call_tool("trigger-sampling-request", {"prompt": "hi"})
    assert result.is_error
    assert text_of(result) == "MCP error -1: the user said no"


async def test_roots_are_served_and_their_change_is_announced(driver: Driver) -> None:
    notes: list[NotificationReceived] = []

    async def record(note: NotificationReceived) -> None:
        notes.append(note)

    async with driver.connect(*everything_stdio(), roots=[ROOT_A], on_notification=record) as client:
        assert "URI: file:///work/a" in text_of(await client.call_tool("get-roots-list"))
        updates = log_messages(notes).count("Roots updated: 1 root(s) received from client")
        await client.set_roots([ROOT_B])
        await until(client, lambda: log_messages(notes).count(
            "Roots updated: 1 root(s) received from client") > updates)
        text = text_of(await client.call_tool("get-roots-list"))
    assert "URI: file:///work/b" in text and "file:///work/a" not in text


async def test_list_changed_notification_reaches_the_handler(driver: Driver) -> None:
    notes: list[NotificationReceived] = []

    async def record(note: NotificationReceived) -> None:
        notes.append(note)

    # With a sampling handler declared, the server registers more tools and says so.
    async with driver.connect(*everything_stdio(), on_sampling=_unused_sampler,
                              on_notification=record) as client:
        await until(client, lambda: any(n.method == "notifications/tools/list_changed" for n in notes))
        assert "trigger-sampling-request" in {tool.name for tool in await client.list_tools()}


async def test_log_messages_arrive_after_set_logging_level(driver: Driver) -> None:
    notes: list[NotificationReceived] = []

    async def record(note: NotificationReceived) -> None:
        notes.append(note)

    async with driver.connect(*everything_stdio(), on_notification=record) as client:
        await client.set_logging_level("debug")
        assert text_of(await client.call_tool("toggle-simulated-logging")).startswith("Started")
        await until(client, lambda: any("-level message" in m or "level-message" in m
                                        for m in log_messages(notes)))
        assert text_of(await client.call_tool("toggle-simulated-logging")).startswith("Stopped")


async def test_image_content_has_data_and_mime_type(driver: Driver) -> None:
    async with driver.connect(*everything_stdio()) as client:
        result = await client.call_tool("get-tiny-image")
    [image] = [block for block in result.content if isinstance(block, ImageContent)]
    assert image.mime_type == "image/png"
    assert base64.b64decode(image.data).startswith(b"\x89PNG")


async def test_resources_templates_reading_and_subscribing(driver: Driver) -> None:
    notes: list[NotificationReceived] = []

    async def record(note: NotificationReceived) -> None:
        notes.append(note)

    uri = "demo://resource/dynamic/text/7"
    async with driver.connect(*everything_stdio(), on_notification=record) as client:
        resources = await client.list_resources()
        assert "demo://resource/static/document/instructions.md" in {r.uri for r in resources}
        templates = {t.uri_template for t in await client.list_resource_templates()}
        assert "demo://resource/dynamic/text/{resourceId}" in templates
        [contents] = (await client.read_resource(uri)).contents
        assert contents.uri == uri and contents.mime_type == "text/plain"
        assert contents.text is not None and contents.text.startswith("Resource 7:")
        await client.subscribe_resource(uri)
        await client.unsubscribe_resource(uri)
        await until(client, lambda: any(m.startswith("Received Unsubscribe") for m in log_messages(notes)))
    subscribed = f"Received Subscribe Resource request for URI: {uri}"
    assert any(m.startswith(subscribed) for m in log_messages(notes))


async def test_prompts_are_listed_rendered_and_completed(driver: Driver) -> None:
    async with driver.connect(*everything_stdio()) as client:
        names = {prompt.name for prompt in await client.list_prompts()}
        assert {"simple-prompt", "args-prompt", "completable-prompt"} <= names
        rendered = await client.get_prompt("completable-prompt", {"department": "Sales", "name": "Eve"})
        content = rendered.messages[0].content
        assert isinstance(content, TextContent)
        assert content.text == "Please promote Eve to the head of the Sales team."
        department = await client.complete(PromptReference(name="completable-prompt"), "department", "Eng")
        assert department.completion.values == ["Engineering"]
        member = await client.complete({"type": "ref/prompt", "name": "completable-prompt"}, "name", "",
                                       context_arguments={"department": "Sales"})
        assert member.completion.values == ["David", "Eve", "Frank"]


async def _unused_sampler(params: CreateMessageRequestParams) -> dict[str, object]:
    raise AssertionError("the server was not expected to sample")
