"""Invalid request bodies of ``kbgraph serve``: a 422 that always serialises, and text fields that are Unicode.

FastAPI answers a body that fails validation with a 422 listing the errors, each with the ``input`` it failed on.
That input can be what JSON cannot carry: the raw bytes of a body that is not UTF-8 (``{"question": "zebra
\\xff\\xfe jam"}``), or a string holding a lone surrogate (JSON ``"\\ud800"`` decodes to one), and serialising
the 422 then failed with a 500. :class:`ValidatedRoute` (the route class of the ``/v1`` routes) answers every
RequestValidationError itself with :func:`safe_errors`: inputs and contexts as text that is valid UTF-8 (bytes
and surrogates as backslash escapes, never the raw bytes), cut to :data:`MAX_INPUT` characters.

:data:`Text` is a string field that refuses a lone surrogate (a 422 naming the character), so that no such string
reaches the library, whose answers echo the question.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Annotated, Any

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import AfterValidator

#: Longest input echoed in a 422, in characters.
MAX_INPUT = 200


def _text(value: str | bytes) -> str:
    """``value`` as valid UTF-8 text: undecodable bytes and lone surrogates as backslash escapes, cut."""
    text = (
        value.decode("utf-8", "backslashreplace")
        if isinstance(value, bytes)
        else value.encode("utf-8", "backslashreplace").decode("utf-8")
    )
    return text if len(text) <= MAX_INPUT else text[:MAX_INPUT] + "…"


def _safe(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, (str, bytes)):
        return _text(value)
    if isinstance(value, dict):
        return {_text(str(k)): _safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_safe(v) for v in value]
    return _text(str(value))


def safe_errors(errors: Any) -> list[dict[str, Any]]:
    """The errors of a RequestValidationError as JSON can carry them (module doc)."""
    return [{k: _safe(v) for k, v in error.items() if k != "url"} for error in errors]


class ValidatedRoute(APIRoute):
    """An APIRoute whose RequestValidationError (FastAPI's own, or one a handler raises) is a 422 with
    :func:`safe_errors` as ``detail``."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def route(request: Request) -> Response:
            try:
                return await handler(request)
            except RequestValidationError as exc:
                return JSONResponse({"detail": safe_errors(exc.errors())}, status_code=422)

        return route


def _unicode(text: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"character {exc.start} is a lone surrogate (U+{ord(text[exc.start]):04X}), not Unicode "
            "text: send the text as valid UTF-8"
        ) from None
    return text


#: A string field of a request body that holds no lone surrogate.
Text = Annotated[str, AfterValidator(_unicode)]
