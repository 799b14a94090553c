"""A real, local Neo4j 5 Community server for machines without Docker.

The server is assembled from Maven Central, not downloaded as a tarball: ``docker/neo4j-local/pom.xml``
(shipped in the wheel as ``kbgraph._neo4j_local``) lists the Neo4j kernel, its HTTP server and Neo4j
Browser, and ``mvn dependency:copy-dependencies`` copies those jars (about 214, 137 MB) into one ``lib``
folder. That takes about a minute and a half on an empty ``~/.m2`` and is done once; a marker file in
``lib`` records a complete jar set.

:class:`Neo4jLocal` then runs ``java -cp '<lib>/*' org.neo4j.server.CommunityEntryPoint`` detached from the
calling process, with its own configuration written to ``<neo4j_dir>/conf/neo4j.conf``: it listens on
127.0.0.1 only (Bolt on ``neo4j_bolt_port``, HTTP and the Browser on ``neo4j_http_port``), with
authentication on and the initial password set from ``neo4j_password`` before the first start. Data, logs,
run, import and plugins folders live under ``<neo4j_dir>`` (default ``~/.kbgraph/neo4j-local``); the console
output goes to ``<neo4j_dir>/logs/console.log``. The server outlives the Python process that started it:
:meth:`Neo4jLocal.stop` stops it. A file lock (``<neo4j_dir>/launcher.lock``) and a pid file keep two callers
from launching two servers on one folder.

The jar folder defaults to ``<neo4j_dir>/lib``; ``Neo4jLocal(settings, lib_dir=...)`` or the environment
variable ``KBGRAPH_NEO4J_LIB`` point several instances (e.g. tests) at one shared, already-built folder.

Needs: a JDK/JRE 17 or newer (``java``) and, for the one-off build, Maven (``mvn``) with access to Maven Central.
Every failure raises :class:`kbgraph.errors.Neo4jLocalError` with a one-line message that names the fix.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from filelock import FileLock, Timeout
from pydantic import BaseModel

from kbgraph.process import pid_alive, terminate
from kbgraph.process import port_free as _port_free
from kbgraph.process import port_open as _port_open
from kbgraph.errors import Neo4jLocalError
from kbgraph.settings import Settings

__all__ = ["Neo4jLocal", "Neo4jStatus", "LIB_ENV", "MIN_JAVA"]

LIB_ENV = "KBGRAPH_NEO4J_LIB"
"""Environment variable naming a shared jar folder, used instead of ``<neo4j_dir>/lib``."""

MIN_JAVA = 17
ENTRY_POINT = "org.neo4j.server.CommunityEntryPoint"
ADMIN_TOOL = "org.neo4j.cli.AdminTool"
MARKER = ".kbgraph-complete.json"
MIN_PASSWORD = 8  # Neo4j 5's dbms.security.auth_minimum_password_length default
MAVEN_TIMEOUT = 1800.0


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


def _pom_text() -> str:
    """The bundled pom.xml: from the installed package, else from the source tree."""
    try:
        from importlib.resources import files

        return (files("kbgraph._neo4j_local") / "pom.xml").read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError, OSError):
        pass
    src = Path(__file__).resolve().parents[1] / "docker" / "neo4j-local" / "pom.xml"
    try:
        return src.read_text(encoding="utf-8")
    except OSError:
        raise Neo4jLocalError(
            "the Neo4j pom.xml is missing from the kbgraph installation; reinstall kbgraph "
            "(pip install --force-reinstall kbgraph)"
        ) from None


def _java_major(java: str) -> int | None:
    """Major version from ``java -version`` (``"17.0.15"`` -> 17, ``"1.8.0_402"`` -> 8), None if unreadable."""
    try:
        out = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not m:
        return None
    major = int(m.group(1))
    if major == 1 and m.group(2):
        major = int(m.group(2))
    return major


_LOG_PREFIX = re.compile(r"^\d{4}-\d\d-\d\d[ T]\S+\s+")


def _one_line(text: str, limit: int = 300) -> str:
    text = _LOG_PREFIX.sub("", " ".join(text.split()))
    return text if len(text) <= limit else text[: limit - 3] + "..."


_GENERIC = re.compile(r"^Error: (Could not create the Java Virtual Machine|A fatal exception has occurred)")


def _meaningful(text: str) -> str | None:
    """The cause of a failure in Java output, as one line.

    The first error line (ERROR, an exception, ``Invalid ...``), followed by the root cause (the last
    ``Caused by:``) when that adds something; else the last line. Stack frames and the JVM's generic
    "Could not create the Java Virtual Machine" lines are skipped.
    """
    lines = [
        ln.strip() for ln in text.splitlines()
        if ln.strip() and not ln.lstrip().startswith(("at ", "...")) and not _GENERIC.match(ln.strip())
    ][-400:]
    if not lines:
        return None
    tops = [ln for ln in lines if re.search(r"\bERROR\b|Exception|Error\b|^Invalid", ln)
            and not ln.startswith("Caused by:")]
    causes = [ln for ln in lines if ln.startswith("Caused by:")]
    if not tops and not causes:
        return _one_line(lines[-1])
    top = _one_line(tops[0], 220) if tops else None
    if causes:
        root = causes[-1].removeprefix("Caused by:").strip()
        msg = root.split(": ", 1)[-1]
        if top is None:
            return _one_line(root, 220)
        if msg[:60] not in tops[0]:
            return f"{top} (root cause: {_one_line(root, 180)})"
    return top


def _last_meaningful_line(*logs: Path) -> str:
    """The root cause of a failed start from the first of ``logs`` that has any output."""
    for log in logs:
        try:
            why = _meaningful(log.read_text(errors="replace"))
        except OSError:
            continue
        if why:
            return why
    return "no log output"


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
        self.lib_dir: Path = (
            Path(lib_dir).expanduser().resolve() if lib_dir is not None else self.home / "lib"
        )
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
        pw = self.settings.neo4j_password  # a str if the settings came from model_copy(update=...)
        return pw.get_secret_value() if hasattr(pw, "get_secret_value") else str(pw)

    @property
    def bolt_uri(self) -> str:
        return f"bolt://127.0.0.1:{self.settings.neo4j_bolt_port}"

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.settings.neo4j_http_port}"

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
        try:
            marker = json.loads((self.lib_dir / MARKER).read_text())
        except (OSError, ValueError):
            return False
        if marker.get("pom_sha256") != hashlib.sha256(_pom_text().encode()).hexdigest():
            return False
        jars = marker.get("jars") or []
        return bool(jars) and all((self.lib_dir / j).is_file() for j in jars)

    def _check_tools(self, need_maven: bool) -> str:
        """Path of a java >= 17; also checks mvn if needed. Raises Neo4jLocalError naming the fix."""
        java = shutil.which("java")
        mvn = shutil.which("mvn") if need_maven else "not needed"
        if java is None and mvn is None:
            raise Neo4jLocalError(
                f"java (JDK {MIN_JAVA}+) and mvn (Maven) are not on PATH; install them "
                f"(e.g. apt-get install openjdk-{MIN_JAVA}-jdk-headless maven) or run Neo4j with Docker "
                "(docker compose -f docker/docker-compose.yml up) and set KBGRAPH_URI"
            )
        if java is None:
            raise Neo4jLocalError(
                f"java (JDK {MIN_JAVA}+) is not on PATH; install a JDK {MIN_JAVA} or newer "
                f"(e.g. apt-get install openjdk-{MIN_JAVA}-jdk-headless) or run Neo4j with Docker and set KBGRAPH_URI"
            )
        major = _java_major(java)
        if major is None or major < MIN_JAVA:
            found = "an unreadable version" if major is None else f"Java {major}"
            raise Neo4jLocalError(
                f"Neo4j 5 needs Java {MIN_JAVA} or newer but {java} is {found}; install a JDK {MIN_JAVA}+ "
                f"(e.g. apt-get install openjdk-{MIN_JAVA}-jdk-headless) and put it first on PATH"
            )
        if mvn is None:
            raise Neo4jLocalError(
                "mvn (Maven) is not on PATH; it is needed once to fetch Neo4j from Maven Central: install it "
                "(e.g. apt-get install maven) or run Neo4j with Docker and set KBGRAPH_URI"
            )
        return java

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
        self._check_tools(need_maven=True)
        self.lib_dir.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(self.lib_dir.parent / f".{self.lib_dir.name}.build.lock"), timeout=MAVEN_TIMEOUT)
        try:
            with lock:
                if not force and self.is_built():  # built by another process meanwhile
                    return self.lib_dir
                self._run_maven()
        except Timeout:
            raise Neo4jLocalError(
                f"another process has been building {self.lib_dir} for {MAVEN_TIMEOUT:.0f} s; wait for it "
                "or delete its .build.lock file"
            ) from None
        return self.lib_dir

    def _run_maven(self) -> None:
        mvn = shutil.which("mvn")
        assert mvn is not None
        stage = self.lib_dir.parent / f".{self.lib_dir.name}.building"
        shutil.rmtree(stage, ignore_errors=True)
        stage.mkdir(parents=True)
        pom_text = _pom_text()
        pom = stage / "pom.xml"
        pom.write_text(pom_text, encoding="utf-8")
        jars_dir = stage / "lib"
        cmd = [
            mvn, "-q", "-B", "-f", str(pom), "dependency:copy-dependencies",
            f"-DoutputDirectory={jars_dir}", "-DincludeScope=runtime",
        ]
        try:
            out = subprocess.run(
                cmd, cwd=stage, capture_output=True, text=True, timeout=MAVEN_TIMEOUT, check=False
            )
        except subprocess.TimeoutExpired:
            raise Neo4jLocalError(
                f"the Maven build of Neo4j took over {MAVEN_TIMEOUT:.0f} s; check access to Maven Central "
                f"(repo.maven.apache.org) and retry"
            ) from None
        jars = sorted(p.name for p in jars_dir.glob("*.jar")) if jars_dir.is_dir() else []
        if out.returncode != 0 or not jars:
            text = out.stdout + "\n" + out.stderr
            errors = [ln for ln in text.splitlines() if ln.startswith("[ERROR]") and ln[7:].strip()]
            why = _one_line(errors[0] if errors else (text.strip().splitlines() or ["no output"])[-1])
            raise Neo4jLocalError(
                f"the Maven build of Neo4j failed ({why}); check access to Maven Central and "
                f"~/.m2/settings.xml, then retry (run by hand: {' '.join(cmd)})"
            )
        shutil.rmtree(self.lib_dir, ignore_errors=True)
        jars_dir.rename(self.lib_dir)
        marker = {
            "pom_sha256": hashlib.sha256(pom_text.encode()).hexdigest(),
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "jars": jars,
        }
        (self.lib_dir / MARKER).write_text(json.dumps(marker, indent=1))
        shutil.rmtree(stage, ignore_errors=True)

    # --- configuration ------------------------------------------------------------------------------
    def _write_conf(self) -> None:
        s = self.settings
        for d in (self.conf_dir, self.data_dir, self.logs_dir, self.run_dir,
                  self.home / "import", self.home / "plugins"):
            d.mkdir(parents=True, exist_ok=True)
        conf = {
            "server.default_listen_address": "127.0.0.1",
            "server.default_advertised_address": "127.0.0.1",
            "server.bolt.enabled": "true",
            "server.bolt.listen_address": f"127.0.0.1:{s.neo4j_bolt_port}",
            "server.bolt.advertised_address": f"127.0.0.1:{s.neo4j_bolt_port}",
            "server.http.enabled": "true",
            "server.http.listen_address": f"127.0.0.1:{s.neo4j_http_port}",
            "server.http.advertised_address": f"127.0.0.1:{s.neo4j_http_port}",
            "server.https.enabled": "false",
            "dbms.security.auth_enabled": "true",
            "server.directories.data": str(self.data_dir),
            "server.directories.logs": str(self.logs_dir),
            "server.directories.run": str(self.run_dir),
            "server.directories.import": str(self.home / "import"),
            "server.directories.plugins": str(self.home / "plugins"),
            "server.memory.pagecache.size": s.neo4j_pagecache,
            "dbms.usage_report.enabled": "false",
        }
        with contextlib.suppress(OSError, ValueError):  # the kbgraph Browser style on connect (kbgraph.browse)
            from kbgraph.browse import post_connect_cmd

            conf["browser.post_connect_cmd"] = post_connect_cmd()
        text = "# Written by kbgraph.neo4j_local on every start; edit kbgraph settings instead.\n"
        text += "".join(f"{k}={v}\n" for k, v in conf.items())
        (self.conf_dir / "neo4j.conf").write_text(text)

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["NEO4J_HOME"] = str(self.home)
        env["NEO4J_CONF"] = str(self.conf_dir)
        return env

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
            why = _meaningful(out.stderr + "\n" + out.stdout) or f"exit code {out.returncode}"
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

        if not _port_open(self.settings.neo4j_bolt_port):
            return False
        auth = (self.settings.neo4j_username, self._password())
        try:
            with GraphDatabase.driver(self.bolt_uri, auth=auth, connection_timeout=timeout) as driver:
                driver.verify_connectivity()
            return True
        except AuthError:
            raise Neo4jLocalError(
                f"the local Neo4j in {self.home} rejects user '{self.settings.neo4j_username}' with the "
                f"configured password (the stored password differs); set KBGRAPH_NEO4J_PASSWORD to the stored "
                f"one, or reset it: stop the server and delete {self.auth_file}"
            ) from None
        except (DriverError, Neo4jError, OSError):
            return False

    def status(self) -> Neo4jStatus:
        """Current state of this instance; never starts or builds anything. Raises nothing."""
        pid = self._read_pid()
        return Neo4jStatus(
            running=pid is not None and _port_open(self.settings.neo4j_bolt_port),
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
            for port, env in ((s.neo4j_bolt_port, "KBGRAPH_NEO4J_BOLT_PORT"),
                              (s.neo4j_http_port, "KBGRAPH_NEO4J_HTTP_PORT")):
                if not _port_free(port):
                    raise Neo4jLocalError(
                        f"port {port} is in use by another process; set {env} to a free port "
                        "or stop that process"
                    )
            if s.neo4j_bolt_port == s.neo4j_http_port:
                raise Neo4jLocalError(
                    f"the Bolt and HTTP ports are both {s.neo4j_bolt_port}; set KBGRAPH_NEO4J_HTTP_PORT "
                    "to a different port"
                )

            java = self._check_tools(need_maven=not self.is_built())
            self.build()
            self._write_conf()
            if not self.auth_file.exists():
                self._set_initial_password(java)

            if self.console_log.exists():
                self.console_log.replace(self.logs_dir / "console.log.1")
            cmd = [
                java, f"-Xmx{s.neo4j_heap}", "-XX:+ExitOnOutOfMemoryError", "-Dfile.encoding=UTF-8",
                "-cp", f"{self.lib_dir}/*", ENTRY_POINT,
                f"--home-dir={self.home}", f"--config-dir={self.conf_dir}", "--console-mode",
            ]
            with open(self.console_log, "ab") as log:
                try:
                    self._proc = subprocess.Popen(
                        cmd, cwd=self.home, env=self._env(), stdin=subprocess.DEVNULL,
                        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
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

        if not _port_open(self.settings.neo4j_http_port):
            return False
        req = urllib.request.Request(self.http_url + "/", headers={"Accept": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=3) as resp:
                doc = json.loads(resp.read().decode("utf-8", "replace"))
        except (OSError, ValueError, urllib.error.URLError):
            return False
        return str(doc.get("bolt_direct", "")).endswith(f":{self.settings.neo4j_bolt_port}")

    def _startup_failure(self) -> str | None:
        """Neo4j logs 'ERROR Failed to start' and keeps running when, e.g., the HTTP port is taken."""
        try:
            text = self.console_log.read_text(errors="replace")
        except OSError:
            return None
        if re.search(r"\bERROR\b.*(Failed to start|Exception)", text):
            return _meaningful(text)
        return None

    def _wait_ready(self, pid: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        bolt_ok = False
        while True:
            if not pid_alive(pid):
                why = _last_meaningful_line(self.console_log, self.logs_dir / "debug.log")
                raise Neo4jLocalError(
                    f"the local Neo4j exited during start-up: {why}; fix what it names (kbgraph's KBGRAPH_NEO4J_* "
                    f"settings) and retry; full log: {self.console_log}"
                )
            why = self._startup_failure()
            if why:
                raise Neo4jLocalError(
                    f"the local Neo4j failed to start and was stopped: {why}; fix what it names (a port in use: "
                    f"KBGRAPH_NEO4J_BOLT_PORT / KBGRAPH_NEO4J_HTTP_PORT) and retry; full log: {self.console_log}"
                )
            # Bolt comes up a few seconds before HTTP: ready means both answer.
            bolt_ok = bolt_ok or self._verify_bolt()
            if bolt_ok and self._http_ready():
                return
            if time.monotonic() > deadline:
                raise Neo4jLocalError(
                    f"the local Neo4j did not answer on {self.bolt_uri} and {self.http_url} within "
                    f"{timeout:.0f} s and was stopped; retry with a longer timeout, or see {self.console_log}"
                )
            time.sleep(0.5)

    def _terminate(self, pid: int, timeout: float) -> None:
        terminate(pid, timeout)
        if self._proc is not None and self._proc.pid == pid:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=1)
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
