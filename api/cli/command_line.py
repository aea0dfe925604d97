"""The words after `--` of `nightshift submit` as the one shell command a task runs, and that command as
words to paste after `--`.

One word is a shell command as it is (`-- "cd exp && python train.py"`). Several words keep their
boundaries: `-- python3 -c "print('hi')"` runs `python3 -c "print('hi')"`, not `python3 -c print('hi')`
(a syntax error). An environment variable in capitals, `$NAME` or `${NAME}`, is left for the job's shell
(`-- python train.py --out '$NIGHTSHIFT_OUTPUT_DIR'` writes into the task's output folder; `shlex.join`
would quote it away); every other `$` stays as typed, so `-- awk '{print $2}' data.txt`, `-- echo 'costs $5'`
and `-- sh -c 'for i in 1 2; do echo $i; done'` run as they read.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

_PLAIN = re.compile(r"[\w@%+=:,./$~{}-]+")  # means the same to the job's shell as to the person
_PASTE_PLAIN = re.compile(r"[\w@%+=:,./ -]+")  # and to the shell of a person pasting it
# a `$` that does not start an environment variable in capitals (`$NAME`, `${NAME}`): kept as typed
_LITERAL_DOLLAR = re.compile(r"\$(?![A-Z_][A-Z0-9_]*(?![a-z])|\{[A-Z_][A-Z0-9_]*\})")


def command_from_words(words: Sequence[str]) -> str:
    """The task's command: one word as it is; several joined, each word that is not plain in double
    quotes, where only `$NAME` in capitals is expanded by the job's shell."""
    if len(words) == 1:
        return words[0]
    return " ".join(
        word if _PLAIN.fullmatch(word) and not _LITERAL_DOLLAR.search(word) else _double_quoted(word)
        for word in words
    )


def _double_quoted(word: str) -> str:
    escaped = re.sub(r'(["\\`])', r"\\\1", word)
    return '"' + _LITERAL_DOLLAR.sub(r"\\$", escaped) + '"'


def words_to_paste(command: str) -> str:
    """`command` to put after `--` in a shell: as it is when that shell would leave it alone, else as one
    quoted word (taken as it is)."""
    if _PASTE_PLAIN.fullmatch(command) and "  " not in command:
        return command
    return shlex.quote(command)
