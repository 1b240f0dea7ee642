"""What a handler's signature says: its arguments as a msgspec Struct, and their JSON Schema.

Registration reads a function's parameters and annotations (it never calls the function,
STYLE.md law 3): the typed parameters become a Struct that validates and converts the
arguments a client sends, and the JSON Schema 2020-12 msgspec derives from it is the tool's
``inputSchema``; a structured return annotation (a Struct, dataclass, TypedDict or
``dict``) becomes its ``outputSchema``. A parameter annotated with :class:`Context` (or a
subclass) receives the request's context and is no argument.
"""

from __future__ import annotations

import dataclasses
import dis
import inspect
import typing
from collections.abc import Callable, Mapping
from typing import Any, Final, is_typeddict

import msgspec

from ..errors import LocalProtocolError

__all__ = ["HandlerSignature", "inspect_handler"]

_ALLOWED_KINDS: Final = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
_EMPTY_OBJECT: Final = b"{}"
# Schema keys msgspec adds that say nothing to a client.
_NOISE: Final = ("title",)
_YIELDS: Final = frozenset({"YIELD_VALUE", "YIELD_FROM"})  # where a coroutine's code suspends


class ContextParameter:
    """Base of the types whose annotation marks the parameter that receives the request's
    context rather than an argument (``Context`` is one; kept here so that reading a
    signature needs nothing of the context itself)."""

    __slots__ = ()


class HandlerSignature:
    """The parsed signature of one handler (a tool, prompt, resource template or completion).

    Attributes:
        fn: the handler itself, an opaque reference the core never calls.
        is_async: the handler is an ``async def`` (drivers await it) rather than a plain
            function (drivers call it).
        suspends: an ``is_async`` handler may suspend: its code yields somewhere (an
            ``await``, ``async for`` or ``async with``), or it is no plain ``async def`` whose
            code can be read. One that cannot suspend runs to its end when first stepped, so
            drivers run it inline, as a plain function on the loop: a task would only cost
            a loop turn.
        context_param: the name of the parameter that receives the :class:`Context`.
        names: the argument parameters, in order.
        required: those without a default.
        args_type: a Struct of the argument parameters (``None`` when there are none).
        decoder: decodes a JSON object of arguments into ``args_type``.
        var_keyword: the handler takes ``**kwargs``: it gets the arguments no parameter
            names too (a tool registered with an explicit ``input_schema``).
        return_annotation: the declared return type, or ``inspect.Signature.empty``.
    """

    __slots__ = ("args_type", "context_param", "decoder", "descriptions", "fn", "is_async", "names",
                 "required", "return_annotation", "suspends", "var_keyword")

    def __init__(self, fn: Callable[..., object], *, name: str, kind: str = "handler") -> None:
        self.fn = fn
        self.is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None)  # noqa: B004  # an instance with an async __call__
        )
        self.suspends = self.is_async and _may_suspend(fn)
        try:
            sig = inspect.signature(fn)
            annotated = fn if inspect.isroutine(fn) else type(fn).__call__  # an instance: its __call__
            hints = typing.get_type_hints(annotated, include_extras=True)
        except (TypeError, ValueError, NameError) as exc:
            raise LocalProtocolError(f"cannot read the signature of {kind} {name!r}: {exc}") from exc
        self.context_param: str | None = None
        fields: list[tuple[str, object, object] | tuple[str, object]] = []
        self.descriptions: dict[str, str] = {}
        required = []
        self.var_keyword = False
        for param in sig.parameters.values():
            if param.kind is inspect.Parameter.VAR_KEYWORD:
                self.var_keyword = True  # it also receives the arguments no parameter names
                continue
            if param.kind not in _ALLOWED_KINDS:
                raise LocalProtocolError(
                    f"{kind} {name!r}: parameter {param.name!r} must be nameable "
                    "(no positional-only or *args)"
                )
            annotation = hints.get(param.name, Any)  # unannotated: any JSON value
            if _is_context(annotation):
                self.context_param = param.name
                continue
            description = _description(annotation)
            if description is not None:
                self.descriptions[param.name] = description
            if param.default is inspect.Parameter.empty:
                fields.append((param.name, annotation))
                required.append(param.name)
            else:
                fields.append((param.name, annotation, param.default))
        self.names = tuple(f[0] for f in fields)
        self.required = tuple(required)
        self.return_annotation: object = hints.get("return", inspect.Signature.empty)
        self.args_type: type[msgspec.Struct] | None = None
        self.decoder: msgspec.json.Decoder[Any] | None = None
        for field in fields:
            _check_type(kind, name, field[0], field[1])
        if fields:
            try:
                self.args_type = msgspec.defstruct(f"{name}_arguments", fields, kw_only=True)
                # Tool arguments no parameter names are refused, naming them (FastMCP does).
                strict = msgspec.defstruct(f"{name}_arguments", fields, kw_only=True,
                                           forbid_unknown_fields=True)
                self.decoder = msgspec.json.Decoder(strict)
            except (TypeError, ValueError) as exc:
                raise LocalProtocolError(f"{kind} {name!r}: cannot validate its parameters: {exc}") from exc

    def decode(self, raw: bytes | None) -> dict[str, object]:
        """The keyword arguments in the JSON object ``raw`` (``None``: no arguments).

        Raises:
            msgspec.ValidationError: an argument is missing or has the wrong type (the
                message names it); the caller decides what the protocol makes of it.
            msgspec.DecodeError: ``raw`` is not JSON.
        """
        if self.var_keyword:
            values = msgspec.json.decode(raw or _EMPTY_OBJECT)
            if not isinstance(values, dict):
                raise msgspec.ValidationError("Expected `object` - at `$`")
            named = self.convert({k: v for k, v in values.items() if k in self.names}, strict=True)
            return named | {k: v for k, v in values.items() if k not in self.names}
        if self.decoder is None:
            return {}
        return msgspec.structs.asdict(self.decoder.decode(raw or _EMPTY_OBJECT))

    def convert(self, values: Mapping[str, object], *, strict: bool = False) -> dict[str, object]:
        """The keyword arguments in ``values``; unless ``strict``, strings are converted to
        the declared types (prompt arguments and URI template variables are strings).

        Raises:
            msgspec.ValidationError: a value is missing or cannot be converted.
        """
        if self.args_type is None:
            return {}
        return msgspec.structs.asdict(msgspec.convert(values, self.args_type, strict=strict))

    def input_schema(self) -> dict[str, object]:
        """The JSON Schema 2020-12 of the arguments: an object, ``$defs`` for nested types."""
        if self.args_type is None:
            return {"type": "object", "properties": {}}
        return _inline(self.args_type)

    def output_schema(self) -> dict[str, object] | None:
        """The schema of a structured return annotation (an object, a number, a boolean or an
        array of values); ``None`` for text, content blocks, or no annotation."""
        annotation = self.return_annotation
        if not _structured(annotation):
            return None
        return _inline(annotation)


def inspect_handler(fn: Callable[..., object], *, name: str, kind: str = "handler") -> HandlerSignature:
    """Parse ``fn``'s signature for the ``kind`` (``"tool"``, ``"prompt"``, ...) named ``name``.

    Raises:
        LocalProtocolError: the signature cannot serve as a handler's (positional-only or
            ``*args`` parameters, unresolvable annotations, types msgspec cannot validate:
            the message names the handler, the parameter and the type).
    """
    return HandlerSignature(fn, name=name, kind=kind)


def _check_type(kind: str, name: str, param: str, annotation: object) -> None:
    """Refuse a parameter type msgspec can neither validate nor describe, naming it."""
    try:
        msgspec.json.Decoder(annotation)
        msgspec.json.schema(annotation)
    except (TypeError, ValueError) as exc:
        reason = ([type(exc).__name__, *str(exc).strip().splitlines()])[-1]  # msgspec's last line says it
        raise LocalProtocolError(
            f"{kind} {name!r}: parameter {param!r} has type {inspect.formatannotation(annotation)}, "
            f"which cannot be a JSON argument ({reason})") from exc


def _may_suspend(fn: Callable[..., object]) -> bool:
    """Whether coroutine function ``fn`` may suspend: a coroutine suspends only where its
    code yields (``await``, ``async for`` and ``async with`` all compile to a yield), so a
    plain ``async def`` (or a method of one) whose code never yields runs to its end at
    once. Anything else (a ``partial``, an instance, a function marked a coroutine
    function) is taken to suspend."""
    code = getattr(getattr(fn, "__func__", fn), "__code__", None)
    if code is None or not code.co_flags & inspect.CO_COROUTINE:
        return True
    return any(op.opname in _YIELDS for op in dis.get_instructions(code))


def _is_context(annotation: object) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, ContextParameter)


def _description(annotation: object) -> str | None:
    if typing.get_origin(annotation) is not typing.Annotated:
        return None
    for meta in getattr(annotation, "__metadata__", ()):
        if isinstance(meta, msgspec.Meta) and meta.description:
            return meta.description
    return None


def _structured(annotation: object) -> bool:
    """A return type that produces ``structuredContent``: an object, a number, a boolean or
    an array of values (FastMCP's rule), not text or content blocks."""
    if isinstance(annotation, type):
        if issubclass(annotation, msgspec.Struct):
            return not _is_wire(annotation)  # CallToolResult, TextContent, ...
        if annotation in _SCALARS:
            return True
        return dataclasses.is_dataclass(annotation) or is_typeddict(annotation)
    origin = typing.get_origin(annotation)
    if origin in _ARRAYS:
        return not any(_holds_content(arg) for arg in typing.get_args(annotation))
    return origin is dict


_SCALARS: Final = (int, float, bool)
_ARRAYS: Final = (list, tuple, set, frozenset)


def _is_wire(tp: type) -> bool:
    from ..types import WireStruct

    return issubclass(tp, WireStruct)


def _holds_content(arg: object) -> bool:
    """An item type that may be a content block, or anything at all: the list is content."""
    if arg is Any or arg is object or arg is Ellipsis:
        return arg is not Ellipsis
    if isinstance(arg, type):
        return issubclass(arg, msgspec.Struct) and _is_wire(arg)
    return any(_holds_content(inner) for inner in typing.get_args(arg))


def _inline(tp: object) -> dict[str, object]:
    """``tp``'s schema with its own definition at the root and the rest under ``$defs``."""
    try:
        (root,), defs = msgspec.json.schema_components([tp], ref_template="#/$defs/{name}")
    except (TypeError, ValueError) as exc:
        raise LocalProtocolError(f"cannot derive a JSON Schema for {tp!r}: {exc}") from exc
    ref = root.get("$ref")
    if isinstance(ref, str):
        own = ref.removeprefix("#/$defs/")
        root = dict(defs.pop(own))
        if ref.encode() in msgspec.json.encode([root, defs]):  # recursive: keep the definition
            defs[own] = dict(root)
    schema = {k: v for k, v in root.items() if k not in _NOISE}
    if defs:
        schema["$defs"] = defs
    return schema

