"""The front's one door: every value a request carries is checked here, once, before any
route sees it (docs/front.md, *Security*).

Each header (name and value), each query parameter, each path parameter and the body
(read whole: :mod:`.limits` caps it first) pass the same checks, those of
:mod:`.inputs`: no ``NaN``, ``Infinity`` or overflowing number (``1e999``), no NUL and no
lone surrogate, in a value or a key, and JSON nested at most :data:`MAX_DEPTH` deep.  A
body that parses as JSON is checked as JSON whatever its content type; a form
(``application/x-www-form-urlencoded``) is checked field by field.  What fails is
refused with 422 (``value_postgres_refuses``, or ``nested_too_deep``), counted, and
nothing is written.

How no route can be added around it: every API route is of the class
:func:`door_route_class` makes (the caller verified first, then the door, then the
route: a caller without a credential still gets 401 before its body is read); a
Starlette endpoint (the console's) is wrapped by :func:`guarded`; and
:func:`require_door` — called by ``create_app`` on the app it built — refuses an app
with any route, mounted or not, that is neither.  ``tests/test_front_door.py`` sends
every route of :func:`route_table` the values PostgreSQL refuses.

Routes that parse JSON themselves (a webhook's raw body, A2A, the console's arguments
field) parse it with :func:`loads`, the door's own parser.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from typing import Any
from urllib.parse import parse_qsl

from fastapi.routing import APIRoute
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route

from ticketiq_pg.front.inputs import Refused, refused_value

#: How deep JSON may nest (objects and arrays); PostgreSQL's own limit is the server's
#: stack, and Python's parser gives up near a thousand.
MAX_DEPTH = 64
TOO_DEEP = "nested_too_deep"
FORM = "application/x-www-form-urlencoded"


def _too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth >= limit:
                return True
            inner = item.values() if isinstance(item, dict) else item
            stack.extend((v, depth + 1) for v in inner if isinstance(v, dict | list))
    return False


def check(value: Any, *where: str | int) -> None:
    """Refuse (422) ``value`` (parsed JSON, or a text) if PostgreSQL could not store it or
    it nests past :data:`MAX_DEPTH`."""
    found = refused_value(value, *where)
    if found is not None:
        raise Refused(*found)
    if _too_deep(value):
        raise Refused(list(where), f"JSON nested more than {MAX_DEPTH} deep", TOO_DEEP)


def loads(raw: bytes | str, *where: str | int) -> Any:
    """Parse JSON as the front takes it: ValueError when it is not JSON at all; 422
    (:class:`Refused`) when it holds what PostgreSQL refuses, a number too long for
    Python, or nests past :data:`MAX_DEPTH`."""
    where = where or ("body",)
    try:
        value = json.loads(raw)
    except RecursionError:
        raise Refused(list(where), f"JSON nested more than {MAX_DEPTH} deep",
                      TOO_DEEP) from None
    except json.JSONDecodeError:
        raise
    except UnicodeDecodeError:
        raise
    except ValueError as exc:  # a number of more digits than Python converts
        raise Refused(list(where), f"a number out of range: {exc}") from None
    check(value, *where)
    return value


def form(body: bytes) -> dict[str, str]:
    """A form body, field by field (the first of each name), each checked (422)."""
    fields: dict[str, str] = {}
    for name, value in parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True):
        check(name, "body")
        check(value, "body", name)
        fields.setdefault(name, value)
    return fields


async def check_request(request: Request) -> None:
    """Every value ``request`` carries, checked (422, :class:`Refused`): headers, query,
    path parameters and the body (read here, whole)."""
    for name, value in request.headers.items():
        check(name, "header")
        check(value, "header", name)
    for name, value in request.query_params.multi_items():
        check(name, "query")
        check(value, "query", name)
    for name, value in request.path_params.items():
        check(value, "path", name)
    body = await request.body()
    if not body:
        return
    if request.headers.get("content-type", "").split(";")[0].strip().lower() == FORM:
        form(body)
        return
    try:
        loads(body, "body")
    except ValueError:
        pass  # not JSON: the route that wants JSON refuses it (422) in its own words


def door_route_class(identify: Callable[[str, Request], Awaitable[Any]],
                     used: Callable[[Any], Awaitable[None]] | None = None) -> type[APIRoute]:
    """The API's route class: ``identify(route_path, request)`` verifies the caller first
    (None: a public route), then the door checks every value, then the route runs;
    ``used(identity)`` is awaited once the route answered below 400.  An endpoint marked
    with :func:`refuses_as` answers the door's refusal in its own shape."""

    class DoorRoute(APIRoute):
        def get_route_handler(self) -> Any:
            inner = super().get_route_handler()
            path = self.path
            render = getattr(self.endpoint, "door_refusal", None)

            async def handler(request: Request) -> Any:
                try:
                    identity = await identify(path, request)
                    if identity is not None:
                        request.state.identity = identity
                    await check_request(request)
                except Refused as exc:
                    if render is None:
                        raise
                    return render(exc)
                except ClientDisconnect:
                    return Response(status_code=400)  # the client left: no one to answer
                response = await inner(request)
                if identity is not None and used is not None and response.status_code < 400:
                    await used(identity)
                return response

            return handler

    DoorRoute.door = True  # type: ignore[attr-defined]
    return DoorRoute


def refuses_as(render: Callable[[Refused], Response]) -> Callable[[Any], Any]:
    """Mark an endpoint whose protocol answers a refusal its own way (A2A's JSON-RPC)."""
    def mark(endpoint: Any) -> Any:
        endpoint.door_refusal = render
        return endpoint
    return mark


def guarded(endpoint: Callable[[Request], Awaitable[Response]],
            refused: Callable[[Request, Refused], Response]) -> Callable[
                [Request], Awaitable[Response]]:
    """A Starlette endpoint behind the door: its request checked before it runs, a
    refusal answered by ``refused`` (the console's page)."""
    async def behind(request: Request) -> Response:
        try:
            await check_request(request)
        except Refused as exc:
            return refused(request, exc)
        except ClientDisconnect:
            return Response(status_code=400)
        return await endpoint(request)
    behind.door = True  # type: ignore[attr-defined]
    return behind


def route_table(routes: list[BaseRoute], prefix: str = "") -> Iterator[
        tuple[str, str, BaseRoute]]:
    """(method, path, route) of every route ``routes`` answers, through mounts and
    included routers."""
    try:
        from fastapi.routing import iter_route_contexts
        contexts = [(c.original_route, c.path, c.methods) for c in iter_route_contexts(routes)]
    except ImportError:  # an older FastAPI: included routes are in the list itself
        contexts = [(r, getattr(r, "path", ""), getattr(r, "methods", None)) for r in routes]
    for route, path, methods in contexts:
        if isinstance(route, Mount):
            inner = list(route.routes)
            if not inner:  # an app whose routes cannot be listed: behind no door known
                yield "*", prefix + route.path, route
            yield from route_table(inner, prefix + route.path)
        else:
            for method in sorted(methods or ("GET",)):
                if method != "HEAD":
                    yield method, prefix + str(path), route


def require_door(routes: list[BaseRoute], prefix: str = "") -> None:
    """Refuse (TypeError) an app any of whose routes is not behind the door."""
    for method, path, route in route_table(routes, prefix):
        if isinstance(route, APIRoute):
            behind = getattr(type(route), "door", False)
        elif isinstance(route, Route):
            behind = getattr(route.endpoint, "door", False)
        else:
            behind = False
        if not behind:
            raise TypeError(f"{method} {path} is not behind the front's door "
                            "(ticketiq_pg.front.door): its values would go unchecked")
