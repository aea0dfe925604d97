"""Where the prompt texts are: `prompts/*.md` next to the packages (a checkout or an editable install), or
the `prompts` data package a wheel installs beside them. `NIGHTSHIFT_PROMPTS_DIR` overrides both.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

PROMPT_FILES = ("system.md", "tools.md", "examples.md")
CHECKOUT_DIR = Path(__file__).resolve().parent.parent / "prompts"


def _complete(folder: Path) -> bool:
    return all((folder / name).is_file() for name in PROMPT_FILES)


def _installed_dirs() -> list[Path]:
    """Folders of an installed `prompts` package (a namespace package holding only the .md files)."""
    try:
        spec = importlib.util.find_spec("prompts")
    except (ImportError, ValueError):
        return []
    if spec is None:
        return []
    return [Path(location) for location in (spec.submodule_search_locations or [])]


def find_prompts_dir() -> Path:
    """The folder holding the prompt files; raises FileNotFoundError naming the places looked at."""
    override = os.environ.get("NIGHTSHIFT_PROMPTS_DIR")
    candidates = [Path(override).expanduser()] if override else []
    candidates += [CHECKOUT_DIR, *_installed_dirs()]
    for folder in candidates:
        if _complete(folder):
            return folder
    looked = ", ".join(str(folder) for folder in candidates)
    raise FileNotFoundError(f"prompt files {', '.join(PROMPT_FILES)} not found (looked in {looked})")
