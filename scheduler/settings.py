"""Settings from the environment (prefix `NIGHTSHIFT_`) or `nightshift.toml`, built by `get_settings()`."""

from __future__ import annotations

import os
import socket
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from scheduler.notify.config import NotifyTarget


def _toml_files() -> list[Path]:
    """`nightshift.toml` in the working directory, then the one named by `NIGHTSHIFT_CONFIG`."""
    files = [Path("nightshift.toml")]
    explicit = os.environ.get("NIGHTSHIFT_CONFIG")
    if explicit:
        files.append(Path(explicit))
    return [f for f in files if f.is_file()]


class Settings(BaseSettings):
    """Everything nightshift can be told; defaults run a whole cluster on one machine with no set-up."""

    model_config = SettingsConfigDict(env_prefix="NIGHTSHIFT_", extra="ignore")

    home: Path = Field(default=Path("~/.nightshift"), description="data folder: database, logs, tokens")
    database_url: str | None = Field(default=None, description="SQLAlchemy URL; SQLite in `home` if unset")
    redis_url: str | None = Field(default=None, description="redis:// URL; an embedded redis-server if unset")
    simulate_gpus: str | None = Field(default=None, description="e.g. `4x24` or `2x80,2x24` (GB per GPU)")
    offpeak: str = Field(default="23:00-07:00", description="off-peak windows, comma separated HH:MM-HH:MM")
    timezone: str = Field(default="", description="IANA zone for windows and times; the machine's if empty")
    node_name: str = Field(default_factory=socket.gethostname, description="this worker's node name")

    host: str = "127.0.0.1"
    port: int = 8000
    api_url: str = Field(
        default="http://127.0.0.1:8000",
        description="where clients call the API; unset: this machine's `host` and `port` (`nightshift up`)",
    )
    assistant_port: int = Field(
        default=7860, description="port of the chat UI served alone (`nightshift assistant`)"
    )
    token: str | None = None
    secrets_key: str | None = Field(
        default=None,
        description="Fernet key(s) sealing people's secrets at rest, comma separated (the first seals, all "
        "open); `secrets.key` in `home`, made on first use, if unset",
    )

    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: str | None = Field(
        default=None, validation_alias=AliasChoices("NIGHTSHIFT_LLM_API_KEY", "OPENAI_API_KEY")
    )

    lease_ttl_s: float = Field(default=30.0, gt=0, description="a claim expires this long after a heartbeat")
    heartbeat_interval_s: float = Field(default=5.0, gt=0)
    kill_grace_s: float = Field(default=10.0, ge=0, description="SIGTERM → SIGKILL delay when stopping a job")
    max_request_mb: float = Field(
        default=32.0,
        gt=0,
        allow_inf_nan=False,
        description="the largest request body the API reads (413 above it): a batch of 1,000 specs is ~1 MB",
    )
    max_log_mb: float = Field(
        default=4096.0,
        ge=0,
        allow_inf_nan=False,
        description="an attempt whose output passes this many MB is stopped (a job printing without end "
        "would fill the disk of every team's jobs); 0: no limit",
    )
    scheduler_safety_pass_s: float = Field(default=5.0, gt=0, description="periodic pass besides events")
    retry_backoff_s: float = Field(default=30.0, ge=0, description="first retry delay, doubling")
    policy: Literal["fifo", "backfill", "nightshift"] = "nightshift"
    team_gpu_caps: dict[str, int] = Field(default_factory=dict, description="concurrent GPUs per team")
    default_team_gpu_cap: int | None = Field(default=None, ge=0)
    user_gpu_caps: dict[str, int] = Field(default_factory=dict, description="concurrent GPUs per person")
    default_user_gpu_cap: int | None = Field(default=None, ge=0)
    priority_limits: dict[Literal["low", "normal", "high", "urgent"], Annotated[int, Field(ge=0)]] = Field(
        default_factory=dict,
        description="most tasks a person may have queued or running in a class ({urgent = 2}); not admins",
    )
    day_budget_gpu_h: dict[str, float] = Field(default_factory=dict, description="rolling 24 h GPU-hours")
    week_budget_gpu_h: dict[str, float] = Field(default_factory=dict, description="rolling 7 day GPU-hours")
    user_day_budget_gpu_h: dict[str, Annotated[float, Field(ge=0)]] = Field(
        default_factory=dict, description="a person's own rolling 24 h GPU-hours, in each of their teams"
    )
    user_week_budget_gpu_h: dict[str, Annotated[float, Field(ge=0)]] = Field(
        default_factory=dict, description="a person's own rolling 7 day GPU-hours, in each of their teams"
    )
    default_user_day_budget_gpu_h: float | None = Field(
        default=None, ge=0, description="the day budget of every person not in user_day_budget_gpu_h"
    )
    default_user_week_budget_gpu_h: float | None = Field(
        default=None, ge=0, description="the week budget of every person not in user_week_budget_gpu_h"
    )
    borrowing: bool = Field(default=True, description="use idle GPUs above a team's cap when nobody waits")
    fairshare_half_life_h: float = Field(default=168.0, gt=0)
    fairshare_within_teams: bool = Field(
        default=True,
        description="share each team's fair-share credit among its members by their recent use, so the "
        "person who ran little lately goes ahead of a teammate who ran a lot (false: teams only)",
    )
    wide_task_first_after_min: float = Field(
        default=15.0,
        ge=0,
        description=(
            "the oldest queued multi-GPU task goes first (starts or reserves) after this wait, or after 50 "
            "typical run times of the cluster's recent tasks when that is sooner"
        ),
    )
    short_job_width_exponent: float = Field(
        default=1.0,
        ge=-2,
        le=2,
        description=(
            "short-job credit falls with run time x GPUs^this: 1 = by GPU-seconds (best mean completion "
            "time, wide tasks wait behind narrow ones), 0 = by run time alone, < 0 = wide tasks favoured "
            "as Slurm's job-size factor does"
        ),
    )
    max_task_gpus: int = Field(default=8, ge=1, description="refuse specs asking more GPUs than this")

    # --- abuse limits (API) ---
    rate_limit_per_s: float = Field(default=50.0, ge=0, description="requests per second per token; 0 = off")
    rate_limit_burst: int = Field(default=200, ge=1, description="requests a token may send at once")
    api_workers: int = Field(
        default=1,
        ge=1,
        le=64,
        description="API processes serving the port (more than 1: the rate limit is kept in Redis, shared)",
    )
    max_queued_per_team: int | None = Field(default=1000, ge=1, description="queued tasks per team")

    # --- safe execution (worker) ---
    run_as: dict[str, str] = Field(
        default_factory=dict, description="nightshift user -> OS account jobs run as when the worker is root"
    )
    allow_root_jobs: bool = Field(
        default=False, description="a root worker may run jobs of unmapped users as root (else refused)"
    )
    docker_images_allowed: list[str] = Field(
        default_factory=list, description="glob patterns of docker images jobs may use; empty = any"
    )
    max_grace_s: float = Field(default=300.0, ge=0, description="upper bound of a spec's grace_seconds")
    job_cgroups: Literal["auto", "off"] = Field(
        default="auto",
        description=(
            "auto: each job in a cgroup (v2) of its own where the worker may create them, so that no process "
            "of it outlives a stop; off: jobs are found by process group and run token only"
        ),
    )

    # --- telemetry, watchdogs, notifications (scheduler/telemetry, watchdogs.py, notify/) ---
    telemetry_interval_s: float = Field(default=10.0, gt=0, description="GPU and host sampling period")
    telemetry_retention_days: float = Field(default=90.0, gt=0, description="older history is deleted")
    idle_utilization_pct: float = Field(default=5.0, ge=0, le=100, description="GPU idle below this")
    idle_after_min: float = Field(default=30.0, gt=0, description="a task idle this long is reported")
    idle_action: Literal["notify", "stop", "requeue"] = Field(
        default="notify", description="what the idle watchdog does besides telling the owner"
    )
    gpu_max_temperature_c: float = Field(default=85.0, description="a GPU above this gets no new tasks")
    gpu_cool_temperature_c: float = Field(default=80.0, description="... until it is back below this")
    leftover_memory_mib: int = Field(
        default=256, ge=0, description="memory still used after a task ended that takes a GPU out of service"
    )
    notify: list[NotifyTarget] = Field(default_factory=list, description="webhook and e-mail targets")
    notify_retries: int = Field(default=5, ge=0, description="delivery retries after the first try")
    notify_backoff_s: float = Field(default=2.0, ge=0, description="first retry delay, doubling")
    smtp_host: str | None = None
    smtp_port: int = 25
    smtp_user: str | None = None
    smtp_password: str | None = None
    smtp_starttls: bool = False
    smtp_from: str = "nightshift@localhost"
    summary_time: str = Field(default="08:00", description="local HH:MM of the morning summary; empty = off")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Order of precedence: explicit arguments, environment, then `nightshift.toml`."""
        return (
            init_settings,
            env_settings,
            TomlConfigSettingsSource(settings_cls, toml_file=_toml_files()),
        )

    @field_validator("home", mode="after")
    @classmethod
    def _expand_home(cls, value: Path) -> Path:
        return value.expanduser().resolve()

    @property
    def logs_dir(self) -> Path:
        """Where each task's log file lives."""
        return self.home / "logs"

    @property
    def checkpoints_dir(self) -> Path:
        """Where each task's checkpoint folder (stable across attempts) lives."""
        return self.home / "checkpoints"

    @property
    def local_token_file(self) -> Path:
        """The local admin token that `nightshift up` writes on first start (mode 600)."""
        return self.home / "admin.token"

    @property
    def secrets_key_file(self) -> Path:
        """The key that seals secrets when `secrets_key` is unset (made on first use, mode 600)."""
        return self.home / "secrets.key"

    @property
    def resolved_database_url(self) -> str:
        """The database URL, defaulting to SQLite in the data folder."""
        return self.database_url or f"sqlite:///{self.home / 'nightshift.db'}"

    def model_post_init(self, __context: Any) -> None:
        if self.llm_api_key in {"", "changeme", "changethis"}:
            self.llm_api_key = None
        if "api_url" not in self.model_fields_set:  # `NIGHTSHIFT_PORT=8771 make up &`: the CLI calls 8771
            self.api_url = local_api_url(self.host, self.port)


def local_api_url(host: str, port: int) -> str:
    """The URL a client on this machine calls a server bound to `host`:`port` at (an address of every
    interface is called on loopback)."""
    if host in {"", "0.0.0.0", "::"}:
        host = "127.0.0.1"
    elif ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings (cached; tests call `get_settings.cache_clear()` after changing env)."""
    return Settings()
