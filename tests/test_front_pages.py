"""The front's pages load nothing from elsewhere, and every answer carries a
Content-Security-Policy (issue 46, finding 13).

With ``TICKETIQ_HTTP_DOCS`` on, ``/docs`` and ``/redoc`` used to be FastAPI's Swagger UI
and ReDoc, scripts loaded from a CDN with no policy: a script from elsewhere would run
with the front's origin, beside the console's cookie.  They are now rendered by the front
from its OpenAPI document, with no script, under a policy that allows only their own
stylesheet; the console's pages are under the same policy, and every other answer (the
API's JSON, its refusals, a 404) under one that allows nothing.
"""

from __future__ import annotations

import base64
import hashlib
import re
import time

import httpx
import jwt

from ticketiq_pg.front.app import create_app
from ticketiq_pg.front.settings import FrontSettings

SECRET = "j" * 32


def directives(policy: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for part in filter(None, (p.strip() for p in policy.split(";"))):
        name, *sources = part.split()
        found[name] = sources
    return found


async def test_the_schema_pages_run_no_script_and_every_answer_has_a_policy() -> None:
    app = create_app(object(), settings=FrontSettings(  # type: ignore[arg-type]
        docs=True, jwt_secret=SECRET, jwt_issuer="iss", jwt_audience="aud"))
    token = jwt.encode({"sub": "dana", "iss": "iss", "aud": "aud",
                        "exp": int(time.time()) + 300}, SECRET)
    auth = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://app") as http:
        for path in ("/docs", "/redoc"):
            page = await http.get(path, headers=auth)
            assert page.status_code == 200, page.text
            assert page.headers["content-type"].startswith("text/html")
            # The document's routes, rendered here ...
            assert "/runs/{run_id}/signals/{name}" in page.text and "RunRequest" in page.text
            # ... with no script and nothing from another origin.
            assert "<script" not in page.text.lower(), path
            assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page.text), path
            policy = directives(page.headers["content-security-policy"])
            assert policy["default-src"] == ["'none'"] and "script-src" not in policy
            assert policy["frame-ancestors"] == ["'none'"]
            # The one inline stylesheet is the one the policy names, by its hash.
            styles = re.findall(r"<style>(.*?)</style>", page.text, re.S)
            assert styles and policy["style-src"] == [
                f"'sha256-{base64.b64encode(hashlib.sha256(s.encode()).digest()).decode()}'"
                for s in styles[:1]] and len(set(styles)) == 1
            assert not any("unsafe" in s for v in policy.values() for s in v)
        # Every other answer: a policy that loads nothing.
        for path, headers, status in (("/openapi.json", auth, 200), ("/healthz", {}, 200),
                                      ("/runs?key=k", {}, 401), ("/nowhere", auth, 404),
                                      ("/healthz?x=%00", {}, 422)):
            got = await http.get(path, headers=headers)
            assert got.status_code == status, (path, got.text)
            policy = directives(got.headers["content-security-policy"])
            assert policy["default-src"] == ["'none'"], (path, policy)
            assert got.headers["x-content-type-options"] == "nosniff"
        login = await http.get("/console/login")
        assert login.status_code == 200
        assert directives(login.headers["content-security-policy"])["form-action"] == [
            "'self'"]
