"""The local Neo4j launcher (kbgraph.neo4j_local): error paths, and one real start/status/stop cycle.

Every test uses its own instance folder under tmp_path and free ports, so a developer's server on the
default ports (7687/7474) or the suite's test server is never touched. The jar folder is shared: the first
complete one of $KBGRAPH_NEO4J_LIB, the default instance's ~/.kbgraph/neo4j-local/lib, or one built once per
session into a temporary folder (a Maven build, ~75 s on an empty ~/.m2).
"""

from __future__ import annotations

import os
import socket
import stat
import threading
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from kbgraph.errors import Neo4jLocalError
from kbgraph.neo4j_local import LIB_ENV, Neo4jLocal, Neo4jStatus
from kbgraph.settings import Settings
from tests.conftest import TEST_JVM_OPTIONS


def free_ports(n: int = 2) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


def make_settings(home: Path, **kw: Any) -> Settings:
    bolt, http = free_ports()
    return Settings(home=home, neo4j_bolt_port=bolt, neo4j_http_port=http, **kw)


@pytest.fixture
def no_lib_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LIB_ENV, raising=False)


@pytest.fixture(scope="session")
def shared_lib(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A complete jar folder, reused if one exists, else built once for the session."""
    candidates = [os.environ.get(LIB_ENV), Settings(home=Path("~/.kbgraph")).neo4j_dir / "lib"]
    for c in candidates:
        if c and Neo4jLocal(Settings(home=tmp_path_factory.getbasetemp()), lib_dir=c).is_built():
            return Path(c).expanduser()
    lib = tmp_path_factory.mktemp("neo4j-lib") / "lib"
    return Neo4jLocal(Settings(home=tmp_path_factory.getbasetemp()), lib_dir=lib).build()


def _listen(port: int) -> socket.socket:
    s = socket.socket()
    s.bind(("127.0.0.1", port))
    s.listen()
    return s


# --- ports ----------------------------------------------------------------------------------------------


def test_bolt_port_taken(tmp_path: Path, no_lib_env: None) -> None:
    settings = make_settings(tmp_path)
    with _listen(settings.store.neo4j_bolt_port):
        n = Neo4jLocal(settings)
        with pytest.raises(Neo4jLocalError) as exc:
            n.start()
    msg = str(exc.value)
    assert f"port {settings.store.neo4j_bolt_port} is in use" in msg
    assert "KBGRAPH_NEO4J_BOLT_PORT" in msg
    assert "\n" not in msg
    assert n.status().pid is None and not n.status().running
    assert not (tmp_path / "neo4j-local" / "lib").exists(), "nothing is built when the port check fails"


def test_http_port_taken(tmp_path: Path, no_lib_env: None) -> None:
    settings = make_settings(tmp_path)
    with _listen(settings.store.neo4j_http_port):
        with pytest.raises(Neo4jLocalError, match=rf"port {settings.store.neo4j_http_port} .*KBGRAPH_NEO4J_HTTP_PORT"):
            Neo4jLocal(settings).start()


def test_port_taken_on_all_interfaces(tmp_path: Path, no_lib_env: None) -> None:
    """A listener on 0.0.0.0 (e.g. another Neo4j, a Docker port) also blocks 127.0.0.1."""
    settings = make_settings(tmp_path)
    s = socket.socket()
    s.bind(("0.0.0.0", settings.store.neo4j_bolt_port))
    s.listen()
    with s, pytest.raises(Neo4jLocalError, match=str(settings.store.neo4j_bolt_port)):
        Neo4jLocal(settings).start()


# --- tools --------------------------------------------------------------------------------------------


def test_no_java_no_maven(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_lib_env: None) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    n = Neo4jLocal(make_settings(tmp_path))
    for call in (n.start, n.build):
        with pytest.raises(Neo4jLocalError) as exc:
            call()
        msg = str(exc.value)
        assert "JDK 17" in msg and "Maven" in msg and "apt-get install" in msg
        assert "\n" not in msg
    assert not n.status().built


def _fake_tool(bindir: Path, name: str, script: str) -> None:
    path = bindir / name
    path.write_text("#!/bin/sh\n" + script + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def test_java_too_old(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_lib_env: None) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    _fake_tool(bindir, "java", "echo 'openjdk version \"11.0.22\" 2024-01-16' >&2")
    _fake_tool(bindir, "mvn", "exit 0")
    monkeypatch.setenv("PATH", str(bindir))
    with pytest.raises(Neo4jLocalError, match=r"Java 17 or newer .* is Java 11"):
        Neo4jLocal(make_settings(tmp_path)).start()


def test_java_8_version_string(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_lib_env: None) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    _fake_tool(bindir, "java", "echo 'java version \"1.8.0_402\"' >&2")
    monkeypatch.setenv("PATH", str(bindir))
    with pytest.raises(Neo4jLocalError, match="is Java 8"):
        Neo4jLocal(make_settings(tmp_path)).build()


def test_maven_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_lib_env: None) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    _fake_tool(bindir, "java", "echo 'openjdk version \"17.0.15\" 2025-04-15' >&2")
    monkeypatch.setenv("PATH", str(bindir))
    with pytest.raises(Neo4jLocalError, match=r"mvn \(Maven\) is not on PATH.*apt-get install maven"):
        Neo4jLocal(make_settings(tmp_path)).build()


def test_maven_failure_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_lib_env: None) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    _fake_tool(bindir, "java", "echo 'openjdk version \"17.0.15\" 2025-04-15' >&2")
    _fake_tool(bindir, "mvn", "echo '[ERROR] Could not transfer artifact org.neo4j:neo4j:pom:5.26.30'; exit 1")
    monkeypatch.setenv("PATH", str(bindir))
    with pytest.raises(Neo4jLocalError) as exc:
        Neo4jLocal(make_settings(tmp_path)).build()
    msg = str(exc.value)
    assert "Could not transfer artifact" in msg and "Maven Central" in msg and "\n" not in msg


def test_status_of_a_fresh_instance(tmp_path: Path, no_lib_env: None) -> None:
    settings = make_settings(tmp_path)
    st = Neo4jLocal(settings).status()
    assert not st.running and st.pid is None and not st.built
    assert st.bolt_uri == f"bolt://127.0.0.1:{settings.store.neo4j_bolt_port}"
    assert st.browser_url == f"http://127.0.0.1:{settings.store.neo4j_http_port}/browser/"
    assert st.home == (tmp_path / "neo4j-local").resolve()


def test_stop_when_not_running_is_a_noop(tmp_path: Path, no_lib_env: None) -> None:
    n = Neo4jLocal(make_settings(tmp_path))
    (n.run_dir).mkdir(parents=True)
    n.pid_file.write_text(f"{os.getpid()}\n")  # a live pid that is not a Neo4j server: must not be killed
    assert not n.stop(timeout=1).running
    assert not n.pid_file.exists()


def test_short_password(tmp_path: Path, shared_lib: Path) -> None:
    n = Neo4jLocal(make_settings(tmp_path, neo4j_password="short"), lib_dir=shared_lib)
    with pytest.raises(Neo4jLocalError, match="at least 8 characters.*KBGRAPH_NEO4J_PASSWORD"):
        n.start()


def test_server_exits_during_startup(tmp_path: Path, shared_lib: Path) -> None:
    """An invalid heap size makes the JVM exit at once: the error carries the JVM's reason."""
    n = Neo4jLocal(make_settings(tmp_path, neo4j_heap="lots"), lib_dir=shared_lib)
    with pytest.raises(Neo4jLocalError, match=r"exited during start-up: Invalid maximum heap size: -Xmxlots"):
        n.start(timeout=60)
    assert n.status().pid is None


def test_jvm_options_reach_the_jvm(tmp_path: Path, shared_lib: Path) -> None:
    """Setting neo4j_jvm_options is passed to the server's JVM (an option it does not know stops it, with the
    JVM's reason); one that cannot be split is a clear error before anything starts."""
    n = Neo4jLocal(
        make_settings(
            tmp_path, neo4j_password="options-pw", neo4j_jvm_options="-XX:+UseSerialGC -XX:+KbgraphNoSuchOption"
        ),
        lib_dir=shared_lib,
    )
    try:
        with pytest.raises(Neo4jLocalError, match=r"Unrecognized VM option 'KbgraphNoSuchOption'"):
            n.start(timeout=60)
        assert n.status().pid is None
    finally:
        n.stop()  # a server that started all the same is not left running
    n = Neo4jLocal(make_settings(tmp_path / "b", neo4j_jvm_options="-Dx='unclosed"), lib_dir=shared_lib)
    with pytest.raises(Neo4jLocalError, match="KBGRAPH_NEO4J_JVM_OPTIONS cannot be split"):
        n.start(timeout=60)


# --- a real server ---------------------------------------------------------------------------------------


@pytest.mark.neo4j
@pytest.mark.slow
def test_start_status_stop_cycle(tmp_path: Path, shared_lib: Path) -> None:
    from neo4j import GraphDatabase

    settings = make_settings(
        tmp_path,
        neo4j_password="cycle-test-pw",
        neo4j_heap="512m",
        neo4j_pagecache="64m",
        neo4j_jvm_options=TEST_JVM_OPTIONS,
    )
    n = Neo4jLocal(settings, lib_dir=shared_lib)
    try:
        # Two concurrent callers, separate objects: one server, both see it.
        results: list[Neo4jStatus] = []
        others = [Neo4jLocal(settings, lib_dir=shared_lib) for _ in range(2)]
        threads = [threading.Thread(target=lambda o=o: results.append(o.start(timeout=180))) for o in others]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(results) == 2 and results[0].pid == results[1].pid and results[0].running

        st = n.start()  # idempotent
        assert st.running and st.built and st.pid == results[0].pid
        assert n.status().running

        with urllib.request.urlopen(st.browser_url, timeout=10) as resp:
            assert b"<title>Neo4j Browser</title>" in resp.read()

        with GraphDatabase.driver(st.bolt_uri, auth=("neo4j", "cycle-test-pw")) as driver:
            records, _, _ = driver.execute_query("CREATE (n:Probe {x: 41}) RETURN n.x + 1 AS y")
            assert records[0]["y"] == 42
            records, _, _ = driver.execute_query("CALL dbms.components() YIELD versions RETURN versions[0] AS v")
            assert records[0]["v"].startswith("5.26")

        wrong = Neo4jLocal(settings.updated({"neo4j_password": "not-the-password"}), lib_dir=shared_lib)
        with pytest.raises(Neo4jLocalError, match=r"password differs.*auth\.ini"):
            wrong.start()
        assert n.status().running, "a password mismatch must not stop the running server"

        # The port check does not confuse our own running server with a foreign one.
        assert n.start().pid == st.pid
    finally:
        stopped = n.stop(timeout=60)
    assert not stopped.running and stopped.pid is None
    assert not n.pid_file.exists()
    with socket.socket() as s:  # the ports are released (SO_REUSEADDR: client sockets linger in TIME_WAIT)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", settings.store.neo4j_bolt_port))
