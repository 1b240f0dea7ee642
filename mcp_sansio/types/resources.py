"""Resources: listing, templates, reading and subscriptions (MCP server feature "Resources")."""

import msgspec

from ._base import WireStruct, required_list
from .content import Annotations, Icon, ResourceContents

__all__ = [
    "ListResourceTemplatesResult",
    "ListResourcesResult",
    "ReadResourceRequestParams",
    "ReadResourceResult",
    "Resource",
    "ResourceRequestParams",
    "ResourceTemplate",
    "ResourceUpdatedNotificationParams",
    "SubscribeRequestParams",
    "UnsubscribeRequestParams",
]


class Resource(WireStruct, kw_only=True, omit_defaults=True):
    """A resource the server can read; ``size`` is its raw size in bytes, if known."""

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: Annotations | None = None
    icons: list[Icon] | None = None
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


class ResourceTemplate(WireStruct, kw_only=True, omit_defaults=True):
    """A family of resources named by an RFC 6570 URI template."""

    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: Annotations | None = None
    icons: list[Icon] | None = None
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


class ListResourcesResult(WireStruct, kw_only=True, omit_defaults=True):
    """The result of ``resources/list``: one page of resources (caching hints as on
    :class:`ListToolsResult`)."""

    resources: list[Resource] = required_list()
    next_cursor: str | None = None
    ttl_ms: int | None = None
    cache_scope: str | None = None
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


class ListResourceTemplatesResult(WireStruct, kw_only=True, omit_defaults=True):
    """The result of ``resources/templates/list``: one page of templates (caching hints as
    on :class:`ListToolsResult`)."""

    resource_templates: list[ResourceTemplate] = required_list()
    next_cursor: str | None = None
    ttl_ms: int | None = None
    cache_scope: str | None = None
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


class ResourceRequestParams(WireStruct, kw_only=True, omit_defaults=True):
    """Params of a request about one resource, named by ``uri``."""

    uri: str
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


class ReadResourceRequestParams(ResourceRequestParams, kw_only=True, omit_defaults=True):
    """Params of ``resources/read``."""


class SubscribeRequestParams(ResourceRequestParams, kw_only=True, omit_defaults=True):
    """Params of ``resources/subscribe``."""


class UnsubscribeRequestParams(ResourceRequestParams, kw_only=True, omit_defaults=True):
    """Params of ``resources/unsubscribe``."""


class ReadResourceResult(WireStruct, kw_only=True, omit_defaults=True):
    """The result of ``resources/read``: one or more contents (a directory may give many);
    caching hints as on :class:`ListToolsResult`."""

    contents: list[ResourceContents] = required_list()
    ttl_ms: int | None = None
    cache_scope: str | None = None
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")


class ResourceUpdatedNotificationParams(WireStruct, kw_only=True, omit_defaults=True):
    """Params of ``notifications/resources/updated``: a subscribed resource changed."""

    uri: str
    meta: dict[str, object] | None = msgspec.field(default=None, name="_meta")
