"""The typed request helpers, written once for the session and for every transport.

Each builds its method's params and hands them to ``_send_call``, which a
:class:`~mcp_sansio.session.ClientSession` implements and a
:class:`~mcp_sansio.front.SessionFront` forwards to the session it owns.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping

import msgspec

from . import skills
from .errors import LocalProtocolError
from .types import (
    CallToolRequestParams,
    CompleteRequestParams,
    CompletionArgument,
    CompletionContext,
    GetPromptRequestParams,
    PaginatedRequestParams,
    PromptReference,
    ReadResourceRequestParams,
    ResourceTemplateReference,
)

__all__ = ["Calls"]


class Calls(abc.ABC):
    """``tools/call``, the lists, ``resources/read``, prompts, completions and skills as
    typed calls; each returns the request id its answer will carry."""

    @abc.abstractmethod
    def _send_call(self, method: str, params: msgspec.Struct | None, now: float, timeout: float | None,
                   all_pages: bool) -> int:
        """Send ``method`` with ``params`` built by the helper (so the session may set
        their progress token in place); see :meth:`ClientSession.request`."""

    def call_tool(self, name: str, arguments: Mapping[str, object] | None = None, *, now: float,
                  timeout: float | None = None) -> int:
        """``tools/call``. See :meth:`ClientSession.request` for the rest."""
        args = arguments if arguments is None or isinstance(arguments, dict) else dict(arguments)
        return self._send_call("tools/call", CallToolRequestParams(name=name, arguments=args), now, timeout,
                               False)

    def list_tools(self, *, now: float, cursor: str | None = None, all_pages: bool = True,
                   timeout: float | None = None) -> int:
        """``tools/list``, every page by default."""
        return self._list("tools/list", cursor, all_pages, now, timeout)

    def list_resources(self, *, now: float, cursor: str | None = None, all_pages: bool = True,
                       timeout: float | None = None) -> int:
        """``resources/list``, every page by default."""
        return self._list("resources/list", cursor, all_pages, now, timeout)

    def list_resource_templates(self, *, now: float, cursor: str | None = None,
                                all_pages: bool = True, timeout: float | None = None) -> int:
        """``resources/templates/list``, every page by default."""
        return self._list("resources/templates/list", cursor, all_pages, now, timeout)

    def list_prompts(self, *, now: float, cursor: str | None = None, all_pages: bool = True,
                     timeout: float | None = None) -> int:
        """``prompts/list``, every page by default."""
        return self._list("prompts/list", cursor, all_pages, now, timeout)

    def read_resource(self, uri: str, *, now: float, timeout: float | None = None) -> int:
        """``resources/read``."""
        return self._send_call("resources/read", ReadResourceRequestParams(uri=uri), now, timeout, False)

    def list_skills(self, *, now: float, cursor: str | None = None, all_pages: bool = True,
                    timeout: float | None = None) -> int:
        """``skills/list`` (Skills extension), every page by default; reads no skill file.

        Raises:
            LocalProtocolError: the server did not declare the extension (and see
                :meth:`ClientSession.request`).
        """
        return self._list("skills/list", cursor, all_pages, now, timeout)

    def get_skill(self, uri: str, *, now: float, timeout: float | None = None) -> int:
        """``skills/get`` (Skills extension): the entry of the skill whose ``SKILL.md`` is ``uri``.

        Raises:
            LocalProtocolError: the server did not declare the extension (and see
                :meth:`ClientSession.request`).
        """
        return self._send_call("skills/get", skills.GetSkillRequestParams(uri=uri), now, timeout, False)

    def get_prompt(self, name: str, arguments: Mapping[str, str] | None = None, *, now: float,
                   timeout: float | None = None) -> int:
        """``prompts/get``."""
        params = GetPromptRequestParams(name=name, arguments=dict(arguments) if arguments else None)
        return self._send_call("prompts/get", params, now, timeout, False)

    def complete(
        self, ref: PromptReference | ResourceTemplateReference | Mapping[str, object],
        argument_name: str, value: str, *, now: float,
        context_arguments: Mapping[str, str] | None = None, timeout: float | None = None,
    ) -> int:
        """``completion/complete`` for one argument of a prompt or resource template.

        Raises:
            LocalProtocolError: ``ref`` is not a prompt or resource-template reference.
        """
        if isinstance(ref, Mapping):
            try:
                ref = msgspec.convert(ref, PromptReference | ResourceTemplateReference)
            except msgspec.ValidationError as exc:
                raise LocalProtocolError(f"invalid completion ref: {exc}") from exc
        params = CompleteRequestParams(
            ref=ref,
            argument=CompletionArgument(name=argument_name, value=value),
            context=CompletionContext(arguments=dict(context_arguments)) if context_arguments else None,
        )
        return self._send_call("completion/complete", params, now, timeout, False)

    def _list(self, method: str, cursor: str | None, all_pages: bool, now: float,
              timeout: float | None) -> int:
        params = PaginatedRequestParams(cursor=cursor) if cursor else None
        return self._send_call(method, params, now, timeout, all_pages)
