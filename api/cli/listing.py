"""`nightshift ls`: the team's tasks, newest first, narrowed as `sacct -S/-E --name` and `squeue --name` do
(submitted since/until, name, tag, node), with "showing 50 of 1,234" when the page is cut."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import typer

from api.cli.render import console, err_console, print_error, print_json, tasks_table
from api.cli.watching import WatchOpt, refuse_watch_with_json, watch
from api.cli.zone import cli_zone
from api.client import ClientError, NightshiftClient
from scheduler.errors import NightshiftError
from scheduler.settings import get_settings
from scheduler.timeparse import parse_past

PAST_HELP = "yesterday, monday, 2026-12-01, 9am, -2d, 3h ago (the cluster's zone)"


def list_command(
    status: Annotated[
        str | None, typer.Option(help="queued | running | succeeded | failed | cancelled")
    ] = None,
    team: Annotated[str | None, typer.Option(help="(admins) one team's tasks")] = None,
    user: Annotated[str | None, typer.Option(help="one person's tasks")] = None,
    mine: Annotated[bool, typer.Option("--mine", help="only your own tasks")] = False,
    since: Annotated[str | None, typer.Option(help=f"submitted at or after: {PAST_HELP}")] = None,
    until: Annotated[str | None, typer.Option(help=f"submitted at or before: {PAST_HELP}")] = None,
    name: Annotated[str | None, typer.Option(help="this exact name; 'train*': names starting so")] = None,
    tag: Annotated[str | None, typer.Option(help="tasks carrying this tag")] = None,
    node: Annotated[str | None, typer.Option(help="tasks that ran on this node")] = None,
    held: Annotated[bool, typer.Option("--held", help="only tasks held back (nightshift hold)")] = False,
    sweep: Annotated[int | None, typer.Option("--sweep", min=1, help="the tasks of this sweep")] = None,
    limit: Annotated[int, typer.Option(help="at most this many")] = 50,
    offset: Annotated[int, typer.Option(min=0, help="skip this many newest ones (the next page)")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON for scripts")] = False,
    every_s: WatchOpt = None,
) -> None:
    """List tasks, newest first: your team's (an admin's: every team's), narrowed by --since/--until
    (submission time), --name, --tag, --node, --held and --sweep; `--offset` pages on; `--watch 2`
    redraws it."""
    if mine and user:
        _exit("give --mine or --user NAME, not both", code=2)
    refuse_watch_with_json(every_s, as_json)
    filters = {"status": status, "team": team, "name": name, "tag": tag, "node": node}
    if held:
        filters["held"] = "true"
    if sweep is not None:
        filters["sweep_id"] = str(sweep)
    filters.update(submission_window(since, until))
    if every_s is not None:
        client = NightshiftClient.from_settings(get_settings())
        try:
            who = client.me()["user"] if mine else user  # asked once, not at every redraw
            watch(
                lambda: tasks_table(client.task_page({**filters, "user": who}, limit, offset)["tasks"]),
                every_s,
            )
        except ClientError as exc:
            print_error(exc.message, exc.errors)
            raise typer.Exit(1) from None
        finally:
            client.close()
        return
    page = _fetch(limit, offset, mine, user, filters)
    if as_json:
        print_json(page["tasks"])  # the shape scripts already read: the list of tasks
    else:
        console.print(tasks_table(page["tasks"]))
    footer = page_footer(page, offset or None)
    if not page["tasks"] and not offset:  # an empty table alone reads like an error
        searched = any(value is not None for value in filters.values()) or mine or user
        footer = "no task matches these filters" if searched else "no tasks yet: nightshift submit -- COMMAND"
    if footer:  # on stderr: a script reading --json still gets JSON alone on stdout
        err_console.print(footer, markup=False, highlight=False)


def submission_window(since: str | None, until: str | None) -> dict[str, str | None]:
    """`--since` and `--until` as ISO 8601 with the offset of the cluster's zone, for the API."""
    if since is None and until is None:
        return {}
    now, zone = datetime.now().astimezone(), cli_zone(get_settings())
    try:
        return {
            key: parse_past(text, now, zone).isoformat() if text is not None else None
            for key, text in (("since", since), ("until", until))
        }
    except NightshiftError as exc:
        _exit(exc.message, code=2)
        raise  # unreachable: _exit raises


def page_footer(page: dict[str, Any], offset: int | None = None) -> str | None:
    """`showing 50 of 1,234 (--limit to see more)` when the page does not hold every match. A command that
    pages (`offset`: its `--offset`, None for one without) says where the page lies and the next one's
    offset instead: `showing 21-40 of 57 (--offset 40 for the next)`."""
    count, total = int(page["count"]), int(page.get("total", page["count"]))
    if offset is None or offset == 0:
        if count >= total:
            return None
        more = "--limit to see more" if offset is None else f"--offset {count} for the next"
        return f"showing {count:,} of {total:,} ({more})"
    if count == 0:
        return f"nothing at --offset {offset}: {total:,} in all"
    shown = f"showing {offset + 1:,}-{offset + count:,} of {total:,}"
    return shown if offset + count >= total else f"{shown} (--offset {offset + count} for the next)"


def _fetch(
    limit: int, offset: int, mine: bool, user: str | None, filters: dict[str, str | None]
) -> dict[str, Any]:
    """One page of the filtered list (`--mine`: the caller's own name, asked of the API); exit 1 with the
    API's error."""
    client = NightshiftClient.from_settings(get_settings())
    try:
        return _page(client, limit, offset, mine, user, filters)
    except ClientError as exc:
        print_error(exc.message, exc.errors)
        raise typer.Exit(1) from None
    finally:
        client.close()


def _page(
    client: NightshiftClient,
    limit: int,
    offset: int,
    mine: bool,
    user: str | None,
    filters: dict[str, str | None],
) -> dict[str, Any]:
    who = client.me()["user"] if mine else user
    return client.task_page({**filters, "user": who}, limit, offset)


def _exit(message: str, code: int) -> None:
    print_error(message)
    raise typer.Exit(code)
