"""The code a task is submitted from: `nightshift submit` records its workdir's git commit, branch and
whether tracked files differ from it (`git` in the spec), so a result can be traced to the code that made
it, as ClearML and W&B record it. Nothing outside a repository or where git is missing; `--no-git` skips
it; a spec that states its own `git` keeps it."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import Any

GIT_TIMEOUT_S = 5.0
Run = Callable[..., "subprocess.CompletedProcess[str]"]


def git_source(folder: str, run: Run = subprocess.run) -> dict[str, Any] | None:
    """`{"commit", "branch", "dirty"}` of the repository `folder` is in (branch None when detached); None
    outside one, without git, or when git does not answer in time."""

    def git(*args: str) -> str | None:
        try:
            done = run(
                ["git", "-C", folder, *args],
                capture_output=True,
                text=True,
                timeout=GIT_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if not commit:
        return None
    branch = git("symbolic-ref", "--short", "-q", "HEAD")
    changes = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "branch": branch or None, "dirty": bool(changes)}


def with_git_source(spec: dict[str, Any], record: bool, run: Run = subprocess.run) -> dict[str, Any]:
    """`spec` with the git source of its workdir, where `record` and it has none of its own."""
    if not record or "git" in spec or not spec.get("workdir"):
        return spec
    found = git_source(str(spec["workdir"]), run)
    return spec if found is None else {**spec, "git": found}


def git_words(git: dict[str, Any]) -> str:
    """`1a2b3c4 on main, with changes not committed`: a task's `git` for people."""
    words = str(git.get("commit", ""))[:7]
    if git.get("branch"):
        words += f" on {git['branch']}"
    return words + (", with changes not committed" if git.get("dirty") else "")
