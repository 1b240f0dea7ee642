"""Every driver against servers built on the official Python SDK, over stdio."""

from __future__ import annotations

import base64

import pytest
from peer_servers import sdk_server

from mcp_sansio import RequestError
from mcp_sansio.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    ImageContent,
    TextContent,
)

from .driver_adapter import Driver, text_of

pytestmark = [pytest.mark.anyio, pytest.mark.peer]


async def test_every_page_of_every_list_is_followed(driver: Driver) -> None:
    async with driver.connect(*sdk_server("sdk_lowlevel_paginated")) as client:
        assert client.server_info.name == "mcp-sansio-paginated-test-server"
        tools = await client.list_tools()
        assert [tool.name for tool in tools] == [f"tool-{i}" for i in range(25)]
        resources = await client.list_resources()
        assert [r.uri for r in resources] == [f"test://paginated/{i}" for i in range(20)]
        assert len(await client.list_prompts()) == 7
        assert text_of(await client.call_tool("tool-24")) == "called tool-24"


async def test_tool_results_decode_text_structured_and_image(driver: Driver) -> None:
    async with driver.connect(*sdk_server("sdk_server")) as client:
        assert text_of(await client.call_tool("echo", {"message": "a\nb"})) == "a\nb"
        added = await client.call_tool("add", {"a": 2, "b": 3})
        assert text_of(added) == "5" and added.structured_content == {"result": 5}
        weather = await client.call_tool("structured", {"city": "Oslo"})
        assert weather.structured_content == {"city": "Oslo", "temperature": 21.5, "conditions": "sunny"}
        [image] = (await client.call_tool("image")).content
        assert isinstance(image, ImageContent) and image.mime_type == "image/png"
        assert base64.b64decode(image.data).startswith(b"\x89PNG")
        big = await client.call_tool("big", {"size": 3_000_000})
        assert text_of(big) == "x" * 3_000_000


async def test_struct_handlers_answer_sampling_and_elicitation(driver: Driver) -> None:
    async def sample(params: CreateMessageRequestParams) -> CreateMessageResult:
        [message] = params.messages
        assert isinstance(message.content, TextContent)
        return CreateMessageResult(role="assistant", content=TextContent(text=message.content.text[::-1]),
                                   model="model-x")

    async def elicit(params: ElicitRequestParams) -> ElicitResult:
        assert params.message == "Who are you?"
        return ElicitResult(action="accept", content={"name": "Ada", "age": 36})

    async with driver.connect(*sdk_server("sdk_server"), on_sampling=sample, on_elicitation=elicit) as client:
        assert text_of(await client.call_tool("sample", {"prompt": "olleh"})) == "model-x: hello"
        assert text_of(await client.call_tool("elicit")) == "hello Ada, 36"


async def test_request_error_from_a_handler_fails_the_servers_call(driver: Driver) -> None:
    async def refuse(params: ElicitRequestParams) -> ElicitResult:
        raise RequestError(-32001, "nobody is at the keyboard", {"retry": False})

    async with driver.connect(*sdk_server("sdk_server"), on_elicitation=refuse) as client:
        # The SDK passes the client's error on as the error of the tool call.
        with pytest.raises(RequestError) as caught:
            await client.call_tool("elicit")
        assert (caught.value.code, caught.value.message) == (-32001, "nobody is at the keyboard")
        assert text_of(await client.call_tool("echo", {"message": "still here"})) == "still here"
