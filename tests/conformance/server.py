"""The conformance suite's fixture server, written with ``MCPServer``.

It offers every name the server scenarios of suite 0.1.16 and 0.2 call (see
``/work/shared/conformance/SCENARIOS.md`` and the suite's descriptions): content tools,
logging and progress, asking the client (the same handlers serve the handshake era's
server requests and 2026-07-28's input_required rounds), resources and a template,
prompts, completion, SSE polling, the tasks extension's jobs, a skill, and a tool whose
argument is mirrored into an ``Mcp-Param-*`` header. Run it with
``mcp-sansio serve tests/conformance/server.py --http PORT`` (URL ``http://127.0.0.1:PORT/mcp``).
"""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any

import msgspec

from mcp_sansio import Ask, Context, MCPServer, RequestError
from mcp_sansio.server import ClientCapabilityMissing
from mcp_sansio.types import (
    AudioContent,
    CreateMessageResult,
    ElicitResult,
    EmbeddedResource,
    ImageContent,
    ListRootsResult,
    PromptMessage,
    ResourceContents,
    TextContent,
)

IMAGE = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
AUDIO = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}

app = MCPServer("mcp-conformance-test-server", version="1.0.0",
                instructions="The conformance suite's fixture server.")


# ---------------------------------------------------------------------- content tools


@app.tool()
def test_simple_text() -> str:
    """Tests simple text content response."""
    return "This is a simple text response for testing."


@app.tool()
def test_image_content() -> ImageContent:
    """Tests image content response."""
    return ImageContent(data=IMAGE, mime_type="image/png")


@app.tool()
def test_audio_content() -> AudioContent:
    """Tests audio content response."""
    return AudioContent(data=AUDIO, mime_type="audio/wav")


@app.tool()
def test_embedded_resource() -> EmbeddedResource:
    """Tests embedded resource content response."""
    return EmbeddedResource(resource=ResourceContents(
        uri="test://embedded-resource", mime_type="text/plain", text="This is an embedded resource content."))


@app.tool()
def test_multiple_content_types() -> list[object]:
    """Tests response with multiple content types (text, image, resource)."""
    return [
        TextContent(text="Multiple content types test:"),
        ImageContent(data=IMAGE, mime_type="image/png"),
        EmbeddedResource(resource=ResourceContents(
            uri="test://mixed-content-resource", mime_type="application/json",
            text=json.dumps({"test": "data", "value": 123}))),
    ]


@app.tool()
async def test_tool_with_logging(ctx: Context) -> str:
    """Tests tool that emits log messages during execution."""
    ctx.info("Tool execution started")
    await asyncio.sleep(0.05)
    ctx.info("Tool processing data")
    await asyncio.sleep(0.05)
    ctx.info("Tool execution completed")
    return "Tool with logging executed successfully"


@app.tool()
def test_error_handling() -> str:
    """Tests error response handling."""
    raise RuntimeError("This tool intentionally returns an error for testing")


@app.tool()
async def test_tool_with_progress(ctx: Context) -> str:
    """Tests tool that reports progress notifications."""
    for step in (0, 50, 100):
        if step:
            await asyncio.sleep(0.05)
        ctx.report_progress(step, 100, f"Completed step {step} of 100")
    return str(ctx.request.progress_token)


@app.tool()
async def test_reconnection(ctx: Context) -> str:
    """Tests SSE stream disconnection and client reconnection (SEP-1699)."""
    ctx.close_sse_stream()
    await asyncio.sleep(0.1)
    return ("Reconnection test completed successfully. If you received this, the client properly "
            "reconnected after stream closure.")


# ---------------------------------------------------------------------- asking the client


@app.tool()
async def test_sampling(prompt: Annotated[str, msgspec.Meta(description="The prompt to send to the LLM")],
                        ctx: Context) -> str:
    """Tests server-initiated sampling (LLM completion request)."""
    result = await ctx.sample(prompt, max_tokens=100)
    text = result.content.text if isinstance(result.content, TextContent) else "No response"
    return f"LLM response: {text}"


@app.tool()
async def test_elicitation(message: Annotated[str, msgspec.Meta(description="The message to show the user")],
                           ctx: Context) -> str:
    """Tests server-initiated elicitation (user input request)."""
    result = await ctx.elicit(message, {
        "type": "object",
        "properties": {"username": {"type": "string", "description": "User's response"},
                       "email": {"type": "string", "description": "User's email address"}},
        "required": ["username", "email"],
    })
    return f"User response: action={result.action}, content={json.dumps(result.content or {})}"


@app.tool()
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Tests elicitation with default values per SEP-1034."""
    result = await ctx.elicit("Please review and update the form fields with defaults", {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {"type": "string", "description": "User status",
                       "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "description": "Verification status", "default": True},
        },
        "required": [],
    })
    return f"Elicitation completed: action={result.action}, content={json.dumps(result.content or {})}"


@app.tool()
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Tests elicitation with enum schema improvements per SEP-1330."""
    titled = [{"const": f"value{i}", "title": f"{word} Option"} for i, word in ((1, "First"), (2, "Second"),
                                                                             (3, "Third"))]
    choices = [{"const": f"value{i}", "title": f"{word} Choice"} for i, word in ((1, "First"), (2, "Second"),
                                                                              (3, "Third"))]
    result = await ctx.elicit("Please select options from the enum fields", {
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "description": "Select one option",
                               "enum": ["option1", "option2", "option3"]},
            "titledSingle": {"type": "string", "description": "Select one option with titles",
                             "oneOf": titled},
            "legacyEnum": {"type": "string", "description": "Select one option (legacy)",
                           "enum": ["opt1", "opt2", "opt3"],
                           "enumNames": ["Option One", "Option Two", "Option Three"]},
            "untitledMulti": {"type": "array", "description": "Select multiple options", "minItems": 1,
                              "maxItems": 3,
                              "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
            "titledMulti": {"type": "array", "description": "Select multiple options with titles",
                            "minItems": 1, "maxItems": 3, "items": {"anyOf": choices}},
        },
        "required": [],
    })
    return f"Elicitation completed: action={result.action}, content={json.dumps(result.content or {})}"


def _text_of(answer: ElicitResult, field: str) -> str:
    value = (answer.content or {}).get(field)
    return value if isinstance(value, str) else "unknown"


@app.tool()
async def test_input_required_result_elicitation(ctx: Context) -> str:
    """MRTR: asks for the user's name."""
    answer = await ctx.elicit("What is your name?", NAME_FORM, key="user_name")
    return f"Hello, {_text_of(answer, 'name')}!"


@app.tool()
async def test_input_required_result_sampling(ctx: Context) -> str:
    """MRTR: asks the client's model."""
    answer = await ctx.sample("What is the capital of France?", max_tokens=100, key="sample_request")
    text = answer.content.text if isinstance(answer.content, TextContent) else "no response"
    return f"Sampling result: {text}"


@app.tool()
async def test_input_required_result_list_roots(ctx: Context) -> str:
    """MRTR: asks for the client's roots."""
    answer = await ctx.list_roots(key="roots_request")
    return f"Found {len(answer.roots)} root(s)"


@app.tool()
async def test_input_required_result_request_state(ctx: Context) -> str:
    """MRTR: keeps a value in the sealed requestState across the round."""
    first_round = "kind" not in ctx.state
    ctx.state["kind"] = "request-state"
    answer = await ctx.elicit("Please confirm", {"type": "object", "properties": {"ok": {"type": "boolean"}},
                                                 "required": ["ok"]}, key="confirm")
    ok = (answer.content or {}).get("ok") is True
    return "state-ok: requestState validated" if ok and not first_round else "state-missing"


@app.tool()
async def test_input_required_result_multiple_inputs(ctx: Context) -> str:
    """MRTR: three questions in one round."""
    name, greeting, roots = await ctx.ask(
        Ask.elicit("What is your name?", NAME_FORM, key="user_name"),
        Ask.sample("Generate a greeting", max_tokens=50, key="greeting"),
        Ask.list_roots(key="client_roots"),
    )
    assert isinstance(name, ElicitResult) and isinstance(greeting, CreateMessageResult)
    assert isinstance(roots, ListRootsResult)
    text = greeting.content.text if isinstance(greeting.content, TextContent) else "Hello there!"
    return f"Name: {_text_of(name, 'name')}; Greeting: {text}; Roots: {len(roots.roots)}"


@app.tool()
async def test_input_required_result_multi_round(ctx: Context) -> str:
    """MRTR: two rounds, the first answer carried in the sealed state."""
    name = await ctx.elicit("Step 1: What is your name?", NAME_FORM, key="step1")
    color = await ctx.elicit("Step 2: What is your favorite color?", {
        "type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]}, key="step2")
    return f"Multi-round complete for {_text_of(name, 'name')} who likes {_text_of(color, 'color')}"


@app.tool()
async def test_input_required_result_tampered_state(ctx: Context) -> str:
    """MRTR: the requestState is HMAC-sealed; a tampered one is refused before this runs."""
    ctx.state["kind"] = "tamper-test"
    await ctx.elicit("Please confirm", {"type": "object", "properties": {"ok": {"type": "boolean"}},
                                        "required": ["ok"]}, key="confirm")
    return "integrity-ok: state verified"


@app.tool()
async def test_input_required_result_capabilities(ctx: Context) -> str:
    """MRTR: asks only for what the client declared."""
    caps = ctx.client_capabilities
    asks: list[Ask] = []
    if caps.elicitation is not None:
        form = {"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]}
        asks.append(Ask.elicit("Elicitation input", form, key="elicit_input"))
    if caps.sampling is not None:
        asks.append(Ask.sample("Sample request", max_tokens=50, key="sample_input"))
    if not asks:
        return "No supported capabilities declared"
    await ctx.ask(*asks)
    return f"capabilities-ok: received {','.join(ask.key or '' for ask in asks)}"


@app.tool()
def test_missing_capability(ctx: Context) -> str:
    """Test tool requiring sampling."""
    if ctx.client_capabilities.sampling is None:
        raise ClientCapabilityMissing("this tool needs the sampling capability", required={"sampling": {}})
    return "Success"


@app.tool()
def test_streaming_elicitation(ctx: Context) -> str:
    """Diagnostic tool validating response progress streams."""
    ctx.report_progress(50, 100)
    return "Streaming complete"


@app.tool()
def test_logging_tool(ctx: Context) -> str:
    """Diagnostic logging validator tool."""
    ctx.info("Diagnostic trace logging activated")
    return "Logging evaluated"


@app.tool()
def test_trigger_tool_change(ctx: Context) -> str:
    """Tells listening clients the tool list changed."""
    ctx.notify_list_changed("tools")
    return "Mutation triggered"


@app.tool()
def test_trigger_prompt_change(ctx: Context) -> str:
    """Tells listening clients the prompt list changed."""
    ctx.notify_list_changed("prompts")
    return "Mutation triggered"


@app.tool(input_schema={
    "type": "object",
    "properties": {"region": {"type": "string", "description": "Where to run", "x-mcp-header": "Region"},
                   "query": {"type": "string"}},
    "required": ["region"],
})
def test_header_param(region: str, query: str = "") -> str:
    """A tool whose region argument is mirrored into the Mcp-Param-Region header."""
    return f"region={region} query={query}"


app.add_tool(lambda **arguments: f"JSON Schema 2020-12 tool called with: {json.dumps(arguments)}",
             name="json_schema_2020_12_tool",
             description="Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
             input_schema={
                 "$schema": "https://json-schema.org/draft/2020-12/schema",
                 "type": "object",
                 "$defs": {"address": {
                     "$anchor": "addressDef", "type": "object",
                     "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
                 "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"},
                                "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                                "phone": {"type": "string"}, "email": {"type": "string"}},
                 "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
                 "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
                 "then": {"required": ["phone"]},
                 "else": {"required": ["email"]},
                 "additionalProperties": False,
             })


# ---------------------------------------------------------------------- the tasks extension


@app.tool()
def greet(name: str) -> str:
    """Sync-only: says hello."""
    return f"Hello, {name}!"


@app.tool(task_support="optional")
async def slow_compute(ctx: Context, seconds: float = 0, label: str = "") -> str:
    """Task-supporting: sleeps, then answers (a task unless it is immediate)."""
    if seconds > 0:
        ctx.start_task(f"computing {label}".strip())
        await asyncio.sleep(seconds)
    return f"computed {label} after {seconds}s"


@app.tool(task_support="required")
async def failing_job(ctx: Context) -> str:
    """Task-supporting: fails with a tool error after about a second."""
    ctx.start_task()
    await asyncio.sleep(1.0)
    raise RuntimeError("the job failed")


@app.tool(task_support="optional")
async def protocol_error_job(ctx: Context) -> str:
    """Task-supporting: fails with a protocol error."""
    ctx.start_task()
    await asyncio.sleep(0.1)
    raise RequestError(-32603, "the job crashed")


@app.tool(task_support="optional")
async def confirm_delete(ctx: Context, filename: str = "file.txt") -> str:
    """Task-supporting: asks for confirmation as a task."""
    ctx.start_task()
    answer = await ctx.elicit(f"Delete {filename}?", {"type": "object", "properties": {
        "confirm": {"type": "boolean"}}, "required": ["confirm"]}, key="confirm")
    confirmed = answer.action == "accept" and (answer.content or {}).get("confirm") is True
    return f"{filename}: {'deleted' if confirmed else 'kept'}"


@app.tool(task_support="optional")
async def multi_input(ctx: Context) -> str:
    """Task-supporting: two questions pending at once."""
    ctx.start_task()
    first, second = await ctx.ask(Ask.elicit("First?", NAME_FORM, key="first"),
                                  Ask.elicit("Second?", NAME_FORM, key="second"))
    assert isinstance(first, ElicitResult) and isinstance(second, ElicitResult)
    return f"got {first.action} and {second.action}"


@app.tool(task_support="required")
async def test_tool_with_task(ctx: Context) -> str:
    """MRTR then a task: asks for the user's name, then works in the background."""
    answer = await ctx.elicit("What is your name?", NAME_FORM, key="user_name")
    ctx.start_task()
    await asyncio.sleep(0.5)
    return f"Task finished for {_text_of(answer, 'name')}"


# ---------------------------------------------------------------------- resources


app.add_resource("test://static-text", text="This is the content of the static text resource.",
                 name="static-text", title="Static Text Resource",
                 description="A static text resource for testing", mime_type="text/plain")
app.add_resource("test://static-binary", blob=__import__("base64").b64decode(IMAGE), name="static-binary",
                 title="Static Binary Resource", description="A static binary resource (image) for testing",
                 mime_type="image/png")
app.add_resource("test://watched-resource", text="Watched resource content", name="watched-resource",
                 title="Watched Resource", description="A resource whose updates can be subscribed to",
                 mime_type="text/plain")


@app.resource("test://template/{id}/data", name="template", title="Resource Template",
              description="A resource template with parameter substitution", mime_type="application/json")
def template(id: str) -> str:
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"}, separators=(",", ":"))


# ---------------------------------------------------------------------- prompts and completion


@app.prompt(title="Simple Test Prompt", description="A simple prompt without arguments")
def test_simple_prompt() -> str:
    return "This is a simple prompt for testing."


@app.prompt(title="Prompt With Arguments", description="A prompt with required arguments")
def test_prompt_with_arguments(arg1: Annotated[str, msgspec.Meta(description="First test argument")],
                               arg2: Annotated[str, msgspec.Meta(description="Second test argument")]) -> str:
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@app.prompt(title="Prompt With Embedded Resource", description="A prompt that includes an embedded resource")
def test_prompt_with_embedded_resource(
    resourceUri: Annotated[str, msgspec.Meta(description="URI of the resource to embed")],
) -> list[Any]:
    return [
        EmbeddedResource(resource=ResourceContents(uri=resourceUri, mime_type="text/plain",
                                                   text="Embedded resource content for testing.")),
        "Please process the embedded resource above.",
    ]


@app.prompt(title="Prompt With Image", description="A prompt that includes image content")
def test_prompt_with_image() -> list[Any]:
    return [ImageContent(data=IMAGE, mime_type="image/png"), "Please analyze the image above."]


@app.prompt(description="MRTR: prompt that requires elicitation input")
async def test_input_required_result_prompt(ctx: Context) -> PromptMessage:
    form = {"type": "object", "properties": {"context": {"type": "string"}}, "required": ["context"]}
    answer = await ctx.elicit("What context should the prompt use?", form, key="user_context")
    text = f"Prompt with context: {_text_of(answer, 'context')}"
    return PromptMessage(role="user", content=TextContent(text=text))


app.add_completion(prompt="test_prompt_with_arguments", argument="arg1", values=["paris", "park", "party"])
app.add_completion(template="test://template/{id}/data", argument="id", values=["1", "2", "123"])


# ---------------------------------------------------------------------- a skill (SEP-2640)


app.add_skill({
    "SKILL.md": "---\nname: conformance-notes\ndescription: How the conformance fixture is organised.\n---\n"
                "# Conformance notes\n\nRead references/TOOLS.md for the tool list.\n",
    "references/TOOLS.md": "# Tools\n\nEvery tool a scenario calls is registered in server.py.\n",
})
