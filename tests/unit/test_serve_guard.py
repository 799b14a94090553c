"""The guard's pure decisions (kbgraph.serve.guard): plain paths, allowed origins and hosts."""

from __future__ import annotations

import pytest

from kbgraph.serve.guard import LOOPBACK_ORIGINS, host_allowed, origin_allowed, plain_path
from kbgraph.settings import Settings


@pytest.mark.parametrize(
    ("path", "plain"),
    [
        ("/v1/kb/default/ask", True),
        ("/v1/kb/default/documents/file:///srv/docs/a.md", True),  # a source URI after the first segments
        ("/healthz", True),
        ("/docs/", True),
        ("/v1/kb/../x/documents", False),
        ("/v1/kb//x/documents", False),
        ("/v1//kb/default/ask", False),
        ("/v1/./kb/default/ask", False),
        ("/v1/kb/./ask", False),
        ("/v1/kb/default/..", False),
    ],
)
def test_plain_path(path: str, plain: bool) -> None:
    assert plain_path(path) is plain


def test_origins() -> None:
    assert origin_allowed("http://127.0.0.1:8080", LOOPBACK_ORIGINS)
    assert origin_allowed("http://localhost", LOOPBACK_ORIGINS)
    assert origin_allowed("HTTP://[::1]:9", LOOPBACK_ORIGINS)
    assert not origin_allowed("http://evil.example", LOOPBACK_ORIGINS)
    assert not origin_allowed("http://127.0.0.1.evil.example", LOOPBACK_ORIGINS)
    assert not origin_allowed("http://127.0.0.1:80x", LOOPBACK_ORIGINS)
    assert not origin_allowed("null", LOOPBACK_ORIGINS)
    assert origin_allowed("https://kb.example.com", ["https://kb.example.com"])
    assert not origin_allowed("https://kb.example.com:444", ["https://kb.example.com"])


def test_hosts() -> None:
    assert host_allowed("127.0.0.1:8080", ())
    assert host_allowed("localhost", ())
    assert host_allowed("[::1]:8080", ())
    assert not host_allowed("evil.example", ())
    assert not host_allowed("127.0.0.1.evil.example:80", ())
    assert host_allowed("kb.internal:8080", ["kb.internal"])
    assert host_allowed("a.kb.internal", ["*.kb.internal"])


def test_the_default_origins_setting_is_the_guards() -> None:
    assert tuple(Settings().serve.serve_allowed_origins) == LOOPBACK_ORIGINS
