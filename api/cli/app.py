"""`nightshift`: start the services, submit and inspect tasks, manage tokens."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import datetime, tzinfo
from functools import partial
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from api.cli.ask import ask_command
from api.cli.bulk import confirmed
from api.cli.command_line import command_from_words
from api.cli.listing import list_command
from api.cli.options import CLEAR_OPTIONS, GpuFractionOpt, GpuMemOpt, GpuModelOpt, TagOpt
from api.cli.provenance import with_git_source
from api.cli.python_env import with_python_env
from api.cli.render import (
    change_line,
    console,
    err_console,
    estimate_line,
    explain_panel,
    gpus_table,
    nodes_table,
    plain,
    print_error,
    print_json,
    queue_table,
    quota_table,
    reservation_words,
    short_time,
    simulation_table,
    stopping_line,
    task_detail,
    tokens_table,
)
from api.cli.report import report_command
from api.cli.secrets import secret_app
from api.cli.session import DEFAULT_MINUTES, SessionError, node_here, open_session, session_spec
from api.cli.sweep_params import param_grid, with_param_grid
from api.cli.sweeps import compare_command, rerun_line, sweep_counts_line, sweep_line, sweeps_command
from api.cli.waiting import wait_and_report, wait_command
from api.cli.watching import WatchOpt, refuse_watch_with_json, watch
from api.cli.zone import cli_zone
from api.client import LIVE_STATUSES, ClientError, NightshiftClient
from scheduler.edits import check_clearable, retagged, spec_differences
from scheduler.errors import NightshiftError, SpecError
from scheduler.resubmit import SpecAgain, spec_again, with_command
from scheduler.script_runner import with_interpreter
from scheduler.settings import get_settings
from scheduler.spec import load_spec_file
from scheduler.timeparse import parse_when

app = typer.Typer(
    no_args_is_help=True, add_completion=False, help="nightshift: a GPU job queue for small teams."
)
token_app = typer.Typer(no_args_is_help=True, help="Create, list and revoke API tokens (run on the server).")
app.add_typer(token_app, name="token")
node_app = typer.Typer(
    no_args_is_help=True,
    help="Drain a node (no new tasks) or put it back in service; reserve it for a team for a while.",
)
app.add_typer(node_app, name="node")
app.add_typer(secret_app, name="secret")

T = TypeVar("T")
JsonOpt = Annotated[bool, typer.Option("--json", help="print JSON for scripts")]


def _fail(message: str, code: int = 1, errors: Sequence[Mapping[str, Any]] = ()) -> None:
    print_error(message, errors)
    raise typer.Exit(code)


def _ids_or_sweep(task_ids: list[int] | None, sweep: int | None) -> list[int]:
    """The task ids given, each once; exit 2 unless there are some or `--sweep ID`, not both."""
    if bool(task_ids) == (sweep is not None):
        _fail("give task ids, or --sweep ID", code=2)
    return list(dict.fromkeys(task_ids or []))


def _with_client(action: Callable[[NightshiftClient], T]) -> T:
    client = NightshiftClient.from_settings(get_settings())
    try:
        return action(client)
    except ClientError as exc:
        _fail(exc.message, errors=exc.errors)
        raise  # unreachable: _fail raises
    finally:
        client.close()


def _setup_logging() -> None:
    level = os.environ.get("NIGHTSHIFT_LOG_LEVEL", "INFO")
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if logging.getLogger().getEffectiveLevel() > logging.DEBUG:
        # APScheduler logs each run of each periodic job at INFO (GPU telemetry alone every 10 s)
        logging.getLogger("apscheduler").setLevel(logging.WARNING)


# --- services ---------------------------------------------------------------------------------------


def _serve(*, api: bool, scheduler: bool, worker: bool, host: str | None, port: int | None) -> None:
    from api.server import serve

    settings = get_settings()
    _setup_logging()
    try:
        serve(
            settings,
            api=api,
            scheduler=scheduler,
            worker=worker,
            host=host or settings.host,
            port=port or settings.port,
        )
    except NightshiftError as exc:
        _fail(exc.message)


HostOpt = Annotated[str | None, typer.Option(help="address to bind (default 127.0.0.1)")]
PortOpt = Annotated[int | None, typer.Option(help="port to bind (default 8000)")]


@app.command()
def up(host: HostOpt = None, port: PortOpt = None) -> None:
    """Run everything in one process: API, scheduler and a worker (embedded Redis and SQLite by default)."""
    _serve(api=True, scheduler=True, worker=True, host=host, port=port)


@app.command("api")
def api_command(host: HostOpt = None, port: PortOpt = None) -> None:
    """Run the HTTP API only."""
    _serve(api=True, scheduler=False, worker=False, host=host, port=port)


@app.command("scheduler")
def scheduler_command() -> None:
    """Run the scheduler only."""
    _serve(api=False, scheduler=True, worker=False, host=None, port=None)


@app.command("worker")
def worker_command() -> None:
    """Run a worker for this node (elsewhere: set NIGHTSHIFT_REDIS_URL and NIGHTSHIFT_DATABASE_URL)."""
    _serve(api=False, scheduler=False, worker=True, host=None, port=None)


@app.command("assistant")
def assistant_command(
    host: HostOpt = None,
    port: Annotated[int | None, typer.Option(help="port to bind (default 7860)")] = None,
) -> None:
    """Serve the chat UI alone, on its own port, calling the API at NIGHTSHIFT_API_URL."""
    from api.server import serve_assistant

    settings = get_settings()
    _setup_logging()
    try:
        serve_assistant(settings, host=host or settings.host, port=port or settings.assistant_port)
    except NightshiftError as exc:
        _fail(exc.message)


# --- tokens -------------------------------------------------------------------------------------------


@token_app.command("create")
def token_create(
    user: Annotated[str, typer.Option(help="user name")],
    team: Annotated[str, typer.Option(help="team name")],
    admin: Annotated[bool, typer.Option("--admin", help="may see and act on every team")] = False,
) -> None:
    """Print a new API token for USER of TEAM (stored hashed; shown only now)."""
    from scheduler.store.db import create_db_engine, make_session_factory, migrate
    from scheduler.store.identity import create_token

    settings = get_settings()
    engine = create_db_engine(settings.resolved_database_url)
    try:
        migrate(engine)
        print(create_token(make_session_factory(engine), user=user, team=team, is_admin=admin))
        if os.geteuid() == 0 and user not in settings.run_as:  # `make up` as root runs such jobs as root
            err_console.print(
                f"warning: {user} has no `run_as` account: where the worker runs as root with "
                "allow_root_jobs (`make up` as root), their jobs run as root and can read this machine's "
                "admin token; map "
                f'them in nightshift.toml (run_as = {{{user} = "{user}"}})',
                markup=False,
            )
    except NightshiftError as exc:
        _fail(exc.message)
    finally:
        engine.dispose()


@token_app.command("revoke")
def token_revoke(
    token: Annotated[str | None, typer.Argument(help="the token, or its first 10 characters")] = None,
    user: Annotated[str | None, typer.Option("--user", help="every token of this user instead")] = None,
) -> None:
    """Revoke a token, or with --user every token of a user: the API refuses them within 2 s."""
    from scheduler.store.db import create_db_engine, make_session_factory, migrate
    from scheduler.store.identity import revoke_token, revoke_user_tokens

    if (token is None) == (user is None):
        _fail("give a token (or its first 10 characters), or --user NAME for all of a user's tokens", 2)
    settings = get_settings()
    engine = create_db_engine(settings.resolved_database_url)
    try:
        migrate(engine)
        factory = make_session_factory(engine)
        count = revoke_token(factory, token) if token is not None else revoke_user_tokens(factory, str(user))
        console.print(f"revoked {count} token(s); the API refuses them within 2 s")
    except NightshiftError as exc:
        _fail(exc.message)
    finally:
        engine.dispose()


@token_app.command("ls")
def token_ls(
    show_revoked: Annotated[bool, typer.Option("--all", help="revoked tokens too")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON for scripts")] = False,
) -> None:
    """Who has access: every active token's user, team, admin flag, prefix (what `revoke` takes) and age."""
    from scheduler.store.db import create_db_engine, make_session_factory, migrate
    from scheduler.store.identity import list_tokens

    settings = get_settings()
    engine = create_db_engine(settings.resolved_database_url)
    try:
        migrate(engine)
        records = list_tokens(make_session_factory(engine), include_revoked=show_revoked)
    finally:
        engine.dispose()
    if as_json:
        print_json([dataclasses.asdict(record) for record in records])
        return
    console.print(tokens_table(records, show_revoked))


# --- tasks -------------------------------------------------------------------------------------------


def build_submit_spec(
    args: list[str],
    zone: tzinfo,
    now: datetime,
    overrides: dict[str, Any],
    after: str | None,
    like: dict[str, Any] | None = None,
    deadline: str | None = None,
    notes: list[str] | None = None,
) -> dict[str, Any]:
    """The spec to send: a YAML/JSON file if the first argument is one (or `like`, an earlier task's spec
    to run again), then options, then the command. `after` and `deadline` are read as `nightshift change`
    reads them (`parse_when`, in `zone`: the cluster's, `cli_zone`). What was read other than as typed is
    added to `notes` (a script run with its interpreter)."""
    spec: dict[str, Any] = dict(like or {})
    looks_like_spec_file = bool(args) and args[0].endswith((".yaml", ".yml", ".json"))
    if like is not None and looks_like_spec_file:
        raise NightshiftError("give a spec file or --like ID, not both")
    if looks_like_spec_file and len(args) == 1 and not Path(args[0]).is_file():
        raise NightshiftError(f"spec file {args[0]} not found (no such file in {os.getcwd()})")
    if looks_like_spec_file and Path(args[0]).is_file():
        spec = load_spec_file(Path(args[0]))
        path, args = args[0], args[1:]
        if args and args[0] == "--":  # `FILE -- COMMAND`: the command replaces the file's
            args = args[1:]
        elif args and args[0].startswith("-"):  # parsing stops at the file: these would become the command
            options = " ".join(args)
            raise NightshiftError(
                f"options go before the spec file: nightshift submit {options} {path} "
                "(after the file, only `-- COMMAND` may follow, to replace its command)"
            )
    if args:
        spec = with_command(spec, _runnable(command_from_words(args), args[0], notes))
    if "command" not in spec:
        raise NightshiftError("nothing to run: give a command after `--` (or a spec file with `command`)")
    spec.setdefault("workdir", os.getcwd())
    given = {key: value for key, value in overrides.items() if value is not None}
    if "env" in given:  # `--env` adds to (or replaces single names of) the file's or the earlier task's env
        given["env"] = {**(spec.get("env") or {}), **given["env"]}
    if "workdir" in given:  # the service runs elsewhere: a relative folder means one under here
        given["workdir"] = os.path.abspath(given["workdir"])
    spec.update(given)
    if after:
        not_before = parse_when(after, now, zone)
        spec["not_before"] = not_before.isoformat()
        if not_before < now and notes is not None:  # allowed (as Slurm's --begin): it starts at once
            notes.append(f"--after {after}: {not_before:%Y-%m-%d %H:%M} has passed, so it may start at once")
    if deadline:
        spec["deadline"] = parse_when(deadline, now, zone).isoformat()
    return spec


def env_from_options(pairs: list[str] | None) -> dict[str, str] | None:
    """`--env NAME=VALUE` options as a mapping (None when none were given); a pair without `=` is an error
    that says so."""
    if not pairs:
        return None
    env: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise NightshiftError(f"--env wants NAME=VALUE, got {pair!r}")
        env[name] = value
    return env


# `--clear` takes a spec field or the option that sets it
CLEAR_HELP = (
    "priority, after, tonight, deadline, time-limit, estimate, retries, depends-on, after-any (or the spec's "
    "field names)"
)


def cleared_fields(names: list[str]) -> list[str]:
    """The spec fields `--clear` names (an option's name or the field's: `time-limit` is
    `time_limit_minutes`); NightshiftError naming one that cannot go back to a default."""
    fields = [CLEAR_OPTIONS.get(name.strip().lstrip("-"), name.strip()) for name in names]
    try:
        check_clearable(fields)
    except SpecError as exc:
        raise NightshiftError(f"--clear: {exc.message} (or {', '.join(CLEAR_OPTIONS)})") from None
    return list(dict.fromkeys(fields))


def refuse_set_and_cleared(cleared: list[str], given: Collection[str]) -> None:
    """NightshiftError when a field `--clear` names is also given a new value."""
    both = next((field for field in cleared if field in given), None)
    if both is not None:
        raise NightshiftError(f"{both}: a new value, or --clear to its default: not both")


def _earlier_spec(like: int | None, clear: list[str], given: set[str], now: datetime) -> SpecAgain:
    """`submit --like ID [--clear FIELD]`: task ID's spec to run again, less the fields cleared (exit 2 for
    a --clear without --like, a field it cannot clear, or one also given a new value)."""
    if like is None:
        _fail("--clear leaves a field of an earlier task out: give it with --like ID", code=2)
    try:
        cleared = cleared_fields(clear)
        refuse_set_and_cleared(cleared, given)
    except NightshiftError as exc:
        _fail(exc.message, code=2)
    return _with_client(lambda client: spec_again(client.get_task(like)["spec"], now, cleared))


@app.command(context_settings={"allow_interspersed_args": False})
def submit(
    args: Annotated[list[str] | None, typer.Argument(help="[FILE.yaml] -- COMMAND...")] = None,
    gpus: Annotated[int | None, typer.Option(help="GPUs (0 = CPU only)")] = None,
    gpu_mem: GpuMemOpt = None,
    gpu_fraction: GpuFractionOpt = None,
    priority: Annotated[
        str | None,
        typer.Option(
            help="low | normal | high | urgent: each step is worth 2 h of waiting (`explain` shows it)"
        ),
    ] = None,
    tonight: Annotated[bool, typer.Option("--tonight", help="start only in the off-peak window")] = False,
    after: Annotated[str | None, typer.Option(help="not before: 23:00, tomorrow 9am, +2h, ISO")] = None,
    deadline: Annotated[str | None, typer.Option(help="should finish by: 8am, tomorrow 9am, ISO")] = None,
    time_limit: Annotated[float | None, typer.Option("--time-limit", help="minutes, then stopped")] = None,
    estimate: Annotated[float | None, typer.Option("--estimate", help="expected minutes")] = None,
    conda: Annotated[str | None, typer.Option("--conda", help="conda environment")] = None,
    docker: Annotated[str | None, typer.Option("--docker", help="docker image")] = None,
    retries: Annotated[int | None, typer.Option(help="retries after a failure")] = None,
    param: Annotated[
        list[str] | None,
        typer.Option(
            "--param",
            help="a sweep without a spec file: NAME=V1,V2 or NAME=1..5, the command says {NAME} (repeat)",
        ),
    ] = None,
    max_running: Annotated[
        int | None, typer.Option("--max-running", help="a sweep: run at most N of its tasks at once")
    ] = None,
    name: Annotated[str | None, typer.Option(help="a short name")] = None,
    gpu_model: GpuModelOpt = None,
    node: Annotated[str | None, typer.Option("--node", help="run on this node only")] = None,
    depends_on: Annotated[
        list[int] | None, typer.Option("--depends-on", help="start after task ID succeeds")
    ] = None,
    after_any: Annotated[
        list[int] | None,
        typer.Option("--after-any", help="start after task ID ends: succeeded, failed or cancelled (repeat)"),
    ] = None,
    env: Annotated[list[str] | None, typer.Option("--env", help="NAME=VALUE for the job (repeat)")] = None,
    secret: Annotated[
        list[str] | None,
        typer.Option("--secret", help="NAME of your secret (`nightshift secret set`) the job gets (repeat)"),
    ] = None,
    tag: TagOpt = None,
    workdir: Annotated[
        str | None, typer.Option("--workdir", help="run in this folder (default: where you are)")
    ] = None,
    like: Annotated[
        int | None,
        typer.Option("--like", help="task ID's spec, to run it again (options and -- COMMAND change it)"),
    ] = None,
    clear: Annotated[
        list[str] | None,
        typer.Option(
            "--clear",
            help=f"with --like: leave this field of task ID out, back to its default (repeat): {CLEAR_HELP}",
        ),
    ] = None,
    idempotency_key: Annotated[
        str | None, typer.Option("--idempotency-key", help="submit at most once")
    ] = None,
    wait: Annotated[
        bool, typer.Option("--wait", help="then wait until it ends and exit as `nightshift wait` does")
    ] = False,
    test_only: Annotated[
        bool,
        typer.Option(
            "--test-only", help="check it and say when it would start, submit nothing (sbatch --test-only)"
        ),
    ] = False,
    no_git: Annotated[
        bool, typer.Option("--no-git", help="do not record the workdir's git commit with the task")
    ] = False,
    worker_env: Annotated[
        bool,
        typer.Option(
            "--worker-env", help="the worker's PATH, not this shell's (its active virtualenv or conda env)"
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Submit a task: `nightshift submit --gpus 2 -- python train.py`; `--like 12`: task 12 again."""
    _refuse_option_as_name(name)
    settings = get_settings()
    now = datetime.now().astimezone()
    overrides: dict[str, Any] = {
        "gpus": gpus, "gpu_memory_gb": gpu_mem, "gpu_fraction": gpu_fraction, "priority": priority,
        "offpeak": True if tonight else None,
        "time_limit_minutes": time_limit, "estimated_minutes": estimate, "conda_env": conda,
        "docker_image": docker, "retries": retries, "name": name, "depends_on": depends_on or None,
        "depends_on_any": after_any or None, "gpu_model": gpu_model, "node": node, "tags": tag or None,
        "workdir": workdir, "max_running": max_running, "secrets": secret or None,
    }  # fmt: skip
    given = {key for key, value in overrides.items() if value is not None}
    given |= {key for key, value in (("not_before", after), ("deadline", deadline)) if value}
    again = _earlier_spec(like, clear or [], given, now) if like or clear else None
    try:
        overrides["env"] = env_from_options(env)
        notes: list[str] = []
        spec = build_submit_spec(
            list(args or []), cli_zone(settings), now, overrides, after, again and again.spec, deadline, notes
        )
        spec = with_param_grid(spec, param_grid(param or []))
        spec = with_git_source(with_python_env(spec, {} if worker_env else os.environ, notes), not no_git)
    except NightshiftError as exc:
        _fail(exc.message, code=2)
    _print_notes(notes, again.notes() if again and not as_json else [], like)
    if test_only:
        _test_only(spec, as_json)
        return
    if spec.get("sweep") is not None:  # one task per parameter set, under one sweep id
        sweep = _with_client(lambda client: client.submit_sweep(spec, idempotency_key))
        if not as_json:
            console.print(sweep_line(sweep))
        elif not wait:  # with --wait, the ended tasks are printed instead
            print_json(sweep)
        if not as_json:  # the tasks of a sweep share their times: each warning once
            warned = dict.fromkeys(w for task in sweep["tasks"] for w in task.get("warnings") or [])
            _warning_notes({"warnings": list(warned)})
            _budget_note()
        if wait:
            _wait_then_exit([task["id"] for task in sweep["tasks"]], as_json)
        return
    task, created = _with_client(lambda client: client.submit_once(spec, idempotency_key))
    if as_json:
        if not wait:  # with --wait, the ended task is printed instead
            print_json(task)
    elif not created:  # the key was used before, for this same task: nothing new was queued
        console.print(
            f"already submitted as task [bold]{task['id']}[/] ({task['name']}) with idempotency key "
            f"{idempotency_key!r}: {task['status']}; nothing new was queued"
        )
    else:
        console.print(f"submitted task [bold]{task['id']}[/] ({task['name']}): {task['status']}")
        _warning_notes(task)
        _budget_note(cpu_only=task["gpus"] == 0)
    if wait:
        _wait_then_exit([task["id"]], as_json)


def _print_notes(notes: list[str], unlike: list[str], like: int | None) -> None:
    """What was read other than as typed (on stderr), and how the new task differs from task `like`."""
    for note in notes:
        err_console.print(f"note: {note}", markup=False)
    for note in unlike:
        console.print(f"as task {like}, but {note}")


def _test_only(spec: dict[str, Any], as_json: bool) -> None:
    """`submit --test-only`: the spec checked as the submission would be, and when it would start."""
    checked = _with_client(lambda client: client.check(spec))
    if as_json:
        print_json(checked)
        return
    tasks = checked["tasks"]
    if checked.get("estimate") is None:  # a sweep: each of its tasks checked
        names = ", ".join(plain(task["name"]) for task in tasks[:5]) + (", ..." if len(tasks) > 5 else "")
        console.print(f"would submit a sweep of {len(tasks)} task{'' if len(tasks) == 1 else 's'}: {names}")
    else:
        console.print(f"would submit {plain(tasks[0]['name'])}: {estimate_line(checked['estimate'])}")
    console.print("nothing was submitted (--test-only)")


def _runnable(command: str, first_word: str, notes: list[str] | None) -> str:
    """`command` as typed, or with its script's interpreter (`train.py` -> `python train.py`) when its first
    word is a script that is no command on PATH: `/bin/sh` would not find it (exit 127), as the chat reads
    it. Said in `notes`, so the person sees what will run."""
    if shutil.which(first_word):
        return command
    runnable = with_interpreter(command)
    if runnable != command and notes is not None:
        notes.append(f"running `{runnable}`: {first_word} is a script, not a command on PATH")
    return runnable


def _refuse_option_as_name(name: str | None) -> None:
    """Exit 2 on a `--name` that starts with `-`: it took the next option or the `--` before the command
    as its value (`--name -- python x.py`)."""
    if name is not None and name.startswith("-"):
        _fail(
            f"--name got {name!r}, which looks like an option: a name cannot start with '-'; give one "
            "before `--` (e.g. --name baseline -- python train.py)",
            code=2,
        )


def _wait_then_exit(task_ids: list[int], as_json: bool) -> None:
    """`submit --wait`: wait for what was just submitted, then exit with `nightshift wait`'s code."""
    raise typer.Exit(_with_client(lambda client: wait_and_report(client, task_ids, None, as_json)))


def _warning_notes(task: dict[str, Any]) -> None:
    """What the API's answer to a submit or a change warns of (a deadline the task cannot meet), as `note:`
    lines on stderr: the task is queued all the same."""
    for warning in task.get("warnings") or []:
        err_console.print(f"note: {warning}", markup=False)


def _budget_note(cpu_only: bool = False) -> None:
    """After a submit: the team's budget warning (80 %) or hard stop, so nobody finds out the next morning
    (a CPU-only task uses no GPU-hours: the hard stop does not hold it)."""
    client = NightshiftClient.from_settings(get_settings())
    try:
        quota = client.get("/quota")
    except ClientError:  # the task is in: a note that cannot be fetched is no reason to fail the submit
        return
    finally:
        client.close()
    if quota.get("state") == "exhausted":
        then = "it starts anyway: CPU-only" if cpu_only else "it waits until the team's usage falls"
        err_console.print(f"note: {quota.get('message')}: {then} (`nightshift quota`)", markup=False)
    elif quota.get("state") == "warning":
        err_console.print(f"note: {quota.get('message')} (`nightshift quota`)", markup=False)


app.command("ls")(list_command)  # api/cli/listing.py


@app.command()
def show(task_id: int, as_json: JsonOpt = False) -> None:
    """Show one task."""
    task = _with_client(lambda client: client.get_task(task_id))
    if as_json:
        print_json(task)
    else:
        console.print(task_detail(task))


@app.command()
def cancel(
    task_ids: Annotated[list[int] | None, typer.Argument(help="the tasks")] = None,
    sweep: Annotated[int | None, typer.Option("--sweep", help="cancel every task of this sweep")] = None,
    mine: Annotated[
        bool, typer.Option("--mine", help="your own queued and running tasks (narrowed by the options below)")
    ] = False,
    status: Annotated[str | None, typer.Option(help="with --mine: only queued, or only running")] = None,
    name: Annotated[str | None, typer.Option(help="with --mine: this name, or 'train*' for a prefix")] = None,
    tag: Annotated[str | None, typer.Option(help="with --mine: those carrying this tag")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="with --mine: do not ask first")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Cancel queued tasks or stop running ones (or all the tasks of a sweep with --sweep ID, or your own
    chosen by filters with --mine, as `scancel -u $USER`; it shows them and asks first).

    Several ids: each is cancelled on its own, one refusal does not stop the others (exit 1 if any)."""
    if mine:
        _cancel_mine(task_ids, sweep, status, name, tag, yes, as_json)
        return
    if status or name or tag:
        _fail("--status, --name and --tag choose among your own tasks: give them with --mine", code=2)
    ids = _ids_or_sweep(task_ids, sweep)
    if sweep is not None:
        group = _with_client(lambda client: client.cancel_sweep(sweep))
        # a running task has been sent its stop signal and ends within its grace period
        stopping = "stopping (stop signal sent)"
        print_json(group) if as_json else console.print(sweep_counts_line(group, stopping))
        return
    _on_each(ids, lambda client: client.cancel, _print_cancelled, as_json)


def _cancel_mine(
    task_ids: list[int] | None,
    sweep: int | None,
    status: str | None,
    name: str | None,
    tag: str | None,
    yes: bool,
    as_json: bool,
) -> None:
    """`cancel --mine`: the caller's live tasks that match, shown and confirmed, each cancelled on its own."""
    if task_ids or sweep is not None:
        _fail("give task ids, --sweep ID or --mine with filters: one way to choose", code=2)
    if status is not None and status not in LIVE_STATUSES:
        _fail(f"--status: {' or '.join(LIVE_STATUSES)} (only a live task can be cancelled)", code=2)
    ids = _with_client(lambda client: client.own_live_task_ids(status, name, tag))
    if not ids:
        console.print(
            "none of your tasks is queued or running"
            + (" with these filters" if name or tag or status else "")
        )
        return
    if not confirmed(ids, yes):
        console.print("nothing was cancelled")
        return
    _on_each(ids, lambda client: client.cancel, _print_cancelled, as_json)


def _on_each(
    task_ids: list[int],
    act: Callable[[NightshiftClient], Callable[[int], dict[str, Any]]],
    say: Callable[[dict[str, Any]], None],
    as_json: bool,
) -> None:
    """Do `act` to each task on its own (as `scancel 12 13` does): one refusal does not stop the others;
    `say` prints each done, each refusal is printed with its id, and the exit is 1 if any. One id alone:
    its task (`--json`: the object, not a list of one), or its error, as for any command."""
    if len(task_ids) == 1:
        task = _with_client(lambda client: act(client)(task_ids[0]))
        print_json(task) if as_json else say(task)
        return

    def each(client: NightshiftClient) -> tuple[list[dict[str, Any]], list[tuple[int, ClientError]]]:
        done, refused = [], []
        for task_id in task_ids:
            try:
                done.append(act(client)(task_id))
            except ClientError as exc:
                if exc.status_code == 0:  # the API is gone: the rest would fail alike
                    raise
                refused.append((task_id, exc))
        return done, refused

    done, refused = _with_client(each)
    if as_json:
        print_json(done)
    else:
        for task in done:
            say(task)
    for task_id, error in refused:  # "task 9 not found" names its task; other refusals get its id first
        named = error.message.startswith(f"task {task_id} ")
        print_error(error.message if named else f"task {task_id}: {error.message}")
    if refused:
        raise typer.Exit(1)


def _print_cancelled(task: dict[str, Any]) -> None:
    if task["status"] == "cancelled":
        console.print(f"task {task['id']} cancelled")
    else:
        console.print(stopping_line(task))


def task_changes(
    overrides: Mapping[str, Any],
    after: str | None,
    deadline: str | None,
    start_now: bool,
    zone: tzinfo,
    more: bool = False,
) -> dict[str, Any]:
    """The PATCH body of `nightshift change`: the options given, times read as `--after` reads them
    (`more`: something else is changed too, so none of these is fine)."""
    changes = {key: value for key, value in overrides.items() if value is not None}
    now = datetime.now().astimezone()
    if start_now and (after or changes.get("offpeak")):
        raise NightshiftError("--now starts it as soon as GPUs are free: not with --after or --tonight")
    if start_now:
        changes.update(not_before=None, offpeak=False)
    if after:
        changes["not_before"] = parse_when(after, now, zone).isoformat()
    if deadline:
        changes["deadline"] = parse_when(deadline, now, zone).isoformat()
    if not changes and not more:
        raise NightshiftError(
            "nothing to change: give --priority, --after, --now, --tonight, ... (see --help)"
        )
    return changes


@app.command()
def change(
    task_ids: Annotated[
        list[int] | None,
        typer.Argument(help="queued tasks (or running ones: --time-limit, --estimate, ...)"),
    ] = None,
    sweep: Annotated[int | None, typer.Option("--sweep", help="every queued task of this sweep")] = None,
    priority: Annotated[str | None, typer.Option(help="low | normal | high | urgent")] = None,
    after: Annotated[str | None, typer.Option(help="not before: 23:00, tomorrow 9am, +2h, ISO")] = None,
    start_now: Annotated[
        bool, typer.Option("--now", help="drop its not-before time and off-peak wait")
    ] = False,
    tonight: Annotated[
        bool | None,
        typer.Option("--tonight/--anytime", help="start only in the off-peak window, or at any hour"),
    ] = None,
    deadline: Annotated[str | None, typer.Option(help="should finish by: 8am, tomorrow 9am, ISO")] = None,
    time_limit: Annotated[float | None, typer.Option("--time-limit", help="minutes, then stopped")] = None,
    estimate: Annotated[float | None, typer.Option("--estimate", help="expected minutes")] = None,
    retries: Annotated[int | None, typer.Option(help="retries after a failure")] = None,
    name: Annotated[str | None, typer.Option(help="a short name")] = None,
    depends_on: Annotated[
        list[int] | None,
        typer.Option("--depends-on", help="wait for task ID to succeed (repeat; replaces what it waits for)"),
    ] = None,
    after_any: Annotated[
        list[int] | None,
        typer.Option("--after-any", help="wait for task ID to end, however it ends (repeat)"),
    ] = None,
    tag: Annotated[
        list[str] | None, typer.Option("--tag", help="add this label (repeat); its other tags stay")
    ] = None,
    untag: Annotated[list[str] | None, typer.Option("--untag", help="take this label away (repeat)")] = None,
    max_running: Annotated[
        int | None,
        typer.Option(
            "--max-running",
            min=0,
            max=10000,
            help="with --sweep: at most N of its tasks at once (0: no limit)",
        ),
    ] = None,
    clear: Annotated[
        list[str] | None,
        typer.Option("--clear", help=f"put this field back to its default (repeat): {CLEAR_HELP}"),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Change a queued task's priority, start window, the tasks it waits for, limits, retries or name; it
    keeps its age. A running task's time limit, estimate, retries, name and tags (`nightshift change 5
    --time-limit 240`, `--tag exp7`). `--clear depends_on` lets it start without waiting for its parents.

    With --sweep ID, every queued task of that sweep (and --max-running, how many of them run at once).
    Several ids: each changed on its own (exit 1 if any is refused). GPUs, memory or the command:
    `nightshift submit --like ID ...`, then cancel ID."""
    overrides = {
        "priority": priority, "offpeak": tonight, "time_limit_minutes": time_limit,
        "estimated_minutes": estimate, "retries": retries, "name": name,
        "depends_on": depends_on or None, "depends_on_any": after_any or None,
    }  # fmt: skip
    ids = _ids_or_sweep(task_ids, sweep)
    _refuse_option_as_name(name)
    if max_running is not None and sweep is None:
        _fail("--max-running limits how many of a sweep's tasks run at once: give it with --sweep ID", code=2)
    limit = {} if max_running is None else {"max_running": max_running or None}  # 0 lifts the limit
    retag = (tag or [], untag or [])
    if sweep is not None and (tag or untag):
        _fail("--tag and --untag change one task's labels: give task ids, not --sweep", code=2)
    try:
        cleared = cleared_fields(clear or [])
        changes = task_changes(
            overrides,
            after,
            deadline,
            start_now,
            cli_zone(get_settings()),
            bool(limit or cleared or tag or untag),
        )
        refuse_set_and_cleared(cleared, changes)
    except NightshiftError as exc:
        _fail(exc.message, code=2)
    changes.update(limit)
    changes.update(dict.fromkeys(cleared))
    if sweep is not None:
        group = _with_client(lambda client: client.change_sweep(sweep, changes))
        print_json(group) if as_json else console.print(
            f"{sweep_counts_line(group)}; changed: {', '.join(sorted(changes))}"
        )
        return
    diffs: dict[int, dict[str, tuple[Any, Any]]] = {}

    def changed(client: NightshiftClient) -> Callable[[int], dict[str, Any]]:
        def one(task_id: int) -> dict[str, Any]:
            task, diffs[task_id] = _change_task(client, task_id, changes, retag)
            return task

        return one

    def say(task: dict[str, Any]) -> None:
        console.print(change_line(int(task["id"]), diffs[int(task["id"])]), highlight=False)
        _warning_notes(task)

    _on_each(ids, changed, say, as_json)


def _change_task(
    client: NightshiftClient,
    task_id: int,
    changes: dict[str, Any],
    retag: tuple[list[str], list[str]] = ([], []),
) -> tuple[dict[str, Any], dict[str, tuple[Any, Any]]]:
    """Send only what really changes a queued or running task (nothing when it already is so), its tags
    with `retag`'s added and taken away; the task after, and each changed field's (before, after). Anything
    the cluster refuses, it answers itself."""
    task = client.get_task(task_id)
    if retag[0] or retag[1]:
        try:
            tags = retagged(task_id, (task.get("spec") or {}).get("tags") or [], *retag)
        except SpecError as exc:
            raise ClientError(422, exc.message) from None
        changes = {**changes, "tags": tags}
    if task.get("status") not in ("queued", "running"):
        return client.change(task_id, changes), {}
    try:
        diff = spec_differences(task_id, task.get("spec") or {}, changes)
    except SpecError:
        return client.change(task_id, changes), {}  # its 422 says what to fix
    if not diff:
        return task, {}
    return client.change(task_id, {field: changes[field] for field in diff}), diff


SweepOpt = Annotated[int | None, typer.Option("--sweep", help="every task of this sweep")]


@app.command()
def hold(
    task_ids: Annotated[list[int] | None, typer.Argument(help="queued tasks")] = None,
    sweep: SweepOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Keep queued tasks from starting until `nightshift release`; they keep their priority and age.

    With --sweep ID, every queued task of that sweep. Several ids: each on its own (exit 1 if any is
    refused)."""
    ids = _ids_or_sweep(task_ids, sweep)
    if sweep is not None:
        group = _with_client(lambda client: client.hold_sweep(sweep))
        then = f"held ones start only after `nightshift release --sweep {sweep}`"
        print_json(group) if as_json else console.print(f"{sweep_counts_line(group)}: {then}")
        return

    def say(task: dict[str, Any]) -> None:
        console.print(f"task {task['id']} held: it starts only after `nightshift release {task['id']}`")

    _on_each(ids, lambda client: client.hold, say, as_json)


@app.command()
def requeue(
    task_ids: Annotated[list[int], typer.Argument(help="running tasks")],
    hold: Annotated[
        bool, typer.Option("--hold", help="keep them held in the queue until `nightshift release`")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Stop running tasks and put them back in the queue with their age (as `scontrol requeue`): to free a
    node (`nightshift node drain` it first, so they start elsewhere), or to restart a task that resumes from
    its checkpoint. Not counted against `retries`. Several ids: each on its own (exit 1 if any is refused)."""

    def say(task: dict[str, Any]) -> None:
        then = f", held until `nightshift release {task['id']}`" if hold else ""
        console.print(
            f"task {task['id']} stopping on {task.get('node') or 'its node'} (its stop signal, then its "
            f"grace period): it goes back to the queue with its age{then}"
        )

    _on_each(task_ids, lambda client: partial(client.requeue, hold=hold), say, as_json)


@app.command()
def release(
    task_ids: Annotated[list[int] | None, typer.Argument(help="held tasks")] = None,
    sweep: SweepOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Let held tasks start again, with the priority and age they had.

    With --sweep ID, every held task of that sweep. Several ids: each on its own (exit 1 if any is
    refused)."""
    ids = _ids_or_sweep(task_ids, sweep)
    if sweep is not None:
        group = _with_client(lambda client: client.release_sweep(sweep))
        print_json(group) if as_json else console.print(sweep_counts_line(group))
        return

    def say(task: dict[str, Any]) -> None:
        console.print(f"task {task['id']} released: queued again")

    _on_each(ids, lambda client: client.release, say, as_json)


@app.command()
def rerun(
    task_ids: Annotated[
        list[int] | None, typer.Argument(help="tasks of one sweep (default: all that failed)")
    ] = None,
    sweep: Annotated[
        int | None, typer.Option("--sweep", min=1, help="the sweep whose tasks to run again")
    ] = None,
    status: Annotated[
        list[str] | None,
        typer.Option(help="run again the tasks that ended so: failed (default), cancelled, succeeded"),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Run a sweep's failed tasks again, each in its place: `nightshift rerun --sweep 3` (`--status
    cancelled` for others), or some of them: `nightshift rerun 12 15`. The new tasks keep their parameters;
    `compare` and `sweeps` read them instead of the old ones, which keep their record. A task of no sweep:
    `nightshift submit --like ID`."""
    if not task_ids and sweep is None:
        _fail("give --sweep ID (its failed tasks) or the ids of a sweep's tasks", code=2)
    ids = list(task_ids or [])
    # named tasks ran again whatever way they ended, unless --status says which
    statuses = status or (["failed", "cancelled", "succeeded"] if ids else ["failed"])

    def run(client: NightshiftClient) -> dict[str, Any]:
        sweep_id = sweep if sweep is not None else _sweep_of(client, ids)
        return client.rerun_sweep(sweep_id, statuses, ids or None)

    group = _with_client(run)
    if as_json:
        print_json(group)
        return
    console.print(rerun_line(group))
    console.print(sweep_counts_line(group))


def _sweep_of(client: NightshiftClient, task_ids: list[int]) -> int:
    """The one sweep these tasks belong to (exit 1 when one is in none, or they are in several)."""
    sweeps = {task_id: client.get_task(task_id).get("sweep_id") for task_id in task_ids}
    loose = next((task_id for task_id, sweep_id in sweeps.items() if sweep_id is None), None)
    if loose is not None:
        _fail(f"task {loose} is in no sweep: run it again with `nightshift submit --like {loose}`")
    if len(set(sweeps.values())) > 1:
        _fail("these tasks are in different sweeps: run one sweep's tasks again at a time")
    return int(next(iter(sweeps.values())))


@app.command()
def logs(
    task_id: int,
    follow: Annotated[bool, typer.Option("-f", "--follow", help="keep printing until the task ends")] = False,
    tail: Annotated[
        int | None, typer.Option("--tail", "-n", min=0, help="only the last N lines (0: none, as tail -n 0)")
    ] = None,
) -> None:
    """Print a task's output."""

    def run(client: NightshiftClient) -> None:
        task = client.get_task(task_id)
        if task["status"] == "queued":  # nothing (more) to show yet: say why, on stderr
            reason = client.get(f"/tasks/{task_id}/explain").get("reason") or "queued"
            then = "; its output follows once it starts" if follow else ""
            err_console.print(f"task {task_id} is waiting to start ({reason}){then}", markup=False)
        if follow:
            for chunk in client.follow_logs(task_id, tail):
                sys.stdout.write(chunk)
                sys.stdout.flush()
            return
        if tail == 0:  # nothing, as `tail -n 0`: no request, and no "it never ran" note below
            return
        text = client.logs(task_id, tail)
        sys.stdout.write(text)
        if text or task["status"] == "queued":
            return
        where = f" on {task['node']}" if task.get("node") else ""
        if task.get("reason") == "executor":  # claimed, but its job could not be started there
            how = task.get("message") or "see `nightshift explain`"
            err_console.print(
                f"task {task_id} has no output: it could not start{where} ({task['status']}: {how})",
                markup=False,
            )
        elif task.get("started_at"):  # every attempt writes a header line: the file itself is gone
            err_console.print(f"task {task_id} ran{where}, but its log file is gone", markup=False)
        else:  # it ended without ever running: say how, on stderr
            how = task.get("message") or task.get("reason") or task["status"]
            err_console.print(
                f"task {task_id} has no output: it never ran ({task['status']}: {how})", markup=False
            )

    _with_client(run)


@app.command()
def queue(as_json: JsonOpt = False, every_s: WatchOpt = None) -> None:
    """The queue, best first (`--watch 2`: redrawn every 2 s)."""
    refuse_watch_with_json(every_s, as_json)
    if every_s is not None:
        _with_client(lambda client: watch(lambda: queue_table(client.queue()), every_s))
        return
    data = _with_client(lambda client: client.queue())
    if as_json:
        print_json(data)
    else:
        console.print(queue_table(data))


@app.command()
def gpus(as_json: JsonOpt = False, every_s: WatchOpt = None) -> None:
    """GPUs of every node: memory, utilization, temperature, power, tasks (`--watch 2`: redrawn)."""
    refuse_watch_with_json(every_s, as_json)
    if every_s is not None:
        _with_client(lambda client: watch(lambda: gpus_table(client.gpus()), every_s))
        return
    data = _with_client(lambda client: client.gpus())
    if as_json:
        print_json(data)
    else:
        console.print(gpus_table(data))


@app.command()
def explain(
    task_ids: Annotated[list[int], typer.Argument(help="one task or several")], as_json: JsonOpt = False
) -> None:
    """Why a task is not running yet, when it should start, and its priority broken into parts.

    Several ids: each in turn (`--json`: a list; exit 1 if any cannot be explained)."""
    ids = list(dict.fromkeys(task_ids))
    _on_each(
        ids,
        lambda client: lambda i: client.get(f"/tasks/{i}/explain"),
        lambda data: console.print(explain_panel(data)),
        as_json,
    )


@app.command()
def estimate(
    task_id: Annotated[int | None, typer.Argument(help="a queued task (or describe a new one)")] = None,
    gpus: Annotated[int, typer.Option(help="GPUs of the new task")] = 1,
    gpu_mem: GpuMemOpt = None,
    minutes: Annotated[float | None, typer.Option("--estimate", help="expected minutes")] = None,
    time_limit: Annotated[float | None, typer.Option("--time-limit", help="time limit in minutes")] = None,
    name: Annotated[str | None, typer.Option(help="its name: run time learned from your past runs")] = None,
    depends_on: Annotated[
        list[int] | None, typer.Option("--depends-on", help="it waits for task ID to succeed")
    ] = None,
    after_any: Annotated[
        list[int] | None, typer.Option("--after-any", help="it waits for task ID to end, however it ends")
    ] = None,
    tonight: Annotated[bool, typer.Option("--tonight", help="start only in the off-peak window")] = False,
    after: Annotated[str | None, typer.Option(help="not before: 23:00, tomorrow 9am, +2h, ISO")] = None,
    gpu_model: GpuModelOpt = None,
    node: Annotated[str | None, typer.Option(help="only this node")] = None,
    as_json: JsonOpt = False,
) -> None:
    """How long would I wait, and what would it cost? For a queued task, or a new one like this."""
    not_before = None
    if after:
        try:
            not_before = parse_when(after, datetime.now().astimezone(), cli_zone(get_settings())).isoformat()
        except NightshiftError as exc:
            _fail(exc.message, code=2)
    params = {
        "task_id": task_id, "gpus": gpus, "gpu_memory_gb": gpu_mem, "estimated_minutes": minutes,
        "offpeak": "true" if tonight else None, "not_before": not_before,
        "time_limit_minutes": time_limit, "name": name, "depends_on": depends_on or None,
        "depends_on_any": after_any or None, "gpu_model": gpu_model, "node": node,
    }  # fmt: skip
    data = _with_client(lambda client: client.get("/estimate", **params))
    if as_json:
        print_json(data)
    else:
        console.print(estimate_line(data))


@app.command()
def quota(
    team: Annotated[str | None, typer.Option(help="(admins) another team")] = None, as_json: JsonOpt = False
) -> None:
    """Your team's GPU cap and GPU-hour budgets."""
    data = _with_client(lambda client: client.get("/quota", team=team))
    if as_json:
        print_json(data)
    else:
        console.print(quota_table(data))


@app.command()
def simulate(
    trace: Annotated[Path, typer.Argument(help="trace CSV: submit_time_s, duration_s, num_gpus, ...")],
    gpus: Annotated[str, typer.Option("--gpus", help="GPUs per node, e.g. 8x24 or 4x80,4x24")] = "8x24",
    nodes: Annotated[int, typer.Option(help="how many such nodes")] = 1,
    policy: Annotated[str, typer.Option(help="fifo | backfill | nightshift")] = "nightshift",
    oracle: Annotated[bool, typer.Option("--oracle", help="let the policy see true run times")] = False,
    site_settings: Annotated[
        bool,
        typer.Option(
            "--settings",
            help="use this site's policy settings (nightshift.toml, NIGHTSHIFT_*: caps, budgets, off-peak, "
            "fair share, short_job_width_exponent) instead of the built-in defaults; --policy still decides",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Replay a trace through the scheduling core with a virtual clock and print the metrics."""
    from scheduler.service import policy_config_of
    from scheduler.simulate.runner import run_simulation

    if nodes < 1:
        _fail("--nodes must be at least 1", code=2)
    try:
        config = policy_config_of(get_settings()) if site_settings else None
        result = run_simulation(trace, gpus, nodes, policy, oracle, config).to_dict()
    except (NightshiftError, ValueError) as exc:
        _fail(getattr(exc, "message", str(exc)), code=2)
    left_out = result.get("left_out")
    if left_out:  # jobs that could never start on this cluster: not simulated, and the person is told
        unnamed = left_out["count"] - len(left_out["jobs"])
        named = "; ".join(f"job {job['job_id']} {job['why']}" for job in left_out["jobs"])
        which = named + (f"; and {unnamed} more" if unnamed else "")
        if not result["jobs"]:
            _fail(
                f"no job of the trace could ever start on this cluster ({which}): nothing to simulate; "
                f"a cluster they fit: {left_out['would_fit']}",
                code=2,
            )
        err_console.print(
            f"warning: {left_out['count']} job(s) left out, they could never start on this cluster "
            f"({which}); the metrics are of the other {result['jobs']}; a cluster they all fit: "
            f"{left_out['would_fit']}",
            markup=False,
        )
    if as_json:
        print(json.dumps(result))
    else:
        console.print(simulation_table(result))


app.command("ask")(ask_command)
app.command("compare")(compare_command)
app.command("sweeps")(sweeps_command)
app.command("report")(report_command)
app.command("wait")(wait_command)


@app.command(context_settings={"allow_interspersed_args": False})
def shell(
    args: Annotated[list[str] | None, typer.Argument(help="-- COMMAND... (default: your $SHELL)")] = None,
    gpus: Annotated[int, typer.Option(help="GPUs (0 = CPU only)")] = 1,
    gpu_mem: GpuMemOpt = None,
    gpu_fraction: GpuFractionOpt = None,
    time_limit: Annotated[
        float, typer.Option("--time-limit", help="minutes, then the shell is stopped")
    ] = DEFAULT_MINUTES,
    priority: Annotated[str | None, typer.Option(help="low | normal | high | urgent")] = None,
    gpu_model: GpuModelOpt = None,
    node: Annotated[
        str | None, typer.Option("--node", help="on this node (default: this machine, when it is one)")
    ] = None,
    name: Annotated[str | None, typer.Option(help="a short name (default: shell)")] = None,
    tag: TagOpt = None,
) -> None:
    """Wait in the queue for GPUs, then open a shell here with them (or run COMMAND), as Slurm's `srun --pty
    bash`: `nightshift shell --gpus 1 --time-limit 120`. Exit the shell to give them back; at the time limit
    it is stopped. The session is a task (tag `session`) in `ls`, `queue` and the reports."""
    _refuse_option_as_name(name)
    settings = get_settings()
    here = settings.node_name
    argv = list(args or []) or [os.environ.get("SHELL") or "/bin/sh"]
    extra = {
        "gpu_memory_gb": gpu_mem,
        "gpu_fraction": gpu_fraction,
        "priority": priority,
        "gpu_model": gpu_model,
    }

    def run(client: NightshiftClient) -> int:
        pinned = node or node_here(client, here)
        if args and pinned != here:
            where = (
                f"{pinned}, not this machine ({here})"
                if pinned
                else f"no node: this machine ({here}) is none"
            )
            raise SessionError(
                f"a session's command runs here, and the session would be on {where}: run `nightshift "
                "shell` on the GPU box, or `nightshift submit` the command",
                code=2,
            )
        spec = session_spec(
            gpus=gpus, minutes=time_limit, name=name, node=pinned, extra=extra, tags=tag or []
        )
        return open_session(client, spec, argv, here)

    try:
        code = _with_client(run)
    except SessionError as exc:
        _fail(exc.message, code=exc.code)
    raise typer.Exit(code)


@app.command()
def nodes(as_json: JsonOpt = False) -> None:
    """Worker nodes: alive, drained, GPUs, last heartbeat."""
    data = _with_client(lambda client: client.get("/nodes"))
    if as_json:
        print_json(data)
    else:
        console.print(nodes_table(data))


@node_app.command("drain")
def node_drain(
    name: str,
    requeue: Annotated[
        bool,
        typer.Option(
            "--requeue", help="also stop its running tasks and queue them again, to start elsewhere"
        ),
    ] = False,
    at: Annotated[
        str | None,
        typer.Option(
            "--at",
            help="drain it from then on, for maintenance (ISO 8601, 23:00, tomorrow 09:00, +2h): until "
            "then only tasks that will have ended start there",
        ),
    ] = None,
    until: Annotated[
        str | None,
        typer.Option(
            "--until",
            help="the maintenance ends then and the node takes tasks again by itself (same forms as --at; "
            "without --at it is drained from now)",
        ),
    ] = None,
    repeat: Annotated[
        str | None,
        typer.Option(
            "--repeat",
            help="with --until: daily, weekdays, weekends or weekly: the maintenance comes round at the same "
            "time until undrained (a weekly patch window)",
        ),
    ] = None,
) -> None:
    """Give NAME no new tasks; the ones running there finish (with --requeue: are stopped and queued again
    with their age, as `nightshift requeue` does, so the node can go down now). With --at, from then on
    (maintenance, as Slurm's `MAINT` reservation): until then a task starts there only if its estimate
    (else its time limit) ends it first; with --requeue too, the tasks still running then are requeued.
    With --until, it is back in service then, and wait forecasts count on it; with --repeat too, the
    maintenance comes round again (with --requeue, requeuing each time) until undrained."""
    params: dict[str, str] = {"requeue": "true"} if requeue else {}
    if repeat is not None:
        params["repeat"] = repeat
    zone = cli_zone(get_settings())
    for option, value in (("at", at), ("until", until)):
        if value is not None:
            params[option] = parse_when(value, datetime.now(zone), zone).isoformat()
    node = _with_client(lambda client: client.post(f"/nodes/{name}/drain", params=params))
    back = f" until {short_time(node['drain_until'])}" if node.get("drain_until") else ""
    back += f" (repeating {node['drain_repeat']})" if node.get("drain_repeat") else ""
    if at is None and until is not None:
        asked = _tasks_words(node.get("requeued") or [])
        console.print(
            f"node {name} drained{back}, then back in service by itself"
            + (f"; {asked} stopping and going back to the queue" if node.get("requeued") else "")
            + f"; `nightshift node undrain {name}` ends it sooner"
        )
        return
    if at is not None:
        console.print(
            f"node {name} goes down for maintenance at {short_time(node.get('drain_at'))}{back}: until "
            "then only tasks that will have ended by then start there (by their estimate, else their time "
            f"limit), and none {'during it' if back else 'after'}; `nightshift node undrain {name}` "
            "cancels it"
        )
        past = ", ".join(map(str, node.get("running_past") or []))
        if past and requeue:
            console.print(f"tasks {past}, expected to run past it, are stopped then and go back to the queue")
        elif past:
            console.print(
                f"tasks {past} are expected to run past it (by their estimates): `--requeue` sends whatever "
                "still runs there back to the queue then"
            )
        return
    if not requeue:
        console.print(f"node {name} drained: running tasks finish, no new ones start there")
        return
    asked = node.get("requeued") or []
    which = f"{_tasks_words(asked)} stopping and going back to the queue" if asked else "no task ran there"
    console.print(
        f"node {name} drained: {which}; a task pinned to {name} waits for `nightshift node undrain {name}`"
    )


def _tasks_words(ids: Sequence[int]) -> str:
    """`task 46`, `tasks 46, 47`."""
    return f"task{'s' if len(ids) != 1 else ''} {', '.join(map(str, ids))}"


@node_app.command("undrain")
def node_undrain(name: str) -> None:
    """Put NAME back in service."""
    _with_client(lambda client: client.post(f"/nodes/{name}/undrain"))
    console.print(f"node {name} is back in service")


@node_app.command("reserve")
def node_reserve(
    name: str,
    team: Annotated[str, typer.Option("--team", help="the team the node is kept for")],
    until: Annotated[str, typer.Option("--until", help="when it ends (ISO 8601, 18:00, friday 18:00, +8h)")],
    at: Annotated[str | None, typer.Option("--at", help="when it starts (same forms); else now")] = None,
    repeat: Annotated[
        str | None,
        typer.Option(
            "--repeat",
            help="daily, weekdays, weekends or weekly: it comes round at the same time until called off",
        ),
    ] = None,
    gpus: Annotated[
        int | None,
        typer.Option("--gpus", min=1, help="only this many of its GPUs (the rest stay everyone's); else all"),
    ] = None,
) -> None:
    """Keep NAME's GPUs for one team for a while (a paper deadline, a demo; Slurm's reservation for an
    account): from --at (else now) to --until only that team's tasks start there; before it, other teams'
    tasks start there only if their estimate (else time limit) ends them first. Nothing running is
    stopped. With --repeat, at that time every day, working day, weekend day or week (a class every
    Tuesday 14:00-17:00). `nightshift node unreserve NAME` calls it off."""
    zone = cli_zone(get_settings())
    params = {"team": team, "until": parse_when(until, datetime.now(zone), zone).isoformat()}
    if at is not None:
        params["at"] = parse_when(at, datetime.now(zone), zone).isoformat()
    if repeat is not None:
        params["repeat"] = repeat
    if gpus is not None:
        params["gpus"] = str(gpus)
    node = _with_client(lambda client: client.post(f"/nodes/{name}/reserve", params=params))
    held = node.get("reserved") or next(h for h in node["reservations"] if h["team"] == team)  # older API
    console.print(
        f"node {name} is reserved for team {reservation_words(held)}: only its tasks start there then; "
        f"`nightshift node unreserve {name} --team {team}` calls it off"
    )
    past = ", ".join(map(str, node.get("running_past") or []))
    if past:
        console.print(f"tasks {past} of other teams are expected to run past its start: they are not stopped")


@node_app.command("unreserve")
def node_unreserve(
    name: str,
    team: Annotated[str | None, typer.Option("--team", help="only this team's reservations")] = None,
) -> None:
    """Call off NAME's reservations for a team (--team), or all of them."""
    params = {"team": team} if team is not None else {}
    node = _with_client(lambda client: client.post(f"/nodes/{name}/unreserve", params=params))
    which = "all its reservations" if team is None else f"team {team}'s reservations"
    left = [reservation_words(held) for held in node.get("reservations") or []]
    console.print(
        f"node {name}: {which} called off; "
        + (f"still reserved for {', '.join(left)}" if left else "it is everyone's again")
    )


def main() -> None:
    """Console-script entry point."""
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    app()
