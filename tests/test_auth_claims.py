"""An OAuth issuer's introspection answer with claims of the wrong type or out of range refuses the token (401).

Through the real HTTP path (``memtools.mcp.http`` under Starlette's ``TestClient``, the local
issuer of ``test_mcp_http_guard``): an ``exp`` of ``Infinity`` or ``NaN`` once made every request
with the token a 500, and an ``exp`` of ``"1"`` made a token that never expired.
"""

from __future__ import annotations

import logging
import math

import pytest

from mcp_support import shared_memory
from memtools.mcp.http import HttpOptions, authenticator
from test_mcp_http_guard import Issuer, request, served

AUDIENCE = "memtools-test"
FUTURE = 4_000_000_000

BAD = {
    "exp a string": {"exp": "1"},
    "exp a future string": {"exp": str(FUTURE)},
    "exp null": {"exp": None},
    "exp Infinity": {"exp": math.inf},
    "exp -Infinity": {"exp": -math.inf},
    "exp NaN": {"exp": math.nan},
    "exp negative": {"exp": -5},
    "exp zero": {"exp": 0},
    "exp true": {"exp": True},
    "exp past year 9999": {"exp": 10**20},
    "exp a list": {"exp": [FUTURE]},
    "active the string true": {"active": "true"},
    "active 1": {"active": 1},
    "scope a list": {"scope": ["memtools:write"]},
    "scope a number": {"scope": 5},
    "sub a number": {"sub": 5},
    "sub an object": {"sub": {"name": "ann"}},
    "client_id a number": {"client_id": 7},
    "iss a number": {"iss": 5},
    "aud a number": {"aud": 5},
    "aud a list with a number": {"aud": [AUDIENCE, 3]},
    "aud an object": {"aud": {AUDIENCE: True}},
}

GOOD = {
    "every claim": {"sub": "ann", "client_id": "claude", "scope": "memtools:read"},
    "no exp": {"exp": ...},
    "a fractional exp": {"exp": FUTURE + 0.5},
    "unset members as null": {"sub": None, "client_id": None, "scope": None, "iss": None},
    "aud a list": {"aud": ["other", AUDIENCE]},
}


@pytest.fixture(scope="module")
def issuer_client(tmp_path_factory):
    """One served app with a local issuer; each test adds its token to the issuer's table."""
    issuer = Issuer()
    options = HttpOptions(auth_issuer=issuer.url, auth_audience=AUDIENCE)
    try:
        with served(shared_memory(tmp_path_factory), options, authenticator(options)) as client:
            yield issuer, client
    finally:
        issuer.close()


def claims(issuer: Issuer, change: dict) -> dict:
    base = {"active": True, "iss": issuer.url, "aud": AUDIENCE, "exp": FUTURE, **change}
    return {name: value for name, value in base.items() if value is not ...}


@pytest.mark.parametrize("change", BAD.values(), ids=BAD.keys())
@pytest.mark.parametrize("path", ["/mcp", "/health"])
def test_a_claim_of_the_wrong_type_or_range_refuses_the_token(issuer_client, caplog, change, path):
    issuer, client = issuer_client
    token = f"bad-{len(issuer.tokens)}"
    issuer.tokens[token] = claims(issuer, change)
    with caplog.at_level(logging.INFO, logger="memtools.mcp.auth"):
        answer = request(client, path, {"Authorization": f"Bearer {token}"})
    assert answer.status_code == 401, answer.text
    assert 'error="invalid_token"' in answer.headers["www-authenticate"]
    if change.get("active", True) is True:  # an inactive token is refused silently, as before
        name = next(iter(change))
        assert any(r.getMessage().startswith("refused a token: ") and name in r.getMessage()
                   for r in caplog.records), caplog.text


@pytest.mark.parametrize("change", GOOD.values(), ids=GOOD.keys())
def test_well_formed_claims_still_pass(issuer_client, change):
    issuer, client = issuer_client
    token = f"good-{len(issuer.tokens)}"
    issuer.tokens[token] = claims(issuer, change)
    assert request(client, "/mcp", {"Authorization": f"Bearer {token}"}).status_code == 200
    assert request(client, "/health", {"Authorization": f"Bearer {token}"}).status_code == 200
