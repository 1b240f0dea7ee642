"""Every request method the server serves, in one table, and what each one does.

``METHODS`` maps a method to the decoder of its params and its handler in each era
(``None``: the era has no such method, answered ``-32601``). Handlers answer what needs
no user code straight away (lists with pagination and caching hints, ``server/discover``,
``ping``, static resources and completions, subscriptions, log levels) and turn the rest
into a ``HandlerCallReceived`` event, validating arguments first. The multi round-trip
pieces (answers known to a run, ``input_required``) live here too, beside the asks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, NamedTuple

import msgspec
from msgspec import UNSET

from .. import jsonrpc
from ..errors import LocalProtocolError
from ..modern import MISSING_CLIENT_CAPABILITY, DiscoverResult
from ..types import (
    CompleteResult,
    Completion,
    ElicitRequestParams,
    EmptyResult,
    InitializeResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    PromptReference,
    ReadResourceResult,
    ResourceContents,
)
from ..versions import LATEST_VERSION, VERSIONS
from . import skills, tasks
from .calls import Call, CallKind, Round
from .context import Ask, ClientCapabilityMissing
from .events import (
    ANSWER_TYPES,
    ClientInitialized,
    CompletionReceived,
    PromptGetReceived,
    RequestInfo,
    ResourceReadReceived,
    ResourceSubscribed,
    ResourceUnsubscribed,
    ToolCallReceived,
)
from .mrtr import InvalidRequestState, SealedState, binding_digest, seal, unseal
from .paging import page
from .phases import Phase
from .port import Listen, Request, SessionPort
from .registry import RegisteredResource
from .results import completion_result, error_tool_result
from .wire import (
    SUBSCRIPTION_ID_KEY,
    CallParams,
    CompleteParams,
    InitParams,
    ListenFilter,
    ListenParams,
    ListParams,
    Params,
    PromptParams,
    ReadParams,
    RetryParams,
    SetLevelParams,
    TaskParams,
    TaskUpdateParams,
    UriParams,
)

if TYPE_CHECKING:
    from .registry import ListKind

__all__ = ["METHODS", "Listen", "MethodSpec", "Request"]


Handler = Callable[[SessionPort, Request, float], None]


class MethodSpec(NamedTuple):
    """How to serve one method: its params decoder and its handler in each era."""

    decoder: msgspec.json.Decoder[Any]
    legacy: Handler | None
    modern: Handler | None


# ---------------------------------------------------------------------- lifecycle


def _initialize(session: SessionPort, req: Request, now: float) -> None:
    params: InitParams = req.params
    versions = session.config.protocol_versions
    version = params.protocol_version if params.protocol_version in versions else versions[0]
    rules = VERSIONS[version]
    session.handshake.initialize(version, rules, params.client_info, params.capabilities)
    app = session.app
    session.answer(req, InitializeResult(protocol_version=version, capabilities=app.capabilities(rules),
                                         server_info=app.info, instructions=app.instructions))


def initialized(session: SessionPort) -> None:
    """``notifications/initialized`` moved the phase: the handshake is complete."""
    agreed = session.handshake
    assert agreed.protocol_version is not None and agreed.client_info is not None  # set by initialize
    session.host.emit(ClientInitialized(protocol_version=agreed.protocol_version,
                                        client_info=agreed.client_info,
                                        capabilities=agreed.client_capabilities,
                                        session_id=agreed.session_id))


def _ping(session: SessionPort, req: Request, now: float) -> None:
    session.answer(req, EmptyResult())


def _discover(session: SessionPort, req: Request, now: float) -> None:
    app, config = session.app, session.config
    result = DiscoverResult(supported_versions=list(config.modern_versions),
                            capabilities=app.capabilities(req.rules), instructions=app.instructions)
    session.answer(req, result, cache=(config.discover_ttl_ms, "public"))


# ---------------------------------------------------------------------- lists


def _list_cache(session: SessionPort) -> tuple[int, str]:
    return session.config.list_ttl_ms, session.config.list_cache_scope


def _list_tools(session: SessionPort, req: Request, now: float) -> None:
    tools = session.app.registry.tools
    if not tools:
        session.reject(req, jsonrpc.METHOD_NOT_FOUND, "Method not found: no tools")
        return
    found = page(session, req, "tools", [entry.listed(req.rules) for entry in tools.values()])
    if found is not None:
        session.answer(req, ListToolsResult(tools=found[0], next_cursor=found[1]), cache=_list_cache(session))


def _list_prompts(session: SessionPort, req: Request, now: float) -> None:
    prompts = session.app.registry.prompts
    if not prompts:
        session.reject(req, jsonrpc.METHOD_NOT_FOUND, "Method not found: no prompts")
        return
    found = page(session, req, "prompts", [entry.prompt for entry in prompts.values()])
    if found is not None:
        result = ListPromptsResult(prompts=found[0], next_cursor=found[1])
        session.answer(req, result, cache=_list_cache(session))


def _no_resources(session: SessionPort, req: Request) -> bool:
    registry = session.app.registry
    if registry.resources or registry.templates:
        return False
    session.reject(req, jsonrpc.METHOD_NOT_FOUND, "Method not found: no resources")
    return True


def _list_resources(session: SessionPort, req: Request, now: float) -> None:
    if _no_resources(session, req):
        return
    listed = [e.resource for e in session.app.registry.resources.values() if e.listed]
    found = page(session, req, "resources", listed)
    if found is not None:
        result = ListResourcesResult(resources=found[0], next_cursor=found[1])
        session.answer(req, result, cache=_list_cache(session))


def _list_templates(session: SessionPort, req: Request, now: float) -> None:
    if _no_resources(session, req):
        return
    found = page(session, req, "templates", [e.template for e in session.app.registry.templates.values()])
    if found is not None:
        result = ListResourceTemplatesResult(resource_templates=found[0], next_cursor=found[1])
        session.answer(req, result, cache=_list_cache(session))


# ---------------------------------------------------------------------- calls


def _start(session: SessionPort, req: Request, kind: CallKind, rnd: Round | None,
           state: Mapping[str, object]) -> Call:
    """Record a call for ``req`` and return it (its event is the caller's to emit)."""
    info = request_info(session, req)
    if state:
        info = msgspec.structs.replace(info, state=state)
    rec = Call(session.new_call(), req.request_id, req.channel, req.key, info, req.rules, kind)
    rec.round = rnd
    session.start_call(rec)
    return rec


def _round(session: SessionPort, req: Request, target: str, arguments: object,
           now: float) -> tuple[Round | None, Mapping[str, object]] | None:
    """The multi round-trip state of a stateless request: the answers it brings (sealed
    ones included) and the handler's kept values; ``None`` after refusing its state."""
    if not req.modern:
        return None, {}
    params: RetryParams = req.params
    binding = binding_digest(req.method, target, arguments,
                             None if req.principal is None else req.principal.identity)
    answers: dict[str, dict[str, object]] = {}
    state: Mapping[str, object] = {}
    if params.request_state is not UNSET:
        host = session.host
        try:
            sealed = unseal(host.secret, params.request_state, binding=binding,
                            now_wall=now + host.wall_offset, max_bytes=session.config.max_state_bytes)
        except InvalidRequestState as exc:
            session.reject(req, jsonrpc.INVALID_PARAMS, f"Invalid params: {exc}")
            return None
        answers.update(sealed.answers)
        state = sealed.state
    if params.input_responses is not UNSET:
        answers.update(params.input_responses)
    return Round(binding, answers), state


def _call_tool(session: SessionPort, req: Request, now: float) -> None:
    params: CallParams = req.params
    entry = session.app.registry.tools.get(params.name)
    if entry is None:
        session.reject(req, jsonrpc.INVALID_PARAMS, f"Unknown tool: {params.name}")
        return
    if entry.task_support == "required" and req.modern and not tasks.declares_tasks(
            req.params.meta.client_capabilities):
        session.reject(req, MISSING_CLIENT_CAPABILITY, f"tool {params.name} runs only as a task",
                       tasks.required_data())
        return
    raw = bytes(params.arguments)
    if raw[:1] != b"{" and raw != b"null":
        session.reject(req, jsonrpc.INVALID_PARAMS, "Invalid params: arguments must be an object")
        return
    try:
        arguments = entry.signature.decode(raw if raw[:1] == b"{" else None)
    except (msgspec.DecodeError, RecursionError) as exc:
        message = f"Invalid arguments for tool {params.name}: {exc}"
        if req.rules.tool_input_errors_in_result:
            session.answer(req, error_tool_result(message))
        else:
            session.reject(req, jsonrpc.INVALID_PARAMS, f"Invalid params: {message}")
        return
    mrtr = _round(session, req, params.name, arguments, now)
    if mrtr is None:
        return
    rec = _start(session, req, CallKind.TOOL, *mrtr)
    rec.tool = entry
    session.host.emit(ToolCallReceived(call=rec.call, request=rec.info, handler=entry.signature,
                                       arguments=arguments, tool=entry))


def _get_prompt(session: SessionPort, req: Request, now: float) -> None:
    params: PromptParams = req.params
    entry = session.app.registry.prompts.get(params.name)
    if entry is None:
        session.reject(req, jsonrpc.INVALID_PARAMS, f"Unknown prompt: {params.name}")
        return
    given = params.arguments or {}
    try:
        arguments = entry.signature.convert(given)
    except msgspec.ValidationError as exc:
        session.reject(req, jsonrpc.INVALID_PARAMS,
                      f"Invalid arguments for prompt {params.name}: {exc}")
        return
    mrtr = _round(session, req, params.name, given, now)
    if mrtr is None:
        return
    rec = _start(session, req, CallKind.PROMPT, *mrtr)
    rec.prompt = entry
    session.host.emit(PromptGetReceived(call=rec.call, request=rec.info, handler=entry.signature,
                                        arguments=arguments, prompt=entry))


def _read_resource(session: SessionPort, req: Request, now: float) -> None:
    params: ReadParams = req.params
    uri = params.uri
    found = session.app.registry.find_resource(uri)
    if found is None:
        session.reject(req, req.rules.resource_not_found, "Resource not found", {"uri": uri})
        return
    entry, variables = found
    config = session.config
    cache = (config.read_ttl_ms if entry.ttl_ms is None else entry.ttl_ms,
             config.read_cache_scope if entry.cache_scope is None else entry.cache_scope)
    if isinstance(entry, RegisteredResource):
        mime_type = entry.resource.mime_type
        if entry.signature is None:
            contents = ResourceContents(uri=uri, mime_type=mime_type, text=entry.text, blob=entry.blob)
            session.answer(req, ReadResourceResult(contents=[contents]), cache=cache)
            return
        signature = entry.signature
    else:
        mime_type, signature = entry.template.mime_type, entry.signature
    try:
        arguments = signature.convert(variables)
    except msgspec.ValidationError as exc:
        session.reject(req, jsonrpc.INVALID_PARAMS, f"Invalid params: {uri}: {exc}")
        return
    mrtr = _round(session, req, uri, {}, now)
    if mrtr is None:
        return
    rec = _start(session, req, CallKind.READ, *mrtr)
    rec.uri, rec.mime_type, rec.cache = uri, mime_type, cache
    session.host.emit(ResourceReadReceived(call=rec.call, request=rec.info, handler=signature,
                                           arguments=arguments, resource=entry, uri=uri))


def _complete(session: SessionPort, req: Request, now: float) -> None:
    params: CompleteParams = req.params
    registry = session.app.registry
    if not registry.completions:
        session.reject(req, jsonrpc.METHOD_NOT_FOUND, "Method not found: no completions")
        return
    ref = params.ref
    if isinstance(ref, PromptReference):
        found = registry.completions.get(("ref/prompt", ref.name, params.argument.name))
    else:
        found = registry.completions.get(("ref/resource", ref.uri, params.argument.name))
    value = params.argument.value
    if found is None:
        session.answer(req, CompleteResult(completion=Completion(values=[], total=0, has_more=False)))
        return
    if found.signature is None:
        session.answer(req, completion_result([v for v in found.values if v.startswith(value)]))
        return
    signature = found.signature
    context = {} if params.context is None else dict(params.context.arguments or {})
    offered: dict[str, object] = {"value": value, "argument": params.argument.name, "context": context}
    arguments = {name: offered[name] for name in signature.names if name in offered}
    rec = _start(session, req, CallKind.COMPLETE, None, {})
    session.host.emit(CompletionReceived(call=rec.call, request=rec.info, handler=signature,
                                         arguments=arguments, completion=found))


# ---------------------------------------------------------------------- subscriptions and logging


def _set_level(session: SessionPort, req: Request, now: float) -> None:
    params: SetLevelParams = req.params
    session.handshake.set_log_level(params.level)
    session.answer(req, EmptyResult())


def _subscribe(session: SessionPort, req: Request, now: float) -> None:
    params: UriParams = req.params
    uri = params.uri
    if session.app.registry.find_resource(uri) is None:
        session.reject(req, req.rules.resource_not_found, "Resource not found", {"uri": uri})
        return
    if uri not in session.handshake.subscriptions:
        if len(session.handshake.subscriptions) >= session.config.max_subscriptions:
            session.reject(req, jsonrpc.INTERNAL_ERROR, "too many subscriptions")
            return
        session.handshake.subscribe(uri)
        session.host.emit(ResourceSubscribed(uri=uri))
    session.answer(req, EmptyResult())


def _unsubscribe(session: SessionPort, req: Request, now: float) -> None:
    params: UriParams = req.params
    if params.uri in session.handshake.subscriptions:
        session.handshake.unsubscribe(params.uri)
        session.host.emit(ResourceUnsubscribed(uri=params.uri))
    session.answer(req, EmptyResult())


def _listen(session: SessionPort, req: Request, now: float) -> None:
    params: ListenParams = req.params
    asked = params.notifications
    caps = session.app.capabilities(req.rules)
    if caps.tools is None and caps.prompts is None and caps.resources is None:
        session.reject(req, jsonrpc.METHOD_NOT_FOUND, "Method not found: the server has nothing to notify")
        return
    if len(session.listens) >= session.config.max_subscriptions:
        session.reject(req, jsonrpc.INTERNAL_ERROR, "too many subscriptions")
        return
    honored = ListenFilter(
        tools_list_changed=True if asked.tools_list_changed and caps.tools else None,
        prompts_list_changed=True if asked.prompts_list_changed and caps.prompts else None,
        resources_list_changed=True if asked.resources_list_changed and caps.resources else None,
        resource_subscriptions=asked.resource_subscriptions if caps.resources else None,
    )
    session.listen(req.key, Listen(request_id=req.request_id, channel=req.channel, filter=honored))
    ack = {"_meta": {SUBSCRIPTION_ID_KEY: req.request_id}, "notifications": honored}
    message = jsonrpc.encode_notification("notifications/subscriptions/acknowledged", ack)
    session.host.send(req.channel, message)


def notify_list_changed(session: SessionPort, kind: ListKind) -> None:
    """Tell ``session``'s client the ``kind`` list changed, in whichever era it listens."""
    method = f"notifications/{kind}/list_changed"
    rules = session.handshake.rules
    ready = session.handshake.phase is Phase.READY and rules is not None
    if ready and getattr(session.app.capabilities(rules), kind) is not None:  # type: ignore[arg-type]
        session.host.send(None, jsonrpc.encode_notification(method, None))
    wanted = f"{kind}_list_changed"
    for listen in session.listens.values():
        if getattr(listen.filter, wanted):
            _send_tagged(session, listen, method, {})


def notify_resource_updated(session: SessionPort, uri: str) -> None:
    """Tell ``session``'s client ``uri`` changed, if it subscribed to it."""
    if uri in session.handshake.subscriptions:
        session.host.send(None, jsonrpc.encode_notification("notifications/resources/updated", {"uri": uri}))
    for listen in session.listens.values():
        if uri in (listen.filter.resource_subscriptions or ()):
            _send_tagged(session, listen, "notifications/resources/updated", {"uri": uri})


def _send_tagged(session: SessionPort, listen: Listen, method: str, params: dict[str, object]) -> None:
    params["_meta"] = {SUBSCRIPTION_ID_KEY: listen.request_id}
    session.host.send(listen.channel, jsonrpc.encode_notification(method, params))


# ---------------------------------------------------------------------- asking the client


_CAPABILITY: Final[Mapping[str, str]] = {
    "elicitation/create": "elicitation", "sampling/createMessage": "sampling", "roots/list": "roots",
}


def check_capability(session: SessionPort, rec: Call, ask: Ask) -> None:
    """Refuse ``ask`` unless ``rec``'s client declared what it needs.

    Raises:
        ClientCapabilityMissing: it did not.
        LocalProtocolError: ``ask`` is no question a server may ask.
    """
    name = _CAPABILITY.get(ask.method)
    if name is None:
        raise LocalProtocolError(f"a server cannot ask the client {ask.method!r}")
    declared = getattr(rec.info.client_capabilities, name)
    if declared is None:
        raise ClientCapabilityMissing(f"the client did not declare the {name} capability",
                                      required={name: {}})
    params = ask.params
    if isinstance(params, ElicitRequestParams) and params.mode == "url" and "url" not in declared:
        raise ClientCapabilityMissing("the client did not declare URL mode elicitation",
                                      required={"elicitation": {"url": {}}})


def known_answer(rnd: Round, key: str, method: str) -> msgspec.Struct | None:
    """The answer to question ``key`` this run already has (decoded), or ``None``."""
    answer = rnd.answers.get(key)
    if answer is None:
        return None
    try:
        result: msgspec.Struct = msgspec.convert(answer, ANSWER_TYPES[method])
    except msgspec.ValidationError:
        return None  # a malformed answer is asked again (MRTR "Error Handling")
    rnd.used[key] = answer
    return result


def outbound_params(ask: Ask, ticket: int) -> msgspec.Struct:
    """The params of ``ask`` as a handshake-era request (URL elicitation needs an id there)."""
    params = ask.params
    if isinstance(params, ElicitRequestParams) and params.mode == "url" and params.elicitation_id is None:
        return msgspec.structs.replace(params, elicitation_id=f"elicitation-{ticket}")
    return params


def input_required(session: SessionPort, rec: Call, state: Mapping[str, object], now: float) -> None:
    """Answer ``rec`` with ``input_required``: its open questions and a sealed state.

    Raises:
        LocalProtocolError: ``rec`` cannot ask for input (not a stateless-era
            ``tools/call``, ``prompts/get`` or ``resources/read``), or ``state`` is not JSON.
    """
    rnd = rec.round
    if rnd is None:
        raise LocalProtocolError(f"{rec.info.method} cannot answer input_required (only stateless-era "
                                 "tools/call, prompts/get and resources/read can)")
    expires_at = now + session.host.wall_offset + session.config.state_ttl
    sealed = SealedState(binding=rnd.binding, expires_at=expires_at, answers=rnd.used, state=dict(state))
    try:
        token = seal(session.host.secret, sealed)
    except (TypeError, ValueError) as exc:
        raise LocalProtocolError(f"ctx.state must hold JSON values: {exc}") from exc
    result: dict[str, object] = {"requestState": token}
    if rnd.pending:
        result["inputRequests"] = {key: {"method": ask.method, "params": ask.params}
                                   for key, ask in rnd.pending.items()}
    data = session.encode_result(rec.request_id, result, rec.rules, result_type="input_required")
    session.finish_call(rec)
    session.host.finish(rec.channel, data, 200, now)


def _decoder(tp: type) -> msgspec.json.Decoder[Any]:
    return msgspec.json.Decoder(tp)


METHODS: Final[Mapping[str, MethodSpec]] = {
    "initialize": MethodSpec(_decoder(InitParams), _initialize, None),
    "ping": MethodSpec(_decoder(Params), _ping, None),
    "server/discover": MethodSpec(_decoder(Params), None, _discover),
    "tools/list": MethodSpec(_decoder(ListParams), _list_tools, _list_tools),
    "tools/call": MethodSpec(_decoder(CallParams), _call_tool, _call_tool),
    "prompts/list": MethodSpec(_decoder(ListParams), _list_prompts, _list_prompts),
    "prompts/get": MethodSpec(_decoder(PromptParams), _get_prompt, _get_prompt),
    "resources/list": MethodSpec(_decoder(ListParams), _list_resources, _list_resources),
    "resources/templates/list": MethodSpec(_decoder(ListParams), _list_templates, _list_templates),
    "resources/read": MethodSpec(_decoder(ReadParams), _read_resource, _read_resource),
    "resources/subscribe": MethodSpec(_decoder(UriParams), _subscribe, None),
    "resources/unsubscribe": MethodSpec(_decoder(UriParams), _unsubscribe, None),
    "completion/complete": MethodSpec(_decoder(CompleteParams), _complete, _complete),
    "logging/setLevel": MethodSpec(_decoder(SetLevelParams), _set_level, None),
    "subscriptions/listen": MethodSpec(_decoder(ListenParams), None, _listen),
    "tasks/get": MethodSpec(_decoder(TaskParams), None, tasks.tasks_get),
    "tasks/update": MethodSpec(_decoder(TaskUpdateParams), None, tasks.tasks_update),
    "tasks/cancel": MethodSpec(_decoder(TaskParams), None, tasks.tasks_cancel),
    "skills/list": MethodSpec(_decoder(ListParams), skills.list_skills, skills.list_skills),
    "skills/get": MethodSpec(_decoder(UriParams), skills.get_skill, skills.get_skill),
}
"""Method -> params decoder and handlers (handshake era, stateless era)."""


def request_info(session: SessionPort, request: Request) -> RequestInfo:
    """What a handler learns of ``request``: its own ``_meta`` in the stateless era, what
    the handshake agreed in the other."""
    meta = request.params.meta
    if request.modern:
        assert meta is not None and meta.client_capabilities is not None  # checked on receipt
        return RequestInfo(
            request_id=request.request_id, method=request.method, protocol_version=request.rules.version,
            modern=True, client_info=meta.client_info, client_capabilities=meta.client_capabilities,
            progress_token=meta.progress_token, log_level=meta.log_level, principal=request.principal,
            trace_context=meta.trace_context(),
        )
    agreed = session.handshake
    return RequestInfo(
        request_id=request.request_id, method=request.method,
        protocol_version=agreed.protocol_version or LATEST_VERSION, modern=False,
        client_info=agreed.client_info, client_capabilities=agreed.client_capabilities,
        progress_token=None if meta is None else meta.progress_token, log_level=agreed.log_level,
        session_id=agreed.session_id, principal=request.principal,
        trace_context=None if meta is None else meta.trace_context(),
    )
