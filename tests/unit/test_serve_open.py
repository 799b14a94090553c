"""`kbgraph serve --open` (issue 57): the web app's address opened in the browser once the server is up, the
loopback address for a wildcard bind; nothing opened when the server never starts."""

from __future__ import annotations

import threading
import time

import pytest

from kbgraph.cli.serve import app_url, open_when_up

pytestmark = pytest.mark.unit


class FakeServer:
    def __init__(self) -> None:
        self.started = False
        self.should_exit = False


def test_app_url() -> None:
    assert app_url("127.0.0.1", 8080) == "http://127.0.0.1:8080/"
    assert app_url("0.0.0.0", 9000) == "http://127.0.0.1:9000/"
    assert app_url("::", 9000) == "http://[::1]:9000/"
    assert app_url("::1", 80) == "http://[::1]:80/"
    assert app_url("kb.example.org", 8443) == "http://kb.example.org:8443/"


def test_opens_once_the_server_is_up() -> None:
    server, opened = FakeServer(), list[str]()
    thread = threading.Thread(target=open_when_up, args=(server, "http://127.0.0.1:1/", opened.append))
    thread.start()
    time.sleep(0.3)
    assert opened == []  # not before it started
    server.started = True
    thread.join(5)
    assert opened == ["http://127.0.0.1:1/"]


def test_nothing_opened_when_the_server_stops_first() -> None:
    server, opened = FakeServer(), list[str]()
    server.should_exit = True
    open_when_up(server, "http://127.0.0.1:1/", opened.append, timeout=5)
    assert opened == []
