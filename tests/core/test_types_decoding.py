"""Decoding behaviour of the wire types that the schemas alone do not pin down.

Leniency (unknown fields, missing required lists), exact preservation of JSON Schema
objects, the encoding of empty or null required fields, and the shapes of unions.
"""

import msgspec
import pytest

from mcp_sansio import types
from mcp_sansio.types import (
    Annotations,
    CallToolResult,
    ContentBlock,
    CreateMessageResult,
    ElicitRequestParams,
    EmbeddedResource,
    ImageContent,
    ListToolsResult,
    LoggingMessageNotificationParams,
    ResourceContents,
    ResourceLink,
    SamplingMessage,
    Task,
    TextContent,
    ToolResultContent,
    ToolUseContent,
)


def test_unknown_fields_are_ignored_at_every_level() -> None:
    raw = (
        b'{"content":[{"type":"text","text":"hi","future":1,"annotations":{"priority":0.5,'
        b'"x":[]}}],"isError":true,"nextVersionField":{"a":null}}'
    )
    assert msgspec.json.decode(raw, type=CallToolResult) == CallToolResult(
        content=[TextContent(text="hi", annotations=Annotations(priority=0.5))],
        is_error=True,
    )


# Keywords a conformance check needs kept verbatim: 2020-12 vocabulary, references, closed
# objects and nested subschemas.
_TOOL_SCHEMA = (
    b'{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",'
    b'"$defs":{"point":{"type":"object","properties":{"x":{"type":"number"}},'
    b'"additionalProperties":false}},"properties":{"at":{"$ref":"#/$defs/point"},'
    b'"tags":{"type":"array","prefixItems":[{"const":"a"}],"items":false},'
    b'"mode":{"anyOf":[{"enum":["x","y"]},{"type":"null"}]}},"required":["at"],'
    b'"additionalProperties":false,"unevaluatedProperties":false,'
    b'"if":{"required":["mode"]},"then":{"minProperties":2}}'
)


def test_tool_input_schema_survives_decode_and_encode_byte_for_byte() -> None:
    raw = b'{"tools":[{"name":"t","inputSchema":' + _TOOL_SCHEMA + b',"outputSchema":' + _TOOL_SCHEMA + b"}]}"
    (tool,) = msgspec.json.decode(raw, type=ListToolsResult).tools
    assert msgspec.json.encode(tool.input_schema) == _TOOL_SCHEMA
    assert msgspec.json.encode(tool.output_schema) == _TOOL_SCHEMA
    assert msgspec.json.encode(ListToolsResult(tools=[tool])) == raw


def test_required_list_missing_from_input_decodes_as_empty() -> None:
    assert msgspec.json.decode(b"{}", type=CallToolResult) == CallToolResult(content=[])
    assert msgspec.json.decode(b"{}", type=ListToolsResult).tools == []


def test_empty_required_list_is_still_encoded() -> None:
    assert msgspec.json.encode(CallToolResult()) == b'{"content":[]}'
    assert msgspec.json.encode(ListToolsResult()) == b'{"tools":[]}'
    assert msgspec.json.encode(ToolResultContent(tool_use_id="1")) == (
        b'{"type":"tool_result","toolUseId":"1","content":[]}'
    )


def test_fields_at_their_default_are_left_out() -> None:
    assert msgspec.json.encode(CallToolResult(content=[], is_error=False, meta=None)) == b'{"content":[]}'


def test_meta_is_encoded_as_underscore_meta() -> None:
    result = CallToolResult(meta={"progressToken": 1})
    assert msgspec.json.encode(result) == b'{"content":[],"_meta":{"progressToken":1}}'


def test_required_nullable_task_ttl_is_encoded_as_null() -> None:
    task = Task(task_id="t", status="working", created_at="a", last_updated_at="b", ttl=None)
    assert msgspec.json.encode(task) == (
        b'{"taskId":"t","status":"working","createdAt":"a","lastUpdatedAt":"b","ttl":null}'
    )


def test_logging_data_null_is_kept() -> None:
    params = msgspec.json.decode(b'{"level":"info","data":null}', type=LoggingMessageNotificationParams)
    assert params.data is None
    assert msgspec.json.encode(params) == b'{"level":"info","data":null}'


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b'{"type":"text","text":"t"}', TextContent(text="t")),
        (
            b'{"type":"image","data":"AA==","mimeType":"image/png"}',
            ImageContent(data="AA==", mime_type="image/png"),
        ),
        (b'{"type":"resource_link","uri":"file:///a","name":"a"}', ResourceLink(uri="file:///a", name="a")),
        (
            b'{"type":"resource","resource":{"uri":"file:///b","blob":"AA=="}}',
            EmbeddedResource(resource=ResourceContents(uri="file:///b", blob="AA==")),
        ),
    ],
)
def test_content_block_type_selects_the_struct(raw: bytes, expected: object) -> None:
    assert msgspec.json.decode(raw, type=ContentBlock) == expected


def tagged_wire_structs() -> list[type[msgspec.Struct]]:
    """Every Struct exported by ``mcp_sansio.types`` that carries a tag on the wire."""
    found = [value for value in vars(types).values()
             if isinstance(value, type) and issubclass(value, msgspec.Struct)
             and value.__struct_config__.tag is not None]
    return sorted(found, key=lambda cls: cls.__name__)


def test_tagged_structs_are_all_found() -> None:
    assert len(tagged_wire_structs()) == 9


@pytest.mark.parametrize("cls", tagged_wire_structs(), ids=lambda cls: cls.__name__)
def test_every_tagged_struct_has_its_tag_as_type(cls: type[msgspec.Struct]) -> None:
    assert cls.__struct_config__.tag_field == "type"
    assert getattr(cls, "type") == cls.__struct_config__.tag  # noqa: B009
    assert "type" not in cls.__struct_fields__


def test_decoded_block_type_reads_the_tag_and_cannot_be_set() -> None:
    raw = b'{"content":[{"type":"text","text":"t"},{"type":"image","data":"AA==","mimeType":"image/png"}]}'
    result = msgspec.json.decode(raw, type=CallToolResult)
    assert [block.type for block in result.content] == ["text", "image"]
    with pytest.raises(AttributeError, match="read-only"):
        result.content[1].type = "text"  # type: ignore[misc]  # a ClassVar, on purpose


def test_type_attribute_is_not_encoded_twice() -> None:
    assert msgspec.json.encode(TextContent(text="t")) == b'{"type":"text","text":"t"}'


def test_unknown_content_type_is_rejected() -> None:
    with pytest.raises(msgspec.ValidationError, match="Invalid value 'video'"):
        msgspec.json.decode(b'{"content":[{"type":"video"}]}', type=CallToolResult)


def test_sampling_message_content_is_one_block_or_a_list() -> None:
    one = msgspec.json.decode(b'{"role":"user","content":{"type":"text","text":"q"}}', type=SamplingMessage)
    assert one.content == TextContent(text="q")
    many = msgspec.json.decode(
        b'{"role":"assistant","content":[{"type":"tool_use","id":"1","name":"f","input":{}}]}',
        type=SamplingMessage,
    )
    assert many.content == [ToolUseContent(id="1", name="f", input={})]


def test_stop_reason_accepts_any_string() -> None:
    raw = b'{"role":"assistant","content":{"type":"text","text":"a"},"model":"m","stopReason":"length"}'
    assert msgspec.json.decode(raw, type=CreateMessageResult).stop_reason == "length"


def test_role_outside_the_enum_is_rejected() -> None:
    with pytest.raises(msgspec.ValidationError, match="Invalid enum value 'system'"):
        msgspec.json.decode(b'{"role":"system","content":{"type":"text","text":"a"}}', type=SamplingMessage)


def test_elicitation_without_mode_decodes_as_form() -> None:
    raw = b'{"message":"m","requestedSchema":{"type":"object","properties":{}}}'
    params = msgspec.json.decode(raw, type=ElicitRequestParams)
    assert params.mode is None
    assert params.requested_schema == {"type": "object", "properties": {}}


def test_url_elicitation_decodes_its_own_fields() -> None:
    raw = b'{"mode":"url","message":"m","url":"https://x.example","elicitationId":"e1"}'
    params = msgspec.json.decode(raw, type=ElicitRequestParams)
    assert (params.mode, params.url, params.elicitation_id) == ("url", "https://x.example", "e1")
    assert params.requested_schema is None
