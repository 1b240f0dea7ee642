"""MCPServer: registration is pure data; schemas come from annotations, capabilities from registrations."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, TypedDict

import msgspec
import pytest

from mcp_sansio import LocalProtocolError
from mcp_sansio.server import TASKS_EXTENSION, Context, MCPServer
from mcp_sansio.server.registry import UriTemplate
from mcp_sansio.types import CallToolResult, Icon, PromptArgument, TextContent, ToolAnnotations
from mcp_sansio.versions import VERSIONS


class Point(msgspec.Struct):
    x: int
    y: int = 0


class Tree(msgspec.Struct):
    children: list[Tree] = []


@dataclasses.dataclass
class Weather:
    city: str
    celsius: float


class Forecast(TypedDict):
    days: int


def test_a_decorated_function_stays_callable_and_becomes_a_tool() -> None:
    app = MCPServer("s")

    @app.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers.

        More text that is not the description.
        """
        return a + b

    assert add(1, 2) == 3
    tool = app.registry.tools["add"].tool
    assert tool.description == "Add two numbers."
    assert tool.input_schema == {
        "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    }


def test_parameter_descriptions_and_defaults_reach_the_schema() -> None:
    app = MCPServer("s")

    def search(query: Annotated[str, msgspec.Meta(description="what to find")], limit: int = 10) -> str:
        return query

    entry = app.add_tool(search, name="find", title="Find", description="Searches.")
    assert entry.tool.name == "find" and entry.tool.title == "Find" and entry.tool.description == "Searches."
    assert entry.tool.input_schema["properties"] == {
        "query": {"type": "string", "description": "what to find"},
        "limit": {"type": "integer", "default": 10},
    }
    assert entry.tool.input_schema["required"] == ["query"]


def test_nested_types_go_under_defs() -> None:
    app = MCPServer("s")

    @app.tool()
    def move(to: Point) -> str:
        return "ok"

    schema = app.registry.tools["move"].tool.input_schema
    assert schema["properties"] == {"to": {"$ref": "#/$defs/Point"}}
    assert schema["$defs"]["Point"]["required"] == ["x"]  # type: ignore[index]


def test_a_context_parameter_is_no_argument() -> None:
    app = MCPServer("s")

    @app.tool()
    async def tell(text: str, ctx: Context) -> str:
        return text

    entry = app.registry.tools["tell"]
    assert entry.signature.context_param == "ctx"
    assert entry.signature.is_async
    assert entry.signature.names == ("text",)
    assert entry.tool.input_schema["properties"] == {"text": {"type": "string"}}


def test_a_tool_without_parameters_takes_an_empty_object() -> None:
    app = MCPServer("s")
    entry = app.add_tool(lambda: "x", name="noop")
    assert entry.tool.input_schema == {"type": "object", "properties": {}}
    assert entry.signature.decode(None) == {}


@pytest.mark.parametrize(("annotation", "schema"), [
    (Point, {"type": "object", "required": ["x"],
             "properties": {"x": {"type": "integer"}, "y": {"type": "integer", "default": 0}}}),
    (Weather, {"type": "object", "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
               "required": ["city", "celsius"]}),
    (Forecast, {"type": "object", "properties": {"days": {"type": "integer"}}, "required": ["days"]}),
    (dict[str, int], {"type": "object", "additionalProperties": {"type": "integer"}}),
])
def test_a_structured_return_annotation_is_the_output_schema(
    annotation: Any, schema: dict[str, object]
) -> None:
    app = MCPServer("s")

    def f() -> None:
        return None

    f.__annotations__["return"] = annotation
    entry = app.add_tool(f, name="f")
    assert entry.structured
    assert entry.tool.output_schema == schema


def test_a_recursive_return_type_keeps_its_definition() -> None:
    app = MCPServer("s")

    def grow() -> Tree:
        return Tree()

    schema = app.add_tool(grow).tool.output_schema
    assert schema is not None
    children = {"type": "array", "items": {"$ref": "#/$defs/Tree"}, "default": []}
    assert schema["properties"] == {"children": children}
    assert "Tree" in schema["$defs"]  # type: ignore[operator]


@pytest.mark.parametrize("annotation", [str, None, list[TextContent], list[Any], list,
                                        list[TextContent | str]])
def test_text_and_content_have_no_output_schema(annotation: Any) -> None:
    app = MCPServer("s")

    def f() -> None:
        return None

    f.__annotations__["return"] = annotation
    entry = app.add_tool(f, name="f")
    assert not entry.structured and entry.tool.output_schema is None


def test_a_wire_result_annotation_is_not_structured() -> None:
    app = MCPServer("s")

    def f() -> CallToolResult:
        return CallToolResult()

    assert not app.add_tool(f).structured


def test_structured_can_be_forced_off_or_given_a_schema() -> None:
    app = MCPServer("s")

    def where() -> Point:
        return Point(x=1)

    assert app.add_tool(where, name="off", structured=False).tool.output_schema is None
    given = app.add_tool(where, name="given", output_schema={"type": "object"})
    assert given.structured and given.tool.output_schema == {"type": "object"}


def test_an_explicit_input_schema_is_advertised_and_kwargs_get_the_rest() -> None:
    app = MCPServer("s")

    def raw(name: str = "", **rest: object) -> str:
        return name

    entry = app.add_tool(raw, input_schema={"type": "object", "$defs": {}, "additionalProperties": False})
    assert entry.tool.input_schema == {"type": "object", "$defs": {}, "additionalProperties": False}
    assert entry.signature.decode(b'{"name": "a", "extra": 1}') == {"name": "a", "extra": 1}
    with pytest.raises(msgspec.ValidationError):
        entry.signature.decode(b"[]")
    with pytest.raises(msgspec.ValidationError):
        entry.signature.decode(b'{"name": 5}')


def test_tool_metadata_is_listed() -> None:
    app = MCPServer("s")
    icon = Icon(src="https://example.com/i.png")
    entry = app.add_tool(lambda: "", name="t", annotations=ToolAnnotations(read_only_hint=True), icons=[icon],
                         meta={"k": "v"}, task_support="optional")
    assert entry.tool.annotations == ToolAnnotations(read_only_hint=True)
    assert entry.tool.icons == [icon] and entry.tool.meta == {"k": "v"}
    assert entry.tool.execution is not None and entry.tool.execution.task_support == "optional"
    assert app.extensions == {TASKS_EXTENSION: {}}


@pytest.mark.parametrize("source", [
    "def f(a, /): pass",
    "def f(*args): pass",
])
def test_unnameable_parameters_are_refused(source: str) -> None:
    namespace: dict[str, Any] = {}
    exec(source, namespace)
    with pytest.raises(LocalProtocolError, match="nameable"):
        MCPServer("s").add_tool(namespace["f"])


def test_unresolvable_annotations_are_refused() -> None:
    def f(a: Undefined) -> None:  # type: ignore[name-defined]  # noqa: F821
        pass

    with pytest.raises(LocalProtocolError, match="cannot read the signature"):
        MCPServer("s").add_tool(f)


def test_a_mutable_default_msgspec_cannot_copy_is_refused() -> None:
    def f(a: list[int] = [1]) -> None:  # noqa: B006
        pass

    with pytest.raises(LocalProtocolError, match="cannot validate"):
        MCPServer("s").add_tool(f)


def test_types_without_a_json_schema_are_refused_naming_tool_parameter_and_type() -> None:
    def f(a: int, b: complex) -> None:
        pass

    with pytest.raises(LocalProtocolError) as refused:
        MCPServer("s").add_tool(f, name="adder")
    message = str(refused.value)
    assert message.startswith("tool 'adder': parameter 'b' has type complex")
    assert "_arguments" not in message  # no internal class


class Opaque:
    """A class msgspec knows nothing of."""


def test_an_unsupported_prompt_parameter_names_the_prompt() -> None:
    def greet(who: Opaque) -> str:
        return ""

    with pytest.raises(LocalProtocolError, match=r"^prompt 'greet': parameter 'who' has type .*Opaque"):
        MCPServer("s").add_prompt(greet)


@pytest.mark.parametrize(("annotation", "schema"), [
    (int, {"type": "integer"}),
    (float, {"type": "number"}),
    (bool, {"type": "boolean"}),
    (list[str], {"type": "array", "items": {"type": "string"}}),
    (tuple[int, ...], {"type": "array", "items": {"type": "integer"}}),
])
def test_numbers_booleans_and_arrays_are_structured_and_wrapped_before_2026(
        annotation: Any, schema: dict[str, object]) -> None:
    app = MCPServer("s")

    def f() -> None:
        return None

    f.__annotations__["return"] = annotation
    entry = app.add_tool(f, name="f")
    assert entry.structured
    assert entry.listed(VERSIONS["2026-07-28"]).output_schema == schema
    for version in ("2025-11-25", "2025-06-18"):
        assert entry.listed(VERSIONS[version]).output_schema == {
            "type": "object", "properties": {"result": schema}, "required": ["result"],
            "x-fastmcp-wrap-result": True,
        }


def test_an_object_output_schema_is_never_wrapped() -> None:
    app = MCPServer("s")

    def where() -> Point:
        return Point(x=1)

    entry = app.add_tool(where)
    assert entry.wrapped is None
    assert entry.listed(VERSIONS["2025-06-18"]) is entry.listed(VERSIONS["2026-07-28"]) is entry.tool


def test_a_wrapped_schema_keeps_its_definitions_at_the_root() -> None:
    app = MCPServer("s")

    def points() -> list[Point]:
        return []

    wrapped = app.add_tool(points).listed(VERSIONS["2025-11-25"]).output_schema
    assert wrapped is not None
    assert wrapped["properties"] == {"result": {"type": "array", "items": {"$ref": "#/$defs/Point"}}}
    assert "Point" in wrapped["$defs"]  # type: ignore[operator]


def test_the_bare_decorators_register_and_return_the_function() -> None:
    app = MCPServer("s")

    @app.tool
    def add(a: int, b: int) -> int:
        return a + b

    @app.prompt
    def greet(name: str) -> str:
        return f"Hello, {name}!"

    assert add(2, 3) == 5 and greet("Ada") == "Hello, Ada!"
    assert list(app.registry.tools) == ["add"] and list(app.registry.prompts) == ["greet"]


def test_a_bare_resource_decorator_is_refused_at_decoration_time() -> None:
    app = MCPServer("s")
    with pytest.raises(LocalProtocolError, match=r"@app.resource needs the resource's URI.*'readme'"):
        @app.resource  # type: ignore[arg-type]  # the mistake under test
        def readme() -> str:
            return ""
    assert not app.registry.resources and not app.registry.templates


def test_an_unschemable_return_type_is_refused() -> None:
    def f() -> dict[str, complex]:
        return {}

    with pytest.raises(LocalProtocolError, match="JSON Schema"):
        MCPServer("s").add_tool(f)


def test_an_invalid_x_mcp_header_is_refused_at_registration() -> None:
    schema = {"type": "object", "properties": {"x": {"type": "number", "x-mcp-header": "X"}}}
    with pytest.raises(LocalProtocolError, match="tool 'f'"):
        MCPServer("s").add_tool(lambda: "", name="f", input_schema=schema)


def test_a_callable_instance_with_an_async_call_is_async() -> None:
    class Handler:
        async def __call__(self) -> str:
            return "x"

    assert MCPServer("s").add_tool(Handler(), name="h").signature.is_async


def test_removing_a_tool_bumps_the_revision() -> None:
    app = MCPServer("s")
    app.add_tool(lambda: "", name="t")
    before = app.registry.revision["tools"]
    assert app.remove_tool("t")
    assert not app.remove_tool("t")
    assert app.registry.revision["tools"] == before + 1


def test_a_resource_with_a_fixed_uri_and_one_with_variables() -> None:
    app = MCPServer("s")

    @app.resource("file:///readme", mime_type="text/plain", description="The readme.")
    def readme() -> str:
        return "hello"

    @app.resource("file:///users/{name}/profile")
    def profile(name: str) -> str:
        """A user's profile."""
        return name

    fixed = app.registry.resources["file:///readme"]
    assert fixed.resource.name == "readme" and fixed.resource.mime_type == "text/plain"
    template = app.registry.templates["file:///users/{name}/profile"]
    assert template.template.name == "profile" and template.template.description == "A user's profile."
    assert template.matcher.match("file:///users/ann/profile") == {"name": "ann"}


def test_static_resources_know_their_size() -> None:
    app = MCPServer("s")
    text = app.add_resource("a://t", text="héllo")
    blob = app.add_resource("a://b", blob=b"\x00\x01")
    assert text.resource.size == 6 and text.resource.name == "a://t"
    assert blob.resource.size == 2 and blob.blob == "AAE="


@pytest.mark.parametrize("kwargs", [{}, {"text": "a", "blob": b"b"}])
def test_a_resource_needs_exactly_one_source(kwargs: dict[str, Any]) -> None:
    with pytest.raises(LocalProtocolError, match="exactly one"):
        MCPServer("s").add_resource("a://x", **kwargs)


def test_a_fixed_resource_handler_cannot_require_arguments() -> None:
    with pytest.raises(LocalProtocolError, match="no URI variables"):
        MCPServer("s").add_resource("a://x", lambda name: name)


def test_a_template_handler_must_take_only_its_variables() -> None:
    with pytest.raises(LocalProtocolError, match="no variables"):
        MCPServer("s").add_resource_template("a://{x}", lambda y: y)


def test_removing_a_resource_or_a_template() -> None:
    app = MCPServer("s")
    app.add_resource("a://x", text="x")
    app.add_resource_template("a://{y}", lambda y: y)
    assert app.remove_resource("a://x") and app.remove_resource("a://{y}")
    assert not app.remove_resource("a://x")


@pytest.mark.parametrize(("template", "uri", "expected"), [
    ("test://template/{id}/data", "test://template/123/data", {"id": "123"}),
    ("test://template/{id}/data", "test://template/1/2/data", None),
    ("file:///{+path}", "file:///a/b/c.txt", {"path": "a/b/c.txt"}),
    ("page{#frag}", "page#top", {"frag": "top"}),
    ("x://{a}-{b}", "x://1-2", {"a": "1", "b": "2"}),
    ("x://{a.b}", "x://v", {"a.b": "v"}),
])
def test_uri_templates_match_level_one_and_two_expressions(
    template: str, uri: str, expected: dict[str, str] | None
) -> None:
    assert UriTemplate(template).match(uri) == expected


def test_a_template_naming_a_variable_twice_is_refused() -> None:
    with pytest.raises(LocalProtocolError, match="twice"):
        UriTemplate("x://{a}/{a}")


def test_prompt_arguments_come_from_the_parameters() -> None:
    app = MCPServer("s")

    @app.prompt(title="Review")
    def review(code: Annotated[str, msgspec.Meta(description="the code")], style: str = "terse") -> str:
        """Review some code."""
        return code

    prompt = app.registry.prompts["review"].prompt
    assert prompt.title == "Review" and prompt.description == "Review some code."
    assert prompt.arguments == [PromptArgument(name="code", description="the code", required=True),
                                PromptArgument(name="style", required=False)]
    assert app.remove_prompt("review") and not app.remove_prompt("review")


def test_a_prompt_without_parameters_lists_no_arguments() -> None:
    app = MCPServer("s")
    assert app.add_prompt(lambda: "hi", name="hello").prompt.arguments is None


def test_completions_name_a_prompt_or_a_template() -> None:
    app = MCPServer("s")

    @app.completion(prompt="review", argument="style")
    def styles(value: str) -> list[str]:
        return ["terse"]

    static = app.add_completion(template="a://{x}", argument="x", values=["1", "2"])
    assert static.ref_type == "ref/resource" and static.values == ("1", "2")
    assert app.registry.completions["ref/prompt", "review", "style"].signature is not None


@pytest.mark.parametrize("kwargs", [
    {"argument": "a", "values": ["x"]},
    {"argument": "a", "prompt": "p", "template": "t", "values": ["x"]},
    {"argument": "a", "prompt": "p"},
])
def test_a_completion_needs_one_ref_and_one_source(kwargs: dict[str, Any]) -> None:
    with pytest.raises(LocalProtocolError, match="one prompt or template"):
        MCPServer("s").add_completion(**kwargs)


def test_capabilities_follow_what_is_registered() -> None:
    app = MCPServer("s", instructions="use it")
    legacy, modern = VERSIONS["2025-11-25"], VERSIONS["2026-07-28"]
    empty = app.capabilities(legacy)
    assert (empty.tools, empty.prompts, empty.resources, empty.completions) == (None, None, None, None)
    assert empty.logging == {}
    app.add_tool(lambda: "", name="t", task_support="required")
    app.add_prompt(lambda: "", name="p")
    app.add_resource_template("a://{x}", lambda x: x)
    app.add_completion(prompt="p", argument="a", values=[])
    caps = app.capabilities(legacy)
    assert caps.tools is not None and caps.prompts is not None and caps.completions == {}
    assert caps.resources is not None and caps.resources.subscribe is True
    assert caps.extensions is None  # extensions are a 2026-07-28 declaration
    caps = app.capabilities(modern)
    assert caps.resources is not None and caps.resources.subscribe is True
    assert caps.extensions == {TASKS_EXTENSION: {}}


def test_identity_fields_reach_server_info() -> None:
    icon = Icon(src="https://example.com/i.png")
    app = MCPServer("s", version="2.0", title="S", description="d", website_url="https://x", icons=[icon])
    assert (app.info.name, app.info.version, app.info.title, app.info.description) == ("s", "2.0", "S", "d")
    assert app.info.website_url == "https://x" and app.info.icons == [icon]


def test_an_empty_docstring_gives_no_description() -> None:
    def f() -> str:
        """"""
        return ""

    assert MCPServer("s").add_tool(f).tool.description is None
