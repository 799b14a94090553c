"""The local Neo4j server process: configuration, start, readiness, status and stop (``Neo4jLocal``).

See the package docstring (``kbgraph.neo4j_local``) for the instance folder and the jar folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import subprocess
from pathlib import Path

from filelock import FileLock, Timeout
from pydantic import BaseModel

from kbgraph.errors import Neo4jLocalError
from kbgraph.neo4j_local.browser_style import post_connect_cmd
from kbgraph.neo4j_local.build import MAVEN_TIMEOUT, build_jars, check_tools, is_built
from kbgraph.neo4j_local.logs import last_meaningful_line, meaningful, startup_failure
from kbgraph.process import pid_alive, terminate, wait_ready
from kbgraph.process import port_free as _port_free
from kbgraph.process import port_open as _port_open
from kbgraph.settings import Settings

__all__ = ["LIB_ENV", "Neo4jLocal", "Neo4jStatus"]

LIB_ENV = "KBGRAPH_NEO4J_LIB"
"""Environment variable naming a shared jar folder, used instead of ``<neo4j_dir>/lib``."""

ENTRY_POINT = "org.neo4j.server.CommunityEntryPoint"
ADMIN_TOOL = "org.neo4j.cli.AdminTool"
MIN_PASSWORD = 8  # Neo4j 5's dbms.security.auth_minimum_password_length default


class Neo4jStatus(BaseModel):
    """State of one local Neo4j instance.

    ``running`` is True once the server process is alive and its Bolt port accepts connections; ``pid`` is
    set whenever the process is alive (also while it is still starting). ``built`` says whether the jar
    folder is complete.
    """

    running: bool
    pid: int | None
    bolt_uri: str
    http_url: str
    browser_url: str
    home: Path
    built: bool
    log_file: Path


class Neo4jLocal:
    """Build, start, stop and inspect one local Neo4j 5 Community server.

    ``settings`` supplies the instance folder (``neo4j_dir``), the ports, the password, heap and page cache.
    ``lib_dir`` (else ``$KBGRAPH_NEO4J_LIB``, else ``<neo4j_dir>/lib``) is the jar folder; it may be shared
    by several instances.
    """

    def __init__(self, settings: Settings, lib_dir: Path | str | None = None) -> None:
        self.settings = settings
        self.home: Path = Path(settings.neo4j_dir).expanduser().resolve()
        if lib_dir is None and os.environ.get(LIB_ENV):
            lib_dir = os.environ[LIB_ENV]
        self.lib_dir: Path = Path(lib_dir).expanduser().resolve() if lib_dir is not None else self.home / "lib"
        self.conf_dir = self.home / "conf"
        self.data_dir = self.home / "data"
        self.logs_dir = self.home / "logs"
        self.run_dir = self.home / "run"
        self.pid_file = self.run_dir / "neo4j.pid"
        self.console_log = self.logs_dir / "console.log"
        self.auth_file = self.data_dir / "dbms" / "auth.ini"
        self._lock_path = self.home / "launcher.lock"
        self._proc: subprocess.Popen[bytes] | None = None

    # --- derived ------------------------------------------------------------------------------------
    def _password(self) -> str:
        pw = self.settings.store.neo4j_password  # a str if the settings came from model_copy(update=...)
        return pw.get_secret_value() if hasattr(pw, "get_secret_value") else str(pw)

    @property
    def bolt_uri(self) -> str:
        return f"bolt://127.0.0.1:{self.settings.store.neo4j_bolt_port}"

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.settings.store.neo4j_http_port}"

    def _lock(self, timeout: float) -> FileLock:
        self.home.mkdir(parents=True, exist_ok=True)
        return FileLock(str(self._lock_path), timeout=timeout)

    @contextlib.contextmanager
    def _locked(self, timeout: float):
        try:
            with self._lock(timeout):
                yield
        except Timeout:
            raise Neo4jLocalError(
                f"another kbgraph process is starting or stopping the local Neo4j in {self.home} "
                f"(lock {self._lock_path} held for {timeout:.0f} s); wait for it, or delete the lock file "
                "if no kbgraph process is running"
            ) from None

    # --- build --------------------------------------------------------------------------------------
    def is_built(self) -> bool:
        """True if the jar folder holds the complete jar set for the bundled pom.xml."""
        return is_built(self.lib_dir)

    def build(self, force: bool = False) -> Path:
        """Copy the Neo4j jars from Maven Central into the jar folder once; return that folder.

        Reuses a complete folder unless ``force``. Raises Neo4jLocalError if java (>= 17) or mvn is missing,
        if Maven fails (e.g. no access to Maven Central), if another process holds the build lock, or if
        ``force`` is given while this instance's server runs.
        """
        if not force and self.is_built():
            return self.lib_dir
        if force and self._read_pid() is not None:
            raise Neo4jLocalError(
                f"the local Neo4j in {self.home} is running from {self.lib_dir}; stop it before rebuilding"
            )
        return build_jars(self.lib_dir, force)

    # --- configuration ------------------------------------------------------------------------------
    def _write_conf(self) -> None:
        s = self.settings
        for d in (
            self.conf_dir,
            self.data_dir,
            self.logs_dir,
            self.run_dir,
            self.home / "import",
            self.home / "plugins",
        ):
            d.mkdir(parents=True, exist_ok=True)
        conf = {
            "server.default_listen_address": "127.0.0.1",
            "server.default_advertised_address": "127.0.0.1",
            "server.bolt.enabled": "true",
            "server.bolt.listen_address": f"127.0.0.1:{s.store.neo4j_bolt_port}",
            "server.bolt.advertised_address": f"127.0.0.1:{s.store.neo4j_bolt_port}",
            "server.http.enabled": "true",
            "server.http.listen_address": f"127.0.0.1:{s.store.neo4j_http_port}",
            "server.http.advertised_address": f"127.0.0.1:{s.store.neo4j_http_port}",
            "server.https.enabled": "false",
            "dbms.security.auth_enabled": "true",
            "server.directories.data": str(self.data_dir),
            "server.directories.logs": str(self.logs_dir),
            "server.directories.run": str(self.run_dir),
            "server.directories.import": str(self.home / "import"),
            "server.directories.plugins": str(self.home / "plugins"),
            "server.memory.pagecache.size": s.store.neo4j_pagecache,
            "dbms.usage_report.enabled": "false",
        }
        with contextlib.suppress(OSError, ValueError):  # the kbgraph Browser style on connect
            conf["browser.post_connect_cmd"] = post_connect_cmd()
        text = "# Written by kbgraph.neo4j_local on every start; edit kbgraph settings instead.\n"
        text += "".join(f"{k}={v}\n" for k, v in conf.items())
        (self.conf_dir / "neo4j.conf").write_text(text)

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["NEO4J_HOME"] = str(self.home)
        env["NEO4J_CONF"] = str(self.conf_dir)
        return env

    def _jvm_options(self) -> list[str]:
        """Setting neo4j_jvm_options as arguments of the server's JVM (split as a shell splits words; the one-off
        admin command that sets the password runs with the JVM's defaults); Neo4jLocalError if it cannot be split
        (an unclosed quote)."""
        try:
            return shlex.split(self.settings.store.neo4j_jvm_options)
        except ValueError as exc:
            raise Neo4jLocalError(
                f"KBGRAPH_NEO4J_JVM_OPTIONS cannot be split into words ({exc}); check its quotes"
            ) from None

    def _set_initial_password(self, java: str) -> None:
        password = self._password()
        if len(password) < MIN_PASSWORD:
            raise Neo4jLocalError(
                f"the Neo4j password must have at least {MIN_PASSWORD} characters; "
                "set KBGRAPH_NEO4J_PASSWORD (or NEO4J_PASSWORD) to a longer one"
            )
        cmd = [java, "-cp", f"{self.lib_dir}/*", ADMIN_TOOL, "dbms", "set-initial-password", password]
        try:
            out = subprocess.run(
                cmd, env=self._env(), cwd=self.home, capture_output=True, text=True, timeout=300, check=False
            )
        except subprocess.TimeoutExpired:
            raise Neo4jLocalError(
                "setting the initial Neo4j password took over 300 s; retry, and check the machine's load"
            ) from None
        if out.returncode != 0 or not self.auth_file.exists():
            why = meaningful(out.stderr + "\n" + out.stdout) or f"exit code {out.returncode}"
            raise Neo4jLocalError(
                f"setting the initial Neo4j password failed: {why}; fix the setting it names "
                f"(KBGRAPH_NEO4J_*) or check {self.home} is writable, then retry"
            )

    # --- process ------------------------------------------------------------------------------------
    def _read_pid(self) -> int | None:
        """The pid from the pid file if that process is alive and is this instance's server."""
        try:
            pid = int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None
        if not pid_alive(pid):
            return None
        cmdline = Path(f"/proc/{pid}/cmdline")
        if cmdline.exists():
            with contextlib.suppress(OSError):
                args = cmdline.read_bytes().split(b"\0")
                if ENTRY_POINT.encode() not in args or f"--home-dir={self.home}".encode() not in args:
                    return None  # the pid was reused by another process
        return pid

    def _verify_bolt(self, timeout: float = 5.0) -> bool:
        """True if Bolt accepts the configured user and password; False if it does not answer yet.

        Raises Neo4jLocalError if the server rejects the password.
        """
        from neo4j import GraphDatabase
        from neo4j.exceptions import AuthError, DriverError, Neo4jError

        if not _port_open(self.settings.store.neo4j_bolt_port):
            return False
        auth = (self.settings.store.neo4j_username, self._password())
        try:
            with GraphDatabase.driver(self.bolt_uri, auth=auth, connection_timeout=timeout) as driver:
                driver.verify_connectivity()
            return True
        except AuthError:
            raise Neo4jLocalError(
                f"the local Neo4j in {self.home} rejects user '{self.settings.store.neo4j_username}' with the "
                f"configured password (the stored password differs); set KBGRAPH_NEO4J_PASSWORD to the stored "
                f"one, or reset it: stop the server and delete {self.auth_file}"
            ) from None
        except (DriverError, Neo4jError, OSError):
            return False

    def status(self) -> Neo4jStatus:
        """Current state of this instance; never starts or builds anything. Raises nothing."""
        pid = self._read_pid()
        return Neo4jStatus(
            running=pid is not None and _port_open(self.settings.store.neo4j_bolt_port),
            pid=pid,
            bolt_uri=self.bolt_uri,
            http_url=self.http_url,
            browser_url=f"{self.http_url}/browser/",
            home=self.home,
            built=self.is_built(),
            log_file=self.console_log,
        )

    def start(self, wait: bool = True, timeout: float = 120) -> Neo4jStatus:
        """Start the server (building the jar folder on first use) and return its status.

        Idempotent: if this instance already runs, waits for Bolt (if ``wait``) and returns its status.
        With ``wait`` it returns once Bolt accepts the configured credentials, at most ``timeout`` seconds
        after launch. Raises Neo4jLocalError if a port is taken by another process, java/mvn is missing,
        the build fails, the password is too short or differs from the stored one, the server exits
        during start-up (message: the last meaningful log line), or it does not answer within ``timeout``
        (it is then stopped).
        """
        with self._locked(timeout + MAVEN_TIMEOUT):
            pid = self._read_pid()
            if pid is not None:
                if wait:
                    self._wait_ready(pid, timeout)
                return self.status()
            self.pid_file.unlink(missing_ok=True)

            s = self.settings
            for port, env in (
                (s.store.neo4j_bolt_port, "KBGRAPH_NEO4J_BOLT_PORT"),
                (s.store.neo4j_http_port, "KBGRAPH_NEO4J_HTTP_PORT"),
            ):
                if not _port_free(port):
                    raise Neo4jLocalError(
                        f"port {port} is in use by another process; set {env} to a free port or stop that process"
                    )
            if s.store.neo4j_bolt_port == s.store.neo4j_http_port:
                raise Neo4jLocalError(
                    f"the Bolt and HTTP ports are both {s.store.neo4j_bolt_port}; set KBGRAPH_NEO4J_HTTP_PORT "
                    "to a different port"
                )

            java = check_tools(need_maven=not self.is_built())
            self.build()
            self._write_conf()
            if not self.auth_file.exists():
                self._set_initial_password(java)

            if self.console_log.exists():
                self.console_log.replace(self.logs_dir / "console.log.1")
            cmd = [
                java,
                f"-Xmx{s.store.neo4j_heap}",
                "-XX:+ExitOnOutOfMemoryError",
                "-Dfile.encoding=UTF-8",
                *self._jvm_options(),
                "-cp",
                f"{self.lib_dir}/*",
                ENTRY_POINT,
                f"--home-dir={self.home}",
                f"--config-dir={self.conf_dir}",
                "--console-mode",
            ]
            with open(self.console_log, "ab") as log:
                try:
                    self._proc = subprocess.Popen(
                        cmd,
                        cwd=self.home,
                        env=self._env(),
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                except OSError as e:
                    raise Neo4jLocalError(f"cannot run {java}: {e}; check the JDK installation") from None
            self.pid_file.write_text(f"{self._proc.pid}\n")
            if wait:
                try:
                    self._wait_ready(self._proc.pid, timeout)
                except Neo4jLocalError:
                    self._terminate(self._proc.pid, 30)
                    self.pid_file.unlink(missing_ok=True)
                    raise
            return self.status()

    def _http_ready(self) -> bool:
        """True if the HTTP port serves this server's discovery document (it names our Bolt port)."""
        import urllib.error
        import urllib.request

        if not _port_open(self.settings.store.neo4j_http_port):
            return False
        req = urllib.request.Request(self.http_url + "/", headers={"Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=3) as resp:
                doc = json.loads(resp.read().decode("utf-8", "replace"))
        except (OSError, ValueError, urllib.error.URLError):
            return False
        return str(doc.get("bolt_direct", "")).endswith(f":{self.settings.store.neo4j_bolt_port}")

    def _wait_ready(self, pid: int, timeout: float) -> None:
        """Return once Bolt accepts the credentials and HTTP serves this server (Bolt comes up a few seconds
        before HTTP); Neo4jLocalError if the process exits, logs a failed start, or is not ready in time."""
        bolt_ok = False

        def ready() -> bool:
            nonlocal bolt_ok
            why = startup_failure(self.console_log)
            if why:
                raise Neo4jLocalError(
                    f"the local Neo4j failed to start and was stopped: {why}; fix what it names (a port in use: "
                    f"KBGRAPH_NEO4J_BOLT_PORT / KBGRAPH_NEO4J_HTTP_PORT) and retry; full log: {self.console_log}"
                )
            bolt_ok = bolt_ok or self._verify_bolt()
            return bolt_ok and self._http_ready()

        wait_ready(
            pid,
            ready,
            timeout,
            exited=lambda: Neo4jLocalError(
                f"the local Neo4j exited during start-up: "
                f"{last_meaningful_line(self.console_log, self.logs_dir / 'debug.log')}; fix what it names "
                f"(kbgraph's KBGRAPH_NEO4J_* settings) and retry; full log: {self.console_log}"
            ),
            late=lambda: Neo4jLocalError(
                f"the local Neo4j did not answer on {self.bolt_uri} and {self.http_url} within "
                f"{timeout:.0f} s and was stopped; retry with a longer timeout, or see {self.console_log}"
            ),
        )

    def _terminate(self, pid: int, timeout: float) -> None:
        terminate(pid, timeout, child=self._proc)
        if self._proc is not None and self._proc.pid == pid:
            self._proc = None

    def stop(self, timeout: float = 60) -> Neo4jStatus:
        """Stop the server: SIGTERM, then SIGKILL after ``timeout`` seconds; a no-op if it is not running.

        Returns the status afterwards. Raises Neo4jLocalError only if another process holds the launcher
        lock for longer than ``timeout`` + 120 seconds, or the process survives SIGKILL.
        """
        with self._locked(timeout + 120):
            pid = self._read_pid()
            if pid is not None:
                self._terminate(pid, timeout)
                if pid_alive(pid):
                    raise Neo4jLocalError(
                        f"the local Neo4j (pid {pid}) survived SIGKILL; check the process with ps and kill it"
                    )
            self.pid_file.unlink(missing_ok=True)
            return self.status()
