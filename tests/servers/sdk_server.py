"""An official-SDK (``mcp`` 2.3) server with every feature the client tests exercise.

Tools: ``echo``, ``add``, ``slow``, ``progress``, ``sample`` (asks the client to
sample), ``elicit`` (asks the client to fill a form), ``big``, ``structured``,
``image`` and ``log`` (sends ``notifications/message`` at or above the level set
with ``logging/setLevel``). Also a static resource, a resource template, a prompt
with arguments and completion of its ``language`` argument.

Usage: ``python sdk_server.py [--transport stdio|streamable-http] [--port N]
[--stateless] [--json-response] [--certfile F --keyfile F] [--allow-host HOST:PORT]``;
HTTP listens on 127.0.0.1 at ``/mcp`` (HTTPS with a certificate), and accepts only
``Host`` headers naming 127.0.0.1, localhost or an ``--allow-host`` (the SDK's DNS
rebinding protection).
"""

from __future__ import annotations

import argparse
import base64
import warnings
from typing import Annotated, Literal

import anyio
import uvicorn
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import (
    AcceptedElicitation,
    CancelledElicitation,
    Context,
    DeclinedElicitation,
    Elicit,
    ElicitationResult,
    Image,
    MCPServer,
    Resolve,
    Sample,
)
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.types import (
    Completion,
    CompletionArgument,
    CompletionContext,
    CreateMessageResult,
    EmptyResult,
    LoggingLevel,
    PromptReference,
    ResourceTemplateReference,
    SamplingMessage,
    SetLevelRequestParams,
    TextContent,
)
from pydantic import BaseModel

# Logging, sampling and roots are deprecated in the SDK's newest protocol revision,
# but they are exactly what these tests exercise on the revisions the client speaks.
warnings.simplefilter("ignore", MCPDeprecationWarning)

# A 1x1 transparent PNG.
PIXEL_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
LANGUAGES = ("python", "pascal", "perl", "rust", "ruby")
# RFC 5424 severities, least severe first, as MCP's LoggingLevel orders them.
LEVELS: tuple[LoggingLevel, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)


class LogThreshold:
    """The least severe level the client asked for with ``logging/setLevel``."""

    level: LoggingLevel = "debug"


server: MCPServer = MCPServer("mcp-sansio-sdk-test-server", version="1.0.0", log_level="WARNING")


class Weather(BaseModel):
    """The result of ``structured``: becomes ``structuredContent`` and an output schema."""

    city: str
    temperature: float
    conditions: str


class Contact(BaseModel):
    """The form ``elicit`` asks the client to fill."""

    name: str
    age: int


@server.tool()
def echo(message: str) -> str:
    """Return ``message`` unchanged."""
    return message


@server.tool()
def add(a: int, b: int) -> int:
    """Return ``a + b``."""
    return a + b


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep ``seconds`` before answering, to test timeouts and cancellation."""
    await anyio.sleep(seconds)
    return f"slept {seconds}"


@server.tool()
async def progress(steps: int, ctx: Context) -> str:
    """Report ``steps`` progress notifications, then answer."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step} of {steps}")
    return f"did {steps} steps"


def _ask_llm(prompt: str) -> Sample:
    return Sample(
        [SamplingMessage(role="user", content=TextContent(type="text", text=prompt))],
        max_tokens=100,
    )


@server.tool()
def sample(prompt: str, reply: Annotated[CreateMessageResult, Resolve(_ask_llm)]) -> str:
    """Ask the client's LLM ``prompt`` (``sampling/createMessage``); return its text."""
    content = reply.content
    text = content.text if isinstance(content, TextContent) else f"<{content.type}>"
    return f"{reply.model}: {text}"


def _ask_contact() -> Elicit[Contact]:
    return Elicit("Who are you?", Contact)


@server.tool()
def elicit(answer: Annotated[ElicitationResult[Contact], Resolve(_ask_contact)]) -> str:
    """Ask the client to fill a name/age form (``elicitation/create``); report the outcome."""
    match answer:
        case AcceptedElicitation(data=contact):
            return f"hello {contact.name}, {contact.age}"
        case DeclinedElicitation():
            return "declined"
        case CancelledElicitation():
            return "cancelled"


@server.tool(structured_output=False)
def big(size: int) -> str:
    """Return a text of exactly ``size`` ASCII bytes (no structured copy)."""
    return "x" * size


@server.tool()
def structured(city: str = "Paris") -> Weather:
    """Return structured content (with an output schema) for ``city``."""
    return Weather(city=city, temperature=21.5, conditions="sunny")


@server.tool()
def image() -> Image:
    """Return a 1x1 PNG image."""
    return Image(data=PIXEL_PNG, format="png")


@server.tool()
async def log(message: str, level: LoggingLevel, ctx: Context) -> str:
    """Send ``message`` as a log notification unless ``level`` is below the set level."""
    if LEVELS.index(level) < LEVELS.index(LogThreshold.level):
        return "filtered"
    await ctx.log(level, message, logger_name="sdk_server")
    return "logged"


async def _set_level(ctx: ServerRequestContext, params: SetLevelRequestParams) -> EmptyResult:
    LogThreshold.level = params.level
    return EmptyResult()


# MCPServer has no public hook for logging/setLevel; the low-level server does.
server._lowlevel_server.add_request_handler("logging/setLevel", SetLevelRequestParams, _set_level)


@server.resource("test://static/hello", mime_type="text/plain")
def hello() -> str:
    """A static text resource."""
    return "Hello, resource!"


@server.resource("test://greeting/{name}", mime_type="text/plain")
def greeting(name: str) -> str:
    """A resource template: one greeting per name."""
    return f"Hello, {name}!"


@server.prompt()
def review(code: str, language: str = "python") -> str:
    """Ask for a review of ``code`` written in ``language``."""
    return f"Please review this {language} code:\n\n{code}"


# The SDK leaves completion() unannotated.
@server.completion()  # type: ignore[untyped-decorator, no-untyped-call]
async def complete(
    ref: PromptReference | ResourceTemplateReference,
    argument: CompletionArgument,
    context: CompletionContext | None,
) -> Completion | None:
    """Complete ``review``'s ``language`` argument from a fixed list."""
    if isinstance(ref, PromptReference) and ref.name == "review" and argument.name == "language":
        values = [lang for lang in LANGUAGES if lang.startswith(argument.value)]
        return Completion(values=values, total=len(values), has_more=False)
    return None


def main() -> None:
    """Parse the command line and serve until stdin closes or the process is stopped."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--transport", choices=["stdio", "streamable-http"], default="stdio")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--stateless", action="store_true", help="stateless Streamable HTTP")
    parser.add_argument("--json-response", action="store_true", help="JSON bodies, not SSE")
    parser.add_argument("--certfile", help="serve HTTPS with this certificate (PEM)")
    parser.add_argument("--keyfile", help="the certificate's private key (PEM)")
    parser.add_argument("--allow-host", action="append", default=[], help="another Host header to accept")
    options = parser.parse_args()
    transport: Literal["stdio", "streamable-http"] = options.transport
    if transport == "stdio":
        server.run("stdio")
        return
    # As MCPServer.run("streamable-http") does, plus TLS and more allowed hosts.
    security = TransportSecuritySettings(
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*", *options.allow_host],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )
    app = server.streamable_http_app(stateless_http=options.stateless, json_response=options.json_response,
                                     transport_security=security)
    uvicorn.run(app, host="127.0.0.1", port=options.port, log_level="warning",
                ssl_certfile=options.certfile, ssl_keyfile=options.keyfile)


if __name__ == "__main__":
    main()
