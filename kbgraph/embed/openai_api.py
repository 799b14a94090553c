"""Embeddings from an OpenAI-compatible ``/embeddings`` endpoint (``embedding_model = openai:<model>``)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from kbgraph.embed.base import OPENAI_PREFIX, normalise
from kbgraph.errors import ConfigError

if TYPE_CHECKING:
    from openai import OpenAI

__all__ = ["OPENAI_DIMENSIONS", "OpenAIEmbedder"]

#: Native dimensions of OpenAI embedding models (others are probed with one request).
OPENAI_DIMENSIONS = {"text-embedding-3-small": 1536, "text-embedding-3-large": 3072, "text-embedding-ada-002": 1536}


class OpenAIEmbedder:
    """An OpenAI-compatible embeddings endpoint (OpenAI, Azure OpenAI, vLLM, Ollama, llama.cpp server...).

    ``dimensions``: ask the endpoint for vectors of this size (text-embedding-3 models support it).
    ``client``: an ``openai.OpenAI``-like object (for tests or a pre-configured client)."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        batch_size: int = 64,
        dimensions: int | None = None,
        timeout: float = 60.0,
        client: OpenAI | None = None,
    ):
        if not model:
            raise ConfigError("embedding_model 'openai:' names no model: use e.g. openai:text-embedding-3-small")
        self._name = model
        self.batch_size = max(1, int(batch_size))
        self.requested_dimensions = dimensions
        self._dimension: int | None = dimensions or OPENAI_DIMENSIONS.get(model)
        self._client = client
        self._base_url = base_url
        self._api_key = api_key
        self._timeout = timeout
        self._lock = threading.Lock()

    @property
    def model_name(self) -> str:
        return f"{OPENAI_PREFIX}{self._name}"

    @property
    def dimension(self) -> int:
        if self._dimension is None:
            self._dimension = int(self._request(["dimension probe"]).shape[1])
        return self._dimension

    @property
    def client(self) -> OpenAI:
        if self._client is None:
            with self._lock:
                if self._client is None:
                    try:
                        import openai
                    except ImportError as exc:
                        raise ConfigError(
                            f"embedding model {self.model_name!r} needs the openai package: pip install 'kbgraph[llm]'"
                        ) from exc
                    try:
                        self._client = openai.OpenAI(
                            base_url=self._base_url, api_key=self._api_key, timeout=self._timeout
                        )
                    except openai.OpenAIError as exc:
                        raise ConfigError(
                            f"cannot create the OpenAI client for {self.model_name!r}: {exc} "
                            "(set KBGRAPH_LLM_API_KEY / OPENAI_API_KEY and, for another endpoint, KBGRAPH_LLM_BASE_URL)"
                        ) from exc
        return self._client

    def _request(self, batch: list[str]) -> np.ndarray:
        kwargs: dict[str, Any] = {"model": self._name, "input": [t if t.strip() else " " for t in batch]}
        if self.requested_dimensions:
            kwargs["dimensions"] = self.requested_dimensions
        try:
            response = self.client.embeddings.create(**kwargs)
        except Exception as exc:  # noqa: BLE001
            if type(exc).__name__ in (
                "AuthenticationError",
                "PermissionDeniedError",
                "NotFoundError",
                "BadRequestError",
            ):
                raise ConfigError(
                    f"the embeddings endpoint rejected model {self._name!r} ({type(exc).__name__}: "
                    f"{' '.join(str(exc).split())[:200]}): check KBGRAPH_EMBEDDING_MODEL, KBGRAPH_LLM_BASE_URL "
                    "and KBGRAPH_LLM_API_KEY"
                ) from exc
            raise
        data = sorted(response.data, key=lambda d: d.index)
        if len(data) != len(batch):
            raise ConfigError(f"the embeddings endpoint returned {len(data)} vectors for {len(batch)} texts")
        return np.asarray([d.embedding for d in data], dtype=np.float32)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = [t if isinstance(t, str) else str(t) for t in texts]
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        parts = [self._request(texts[i : i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]
        out = np.concatenate(parts, axis=0)
        if self._dimension is None:
            self._dimension = int(out.shape[1])
        return normalise(out, self._dimension)

    def __repr__(self) -> str:
        return f"OpenAIEmbedder({self._name!r})"
