"""Static embeddings for short texts: a model2vec model distilled offline from the
configured sentence-transformers model, used for the layers of setting ``static_layers`` (entity names and
triples by default), both at ingestion and for the question's vector on those layers' indexes.

A static model is one vector per vocabulary token (the teacher's output for that token alone, Zipf-weighted;
no PCA by default: the teacher's dimension; setting ``static_dimension`` keeps that many principal components, and
the static layers' vector indexes get that dimension); a text's vector is the mean of its tokens' vectors. It
embeds tens of thousands of names a second on one core where the transformer does ~500
(Tulkens & van Dongen 2024, model2vec; measured figures in docs/benchmarks.md#static-embeddings-static_layers). It is
built once per model, by the library ``model2vec`` (``model2vec.distill``, ~10 s on 2 cores for
all-MiniLM-L6-v2), from the model's local folder (never the hub), into
``<home>/models/<model>-static-<first 16 hex of the weights' sha256>/`` (``-static<dimension>-`` with
``static_dimension``; setting ``static_models_dir`` moves
it: one folder can serve every knowledge base on a machine), in a child process, under a file lock so that two
processes do not both build it.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from kbgraph.embed.base import normalise
from kbgraph.embed.onnx_model import models_dir, read_model_spec, safe_model_name, weights_hash
from kbgraph.embed.sentence import local_model_dir
from kbgraph.errors import ConfigError

if TYPE_CHECKING:
    from model2vec import StaticModel

    from kbgraph.settings import Settings

__all__ = ["STATIC_SUFFIX", "StaticEmbedder", "build_static_model", "get_static_embedder", "static_model_dir"]

log = logging.getLogger("kbgraph.embed")

#: Appended to the teacher's name in ``StaticEmbedder.model_name`` (and so in embedding-cache keys).
STATIC_SUFFIX = "+static"
_CACHE: dict[tuple[str, str], StaticEmbedder] = {}
_CACHE_LOCK = threading.Lock()


#: (model name, teacher folder, models folder, dimension) -> ((teacher, static model folder), weights file, its stamp)
_DIRS: dict[tuple[str, str, str, int | None], tuple[tuple[Path, Path], Path, tuple[int, int]]] = {}


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def static_model_dir(settings: Settings) -> tuple[Path, Path]:
    """(the teacher model's local folder, where its static model lives) for ``settings.embedding.embedding_model``.
    ConfigError if the model is not a local sentence-transformers folder (an ``openai:`` model, or a hub name
    not in the cache), naming the fix. Remembered per process while the weights file's size and modification
    time hold (every question with static layers asks: reading the model's spec is not per-question work)."""
    name = (settings.embedding.embedding_model or "").strip()
    folder = local_model_dir(name)
    mdir = settings.embedding.static_models_dir or models_dir(settings.home)
    dimension = settings.embedding.static_dimension
    key = (name, str(folder), str(mdir), dimension)
    hit = _DIRS.get(key)
    if hit is not None and _stamp(hit[1]) == hit[2]:
        return hit[0]
    found, weights = _static_model_dir(name, folder, mdir, dimension)
    stamp = _stamp(weights)
    if stamp is not None:
        _DIRS[key] = (found, weights, stamp)
    return found


def _static_model_dir(
    name: str, folder: Path | None, mdir: Path, dimension: int | None
) -> tuple[tuple[Path, Path], Path]:
    """((teacher, static model folder), the teacher's weights file); ConfigError as static_model_dir."""
    if folder is None:
        raise ConfigError(
            f"static_layers needs the embedding model {name!r} on disk to build a static model "
            "from (a sentence-transformers folder or the packaged all-MiniLM-L6-v2): set "
            "KBGRAPH_STATIC_LAYERS= (empty) for this model"
        )
    try:
        spec = read_model_spec(folder)
    except Exception as exc:  # noqa: BLE001 - any unreadable model folder: one clear message
        raise ConfigError(
            f"cannot read the embedding model folder {folder} to build a static model ({exc}); "
            "set KBGRAPH_STATIC_LAYERS= (empty)"
        ) from exc
    kind = "static" if dimension is None else f"static{dimension}"
    return (folder, mdir / f"{safe_model_name(name)}-{kind}-{weights_hash(spec.weights, mdir)[:16]}"), spec.weights


def build_static_model(teacher: Path, out: Path, *, dimension: int | None = None, lock_timeout: float = 600.0) -> Path:
    """Distil ``teacher`` (a sentence-transformers folder) into a model2vec static model of ``dimension`` (PCA
    components; None = the teacher's) at ``out`` unless it
    is there: built into a temporary folder beside it, then renamed, under ``out``.lock (a second process waits
    and reuses the first's model). ConfigError if model2vec is missing, the distillation fails, or the lock is
    held longer than ``lock_timeout`` s, each naming the fix."""
    from filelock import FileLock, Timeout

    if (out / "config.json").is_file():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        with FileLock(str(out) + ".lock", timeout=lock_timeout):
            if (out / "config.json").is_file():  # another process built it while we waited
                return out
            tmp = out.with_name(f".{out.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            try:
                _build(teacher, tmp, dimension)
                if out.exists():  # a half-written folder from a killed run (no config.json)
                    shutil.rmtree(out)
                os.replace(tmp, out)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    except Timeout as exc:
        raise ConfigError(
            f"another process has been building {out} for {lock_timeout:.0f} s; "
            f"remove {out}.lock if no kbgraph process is running"
        ) from exc
    return out


def _build(teacher: Path, tmp: Path, dimension: int | None) -> None:
    """Run ``build_into`` in a child interpreter: distillation loads torch and transformers (~1 GB resident),
    which the ingesting process otherwise never needs (it embeds with ONNX Runtime)."""
    log.info("building a static embedding model from %s by model2vec distillation (once, ~10-20 s)", teacher)
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    proc = subprocess.run(
        [sys.executable, "-m", "kbgraph.embed.static_model", str(teacher), str(tmp), str(dimension or "")],
        capture_output=True,
        text=True,
        env=env,
    )
    if proc.returncode != 0 or not (tmp / "config.json").is_file():
        lines = [x for x in (proc.stderr or proc.stdout).strip().splitlines() if "it/s]" not in x]
        raise ConfigError(
            f"building a static model from {teacher} failed ({lines[-1] if lines else 'no output'})"
            "; set KBGRAPH_STATIC_LAYERS= (empty) to embed every layer with the model itself"
        )


def build_into(teacher: Path, out: Path, dimension: int | None = None) -> None:
    """model2vec's ``distill`` of ``teacher`` (PCA to ``dimension`` components; None = no PCA, the teacher's
    dimension), saved at ``out``. ConfigError if model2vec (or skeletoken, which its distill imports) is missing."""
    try:
        from model2vec.distill import distill
    except ImportError as exc:
        raise ConfigError(
            f"static_layers needs model2vec and skeletoken: pip install 'model2vec>=0.10' "
            f"'skeletoken>=0.6' ({exc}), or set KBGRAPH_STATIC_LAYERS= (empty)"
        ) from exc
    distill(model_name=str(teacher), pca_dims=dimension).save_pretrained(str(out))


def load_folder(path: Path) -> StaticModel:
    """The model2vec model ``build_into`` saved at ``path`` (``model.safetensors`` with one ``embeddings`` tensor,
    ``tokenizer.json``, ``config.json``), built from those files with model2vec's ``StaticModel`` as its own
    ``from_pretrained`` builds it; any other folder through ``from_pretrained`` itself. Its loading path imports
    huggingface_hub's model cards, ~0.2 s of every ``kbgraph ask`` that searches a static layer (benchmarks/HISTORY.md,
    "Cold start"); tests/test_static_embeddings.py checks that both give the same vectors."""
    from model2vec import StaticModel

    files = [path / "model.safetensors", path / "tokenizer.json", path / "config.json"]
    if not all(f.is_file() for f in files):
        return StaticModel.from_pretrained(str(path))
    from safetensors import safe_open
    from tokenizers import Tokenizer

    with safe_open(str(files[0]), framework="numpy") as tensors:
        if set(tensors.keys()) != {"embeddings"}:  # vocabulary quantization ('weights', 'mapping'): theirs
            return StaticModel.from_pretrained(str(path))
        vectors = tensors.get_tensor("embeddings")
    config = json.loads(files[2].read_text(encoding="utf-8"))
    return StaticModel(
        vectors=vectors,
        tokenizer=Tokenizer.from_file(str(files[1])),
        config=config,
        normalize=bool(config.get("normalize", False)),
        max_length=config.get("max_length", 512),
    )


class StaticEmbedder:
    """A model2vec static model; implements ``Embedder``: ``embed(texts)`` -> float32 (len(texts), dimension),
    rows L2-normalised (a text with no known token gets the zero vector). ``model_name`` is the teacher's name +
    ``STATIC_SUFFIX`` (+ the dimension when it is given: the embedding cache keeps each model's vectors apart).
    Loaded on first use from ``path`` (``build_static_model``'s folder)."""

    def __init__(self, path: str | Path, *, teacher_name: str, dimension: int | None = None):
        self.path = Path(path)
        self._name = teacher_name + STATIC_SUFFIX + (str(dimension) if dimension is not None else "")
        self._model: StaticModel | None = None
        self._lock = threading.Lock()

    def _load(self) -> StaticModel:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    self._model = load_folder(self.path)
        return self._model

    @property
    def model_name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return int(self._load().dim)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        model = self._load()
        vectors = model.encode([t if isinstance(t, str) else str(t) for t in texts], show_progress_bar=False)
        return normalise(vectors, self.dimension)  # model2vec returns float16: back to unit float32

    def __repr__(self) -> str:
        return f"StaticEmbedder({self._name!r}, {str(self.path)!r})"


def get_static_embedder(settings: Settings) -> StaticEmbedder:
    """The static embedder of ``settings.embedding.embedding_model`` (one per model, dimension and home in the
    process), built on first use (``build_static_model``) and checked against the static layers' index dimension,
    ``static_dimension`` or else ``embedding_dimension`` (ConfigError naming both numbers). ConfigError as
    ``static_model_dir`` and ``build_static_model``."""
    teacher, out = static_model_dir(settings)
    dimension = settings.embedding.static_dimension
    key = (str(out), (settings.embedding.embedding_model or "").strip())
    with _CACHE_LOCK:
        embedder = _CACHE.get(key)
        if embedder is None:
            build_static_model(teacher, out, dimension=dimension)
            embedder = StaticEmbedder(out, teacher_name=key[1], dimension=dimension)
            _CACHE[key] = embedder
    expected = settings.embedding.static_model_dimension
    if embedder.dimension != expected:
        raise ConfigError(
            f"the static model {out} gives {embedder.dimension}-dimensional vectors but the static "
            f"layers' indexes have {expected}: set KBGRAPH_STATIC_DIMENSION, or KBGRAPH_STATIC_LAYERS= "
            "(empty)"
        )
    return embedder


if __name__ == "__main__":  # python -m kbgraph.embed.static_model TEACHER OUT [DIMENSION] (what _build runs)
    try:
        build_into(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]) if sys.argv[3:] and sys.argv[3] else None)
    except Exception as exc:  # noqa: BLE001 - the parent reports the last line
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        sys.exit(1)
