"""`nightshift secret set|ls|rm`: your secrets (API keys, tokens) kept by the service, given to the jobs
whose spec names them (`submit --secret HF_TOKEN`, `secrets: [HF_TOKEN]`), never shown to anyone."""

from __future__ import annotations

import getpass
import os
import sys
from typing import Annotated, Any

import typer
from rich.table import Table

from api.cli.render import console, print_json, short_time

secret_app = typer.Typer(
    no_args_is_help=True,
    help="Your secrets (API keys, tokens): jobs that name them get them as environment variables "
    "(`submit --secret NAME`); nobody sees their values, teammates included.",
)
JsonOpt = Annotated[bool, typer.Option("--json", help="print JSON for scripts")]


def secret_value(name: str, from_env: bool) -> str:
    """The value to store: this shell's `$NAME` with --from-env, else standard input when it is piped, else
    typed at a prompt that does not echo it. BadParameter when there is none."""
    if from_env:
        value = os.environ.get(name, "")
    elif not sys.stdin.isatty():
        value = sys.stdin.read().removesuffix("\n")
    else:
        value = getpass.getpass(f"value of {name} (not shown): ")
    if not value:
        where = f"${name} is not set in this shell" if from_env else "the value is empty"
        raise typer.BadParameter(f"{where}: nothing to store", param_hint=name)
    return value


@secret_app.command("set")
def secret_set(
    name: Annotated[str, typer.Argument(help="its name, as the job's environment variable: HF_TOKEN")],
    from_env: Annotated[
        bool, typer.Option("--from-env", help="take the value of $NAME in this shell")
    ] = False,
) -> None:
    """Store a secret (typed at a prompt that does not show it, piped in, or `--from-env`); jobs that name it
    get the new value from their next start."""
    from api.cli.app import _with_client

    value = secret_value(name, from_env)
    saved: dict[str, Any] = _with_client(lambda client: client.put_secret(name, value))
    console.print(f"secret {saved['name']} stored: jobs get it with `nightshift submit --secret {name} ...`")


@secret_app.command("ls")
def secret_ls(as_json: JsonOpt = False) -> None:
    """Your secrets, by name (never their values)."""
    from api.cli.app import _with_client

    secrets: list[dict[str, Any]] = _with_client(lambda client: client.get("/secrets"))
    if as_json:
        print_json(secrets)
        return
    table = Table(title="your secrets", title_justify="left")
    table.add_column("name")
    table.add_column("set")
    for secret in secrets:
        table.add_row(secret["name"], short_time(secret["updated_at"]))
    if not secrets:
        table.caption = "none yet: `nightshift secret set NAME`"
    console.print(table)


@secret_app.command("rm")
def secret_rm(name: Annotated[str, typer.Argument(help="the secret's name")]) -> None:
    """Remove a secret; a queued task that names it fails as it starts, saying why."""
    from api.cli.app import _with_client

    _with_client(lambda client: client.delete_secret(name))
    console.print(f"secret {name} removed")


@secret_app.command("key")
def secret_key() -> None:
    """Print the key that seals secrets on this box (the server): give it to each GPU box as
    `NIGHTSHIFT_SECRETS_KEY` so its worker can open the secrets its jobs name. Reads the local data folder."""
    from scheduler.settings import get_settings
    from scheduler.store.secret_sealing import SecretSealer, SecretsKeyError

    settings = get_settings()
    try:
        key = SecretSealer(settings.secrets_key, settings.secrets_key_file).key_text()
    except SecretsKeyError as missing:
        console.print(f"[red]{missing}[/red]; a key is made here when the first secret is set")
        raise typer.Exit(1) from None
    except PermissionError:
        console.print(
            f"[red]{settings.secrets_key_file} is not yours to read: run this as the service's account"
        )
        raise typer.Exit(1) from None
    print(key)
