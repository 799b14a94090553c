"""kbgraph settings, in groups.

Precedence, highest first: explicit arguments (CLI flags, ``Settings(...)`` keywords), environment
(``KBGRAPH_*``; Neo4j's own ``NEO4J_URI``, ``NEO4J_USERNAME``, ``NEO4J_PASSWORD``, ``NEO4J_DATABASE``; OpenAI's
``OPENAI_BASE_URL``, ``OPENAI_API_KEY``), a ``kbgraph.toml`` file (``KBGRAPH_CONFIG`` or ``./kbgraph.toml``), then
the defaults below.

A setting has one name everywhere: ``seed_k`` is ``settings.retrieval.seed_k`` in code (its group is a namespace),
``KBGRAPH_SEED_K`` in the environment, ``seed_k = 5`` in kbgraph.toml (flat, or under a ``[retrieval]`` table)
and ``Settings(seed_k=5)`` as a keyword (a group may also be given whole: ``Settings(retrieval={"seed_k": 5})``).
``Settings.updated({"seed_k": 5})`` is a validated copy with changes by those names. docs/settings.md lists every
setting; its table is generated from the field descriptions in kbgraph.settings_groups, kbgraph.settings_retrieval and kbgraph.settings_services
(kbgraph.settings_doc).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Self

from pydantic import AliasChoices, BaseModel, Field, SecretStr, create_model
from pydantic import ValidationError, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from kbgraph.home import LLM_SERVER, NEO4J_LOCAL
from kbgraph.settings_groups import (
    EmbeddingSettings,
    IngestSettings,
    SettingsGroup,
    StoreSettings,
    UserPath,
)
from kbgraph.settings_methods import (
    BaselineSettings,
    DecomposerSettings,
    DecomposeSettings,
    HiragSettings,
    MigresSettings,
    RoutingSettings,
)
from kbgraph.settings_groups import VECTOR_LAYER_CHOICES as VECTOR_LAYER_CHOICES  # re-exported
from kbgraph.settings_retrieval import RetrievalSettings, TaggingSettings
from kbgraph.settings_services import LLMServerSettings, LLMSettings, ServeSettings

#: The groups, in the order of ``Settings`` and docs/settings.md: attribute name -> model.
GROUPS: dict[str, type[SettingsGroup]] = {
    "store": StoreSettings,
    "ingest": IngestSettings,
    "embedding": EmbeddingSettings,
    "retrieval": RetrievalSettings,
    "tagging": TaggingSettings,
    "decompose": DecomposeSettings,
    "baselines": BaselineSettings,
    "migres": MigresSettings,
    "hirag": HiragSettings,
    "decomposer": DecomposerSettings,
    "routing": RoutingSettings,
    "llm": LLMSettings,
    "llm_server": LLMServerSettings,
    "serve": ServeSettings,
}

#: The groups holding the settings of the query methods: each is named by the ``settings_group`` of a row of the
#: method registry (kbgraph.query.methods.registry, which this layer cannot import; tests/unit/test_methods_registry.py).
METHOD_GROUPS: tuple[str, ...] = ("retrieval", "decompose", "baselines", "migres", "hirag", "routing")


def _config_file() -> Path:
    return Path(os.environ.get("KBGRAPH_CONFIG", "kbgraph.toml"))


#: Settings outside every group (the knowledge base itself).
TOP_LEVEL: tuple[str, ...] = ("name", "home", "debug")

#: Flat setting name -> its group (``seed_k`` -> ``retrieval``): routes flat keywords, environment variables and
#: kbgraph.toml keys into their group.
SETTING_GROUPS: dict[str, str] = {name: group for group, model in GROUPS.items() for name in model.model_fields}


def _alias_index() -> dict[str, str]:
    """Every key a flat setting may come under (its name, its environment aliases, lower-cased too) -> its name."""
    index: dict[str, str] = {}
    for model in GROUPS.values():
        for name, info in model.model_fields.items():
            keys = [name]
            if isinstance(info.validation_alias, AliasChoices):
                keys += [str(c) for c in info.validation_alias.choices]
            for key in keys:
                index[key] = index[key.lower()] = name
    return index


_ALIASES = _alias_index()


def route(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` with each flat setting moved into its group: ``{"seed_k": 5}`` -> ``{"retrieval": {"seed_k":
    5}}``. A group given whole (a mapping or a group model) is kept and the flat settings of it go on top; other
    keys (name, home, debug, unknown ones) stay where they are."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key in GROUPS:
            out[key] = dict(value) if isinstance(value, (Mapping, BaseModel)) else value
    for key, value in data.items():
        if key in GROUPS:
            continue
        name = _ALIASES.get(key) or _ALIASES.get(key.lower()) if isinstance(key, str) else None
        if name is None:
            out[key] = value
            continue
        group = out.setdefault(SETTING_GROUPS[name], {})
        if isinstance(group, dict):
            group[name] = value
    return out


class Settings(BaseSettings):
    """Effective configuration of one knowledge base: its name and home, and one group of settings per part
    (``settings.retrieval.seed_k``); GROUPS lists them. ``Settings(seed_k=5)``, or a group whole
    (``Settings(retrieval={"seed_k": 5})``), over the environment (``KBGRAPH_SEED_K``), kbgraph.toml and the
    defaults (module docstring); every setting is in docs/settings.md.
    Raises:
        pydantic.ValidationError: a malformed value (the CLI turns it into a one-line error)."""

    model_config = SettingsConfigDict(
        env_prefix="KBGRAPH_",
        extra="ignore",
        populate_by_name=True,
        validate_default=True,
    )

    # --- knowledge base -------------------------------------------------------------------
    name: str = Field("default", description="Knowledge-base name: one graph, one data directory.")
    home: UserPath = Field(Path("~/.kbgraph"), description="Root folder of kbgraph's local data.")
    debug: bool = Field(False, description="Read by nothing at present (tracebacks: `kbgraph --debug`).")

    # --- groups -----------------------------------------------------------------------------
    store: StoreSettings = Field(default_factory=StoreSettings)
    ingest: IngestSettings = Field(default_factory=IngestSettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    tagging: TaggingSettings = Field(default_factory=TaggingSettings)
    decompose: DecomposeSettings = Field(default_factory=DecomposeSettings)
    baselines: BaselineSettings = Field(default_factory=BaselineSettings)
    migres: MigresSettings = Field(default_factory=MigresSettings)
    hirag: HiragSettings = Field(default_factory=HiragSettings)
    decomposer: DecomposerSettings = Field(default_factory=DecomposerSettings)
    routing: RoutingSettings = Field(default_factory=RoutingSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    llm_server: LLMServerSettings = Field(default_factory=LLMServerSettings)
    serve: ServeSettings = Field(default_factory=ServeSettings)

    @model_validator(mode="before")
    @classmethod
    def _route_flat(cls, data: Any) -> Any:
        return route(data) if isinstance(data, Mapping) else data

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Each source reads flat names as the flat class of old did (aliases, NoDecode, case), then routes them
        # into groups, so that the merge keeps the precedence per setting: init > env > kbgraph.toml > defaults.
        flat = _flat_settings()
        init_kwargs = init_settings.init_kwargs if isinstance(init_settings, InitSettingsSource) else {}
        return (
            _Grouped(settings_cls, InitSettingsSource(flat, init_kwargs=init_kwargs)),
            _Grouped(settings_cls, EnvSettingsSource(flat)),
            _Grouped(settings_cls, TomlConfigSettingsSource(flat, toml_file=_config_file())),
        )

    # --- derived --------------------------------------------------------------------------
    @property
    def kb_dir(self) -> Path:
        """Data folder of the embedded store for this knowledge base: store.data_dir, else <home>/<name>."""
        return self.store.data_dir if self.store.data_dir is not None else self.home / self.name

    @property
    def neo4j_dir(self) -> Path:
        """Folder of the local Neo4j: store.neo4j_local_home, else <home>/neo4j-local."""
        return self.store.neo4j_local_home if self.store.neo4j_local_home is not None else self.home / NEO4J_LOCAL

    @property
    def llm_server_home(self) -> Path:
        """Folder of the local LLM server: llm_server.llm_server_dir, else <home>/llm-server."""
        d = self.llm_server.llm_server_dir
        return d if d is not None else self.home / LLM_SERVER

    # --- copies and views -------------------------------------------------------------------
    def updated(self, changes: Mapping[str, Any] | None = None, /, **more: Any) -> Self:
        """A copy with changes, validated as the constructor validates; the environment and kbgraph.toml are not
        read again. Changes inside groups validate only their groups (the settings' sources are not built again:
        ~0.1 ms, not ~2.6 ms, which the ``dense`` method paid per question); a change of a top-level field, or one
        that does not validate, goes through the constructor's validation.
        Args:
            changes: settings by flat name (``{"seed_k": 5}``) or group (``{"retrieval": {...}}``).
            **more: more of them, as keywords (over ``changes``).
        Returns:
            The new settings (this one unchanged).
        Raises:
            pydantic.ValidationError: a malformed value."""
        routed = route({**(changes or {}), **more})
        if all(key in GROUPS and isinstance(value, dict) for key, value in routed.items()):
            try:
                groups = {
                    key: cls.model_validate({**dict(getattr(self, key)), **routed[key]})
                    if key in routed
                    else getattr(self, key).model_copy()
                    for key, cls in GROUPS.items()
                }
            except ValidationError:
                pass  # the constructor's validation below raises it, its location naming the group
            else:
                return super().model_copy(update=groups)
        data: dict[str, Any] = {
            k: dict(getattr(self, k)) if k in GROUPS else getattr(self, k) for k in type(self).model_fields
        }
        for key, value in routed.items():
            if key in GROUPS and isinstance(value, dict):
                data[key] = {**data[key], **value}
            else:
                data[key] = value
        return type(self).model_validate(data)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy; with ``update``: :meth:`updated` (flat names routed to their groups and validated; pydantic's
        model_copy would set an unknown top-level attribute and leave the group unchanged).
        Args:
            update: changes, as :meth:`updated`'s.
            deep: without ``update``: copy the groups too (pydantic's ``model_copy``).
        Returns:
            The copy.
        Raises:
            pydantic.ValidationError: a malformed value in ``update``."""
        if update:
            return self.updated(update)
        return super().model_copy(deep=deep)

    def flat(self) -> dict[str, Any]:
        """Every setting by its flat name.
        Returns:
            ``{"name": ..., "seed_k": 20, ...}``, values as they are (SecretStr, Path)."""
        out: dict[str, Any] = {k: getattr(self, k) for k in TOP_LEVEL}
        for group in GROUPS:
            out.update(dict(getattr(self, group)))
        return out

    def masked(self) -> dict[str, Any]:
        """The effective settings as plain values by group (``kbgraph config``).
        Returns:
            ``{"name": ..., "retrieval": {"seed_k": 20, ...}}``, secrets shown as '****' (empty when unset), paths
            as strings."""

        def plain(value: Any) -> Any:
            if isinstance(value, SecretStr):
                return "****" if value.get_secret_value() else ""
            if isinstance(value, Path):
                return str(value)
            if isinstance(value, list):
                return [plain(v) for v in value]
            return value

        out: dict[str, Any] = {k: plain(getattr(self, k)) for k in TOP_LEVEL}
        for group in GROUPS:
            out[group] = {k: plain(v) for k, v in getattr(self, group)}
        return out


def env_names(name: str) -> tuple[str, ...]:
    """The environment variables of a flat setting.
    Args:
        name: the setting's flat name (``seed_k``).
    Returns:
        ``KBGRAPH_<NAME>``, then its other aliases (``NEO4J_URI``, ``OPENAI_API_KEY``, ...).
    Raises:
        KeyError: an unknown name."""
    model = GROUPS[SETTING_GROUPS[name]] if name in SETTING_GROUPS else Settings
    info = model.model_fields[name] if name in model.model_fields else None
    if info is None or name in GROUPS:
        raise KeyError(name)
    if isinstance(info.validation_alias, AliasChoices):
        return tuple(str(c) for c in info.validation_alias.choices)
    return (f"KBGRAPH_{name.upper()}",)


class _Grouped(PydanticBaseSettingsSource):
    """A settings source whose flat keys are routed into their groups (``route``)."""

    def __init__(self, settings_cls: type[BaseSettings], inner: PydanticBaseSettingsSource):
        super().__init__(settings_cls)
        self.inner = inner

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        return route(self.inner())

    def __repr__(self) -> str:
        return f"_Grouped({self.inner!r})"


class _FlatBase(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="KBGRAPH_", extra="ignore", populate_by_name=True)


_FLAT: type[BaseSettings] | None = None


def _flat_settings() -> type[BaseSettings]:
    """A flat settings class with one field per setting (name, type, aliases of its group's field) that the
    environment and kbgraph.toml sources read as they read the flat Settings class of old; never validated."""
    global _FLAT
    if _FLAT is None:
        fields: dict[str, Any] = {k: (Settings.model_fields[k].annotation, Settings.model_fields[k]) for k in TOP_LEVEL}
        for model in GROUPS.values():
            fields.update({k: (info.annotation, info) for k, info in model.model_fields.items()})
        _FLAT = create_model("FlatSettings", __base__=_FlatBase, **fields)
    return _FLAT


def _check_names() -> None:
    clash = (set(SETTING_GROUPS) | set(TOP_LEVEL)) & set(GROUPS) or set(SETTING_GROUPS) & set(TOP_LEVEL)
    assert not clash, f"a setting named like a group or twice: {clash}"
    assert sum(len(m.model_fields) for m in GROUPS.values()) == len(SETTING_GROUPS), "a setting in two groups"


_check_names()
