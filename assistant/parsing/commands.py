"""Find the shell command in a request: in backticks or quotes, or starting at a program-like word."""

from __future__ import annotations

import re
from dataclasses import dataclass

from assistant.parsing.sweeps import AT_A_TIME
from scheduler.script_runner import with_interpreter

_BACKTICKS = re.compile(r"```(?:\w+\n)?(?P<cmd>.+?)```|`(?P<cmd2>[^`]+)`", re.S)
_QUOTED = re.compile(r"\"(?P<a>[^\"]{2,})\"|“(?P<b>[^”]{2,})”|「(?P<c>[^」]{2,})」|'(?P<d>[^']{2,})'")
_ASCII_BEFORE = r"(?<![A-Za-z0-9_./\-])"
_ASCII_AFTER = r"(?![A-Za-z0-9_\-])"
STRONG = re.compile(
    _ASCII_BEFORE
    + r"(?:python(?:3(?:\.\d+)?)?|torchrun|accelerate|deepspeed|bash|zsh|srun|uv|pytest|nvidia-smi|jupyter|"
    r"Rscript|julia|\.{1,2}/[\w./\-]+|/[\w./\-]+\.(?:py|sh)|[\w./\-]*\w\.(?:py|sh|ipynb|jl|R))" + _ASCII_AFTER
)
WEAK = re.compile(
    _ASCII_BEFORE + r"(?:make|echo|sleep|rm|ls|cat|node|java|pip|cd|sh|true|false|kill|cp|mv|wget|curl|"
    r"tar|git|hostname|env|nohup|time|ollama|vllm|llamafactory-cli|sbatch)" + _ASCII_AFTER
)
RUN_VERB = re.compile(
    r"(?:\b(?:run|execute|launch|start|submit|queue(?:\s+up)?|kick\s+off|schedule|please\s+run)\b|跑一下|跑个|"
    r"跑|运行|执行|提交|启动|开始)\s*[:：]?\s*",
    re.I,
)
_STOP_WORDS = frozenset(
    [
        "on",
        "with",
        "using",
        "tonight",
        "tomorrow",
        "today",
        "overnight",
        "after",
        "at",
        "in",
        "for",
        "as",
        "when",
        "once",
        "again",
        "like",
        "then",
        "please",
        "priority",
        "urgent",
        "urgently",
        "asap",
        "retry",
        "retrying",
        "retries",
        "within",
        "limit",
        "max",
        "maximum",
        "by",
        "before",
        "until",
        "off-peak",
        "offpeak",
        "during",
        "from",
        "starting",
        "no",
        "without",
        "needs",
        "need",
        "needing",
        "requiring",
        "requires",
        "taking",
        "takes",
        "should",
        "it",
        "which",
        "that",
        "via",
        "inside",
        "but",
        "if",
        "each",
        "per",
        "right",
        "now",
        "immediately",
        "and",
        "low",
        "high",
        "normal",
        "name",
        "named",
        "call",
        "called",
        "time",
        "up",
        "only",
        "every",
        "around",
        "about",
        "over",
        "under",
        "this",
        "next",
        "cpu",
        "gpu",
        "gpus",
        "conda",
        "docker",
        "env",
        "image",
        "depends",
        "depending",
        "could",
        "can",
        "would",
        "will",
        "so",
        "to",
        "i",
        "we",
        "my",
        "our",
        "lasting",
        "kill",
        "stop",
        "x",
        "not",
        "the",
        "tmrw",
        "tmr",
        "tonite",
        "between",
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
    ]
)
_CJK = re.compile(r"[\u3000-\u9fff\uff00-\uffef]")
_TOKEN = re.compile(r"\S+")
# "2 gpus", "40gb", "8卡", "30 min from now" after a command: the spec, not arguments
_RESOURCE_HEAD = re.compile(r"\d+(?:\.\d+)?(?:gb|g|gib|h|hrs?|mins?|x)?", re.I)
_RESOURCE_AT = re.compile(
    r"\d+(?:\.\d+)?(?:gb|g|gib|h|hrs?|mins?)(?![\w.])|\d+(?:\.\d+)?\s*x?\s*(?:gpus?|cards?|gb|gib|hours?|hrs?|h|mins?|minutes?|[AHVL]\d{2,3}s?)(?![\w.])",
    re.I,
)


# "9am", "5 pm", "9am-5pm", "9:00-17:00" after a command: when it runs, not arguments
_CLOCK_AT = re.compile(
    r"\d{1,2}(?::\d{2})?\s*[ap]\.?m(?![a-z])|\d{1,2}:\d{2}\s*[-–~]\s*\d{1,2}:\d{2}(?!\d)", re.I
)


# "3 times", "twice" after a command: how often to run it (a question back), not its arguments
REPEAT_AT = re.compile(
    r"(?:\d+|two|three|four|five|six|seven|eight|nine|ten)\s+times\b|(?:twice|thrice)\b", re.I
)


def _resource_starts(text: str, token: re.Match[str]) -> bool:
    """True when `token` begins a resource, size or duration ("2 gpus", "40gb", "30 min"), a clock time
    ("9am-5pm"), how many run at once ("2 at a time", "two at once") or how often ("3 times"): the spec
    begins."""
    return any(
        pattern.match(text, token.start()) for pattern in (_RESOURCE_AT, _CLOCK_AT, AT_A_TIME, REPEAT_AT)
    )


def _leads_into_a_resource(text: str, token: re.Match[str]) -> bool:
    """True when `token` is a stop word ("on", "with") and the next word begins a resource ("2 gpus")."""
    if token.group().lower() not in _STOP_WORDS:
        return False
    following = _TOKEN.search(text, token.end())
    return following is not None and _resource_starts(text, following)


@dataclass(frozen=True, slots=True)
class FoundCommand:
    """A command and where it was found in the text."""

    command: str
    start: int
    end: int


def _looks_like_command(text: str) -> bool:
    return bool(STRONG.search(text) or WEAK.match(text.strip()) or re.search(r"\s-{1,2}\w|[|&;<>$=]", text))


def _scan_from(text: str, start: int) -> FoundCommand | None:
    """The command starting at `start`, up to the first word that starts plain language again."""
    end, previous, braces = start, "", 0
    for index, token in enumerate(_TOKEN.finditer(text, start)):
        word = token.group()
        cjk = _CJK.search(word)
        if cjk:
            head = word[: cjk.start()]
            if head and not _RESOURCE_HEAD.fullmatch(head):
                end = token.start() + cjk.start()
            break
        bare = word.lower().strip(".,;:!?")
        # a word after a flag is its value ("--mode on"), unless it leads into a resource: "--amp on 2 gpus"
        is_flag_value = (
            previous.startswith("-") and "=" not in previous and not _leads_into_a_resource(text, token)
        )
        if (
            index > 0
            and not is_flag_value
            and (bare in _STOP_WORDS or word in ("-", "—", "--") or _resource_starts(text, token))
        ):
            break
        end = token.end()
        braces += word.count("{") - word.count("}")  # "--bs {32, 64}": one list of values
        if (word[-1] in ",;!?" and braces <= 0) or (word.endswith(".") and index > 0 and not is_flag_value):
            end -= 1
            break
        previous = word
    command = text[start:end].strip().rstrip(".:,")
    return FoundCommand(command, start, end) if command else None


# what people type to keep a job alive after they log out, which the queue does for them: a trailing `&`
# would end the task at once (its process stopped as a leftover), and `nohup` is no use under it
_DETACH = re.compile(r"^nohup\s+|(?<![&|>])&\s*$")


def normalize(command: str) -> str:
    """`train.py args` -> `python train.py args`; `run.sh` -> `bash run.sh`; `nohup X &` -> `X`; spaces
    tidied."""
    command = " ".join(command.split()) if "\n" not in command else command.strip()
    command = _DETACH.sub("", command).strip() or command
    return with_interpreter(command)


def fenced_commands(text: str) -> list[str]:
    """Every command in backticks, in order, without repeats (a request may name several)."""
    bodies = ((m.group("cmd") or m.group("cmd2") or "").strip() for m in _BACKTICKS.finditer(text))
    return list(dict.fromkeys(normalize(body) for body in bodies if body))


def find_command(text: str) -> FoundCommand | None:
    """The command in `text`, or None when there is none (the caller then asks for it)."""
    fenced = _BACKTICKS.search(text)
    if fenced:
        body = fenced.group("cmd") or fenced.group("cmd2") or ""
        if body.strip():
            return FoundCommand(normalize(body.strip()), fenced.start(), fenced.end())
    for quoted in _QUOTED.finditer(text):
        body = next(group for group in quoted.groups() if group)
        if _looks_like_command(body):
            return FoundCommand(normalize(body.strip()), quoted.start(), quoted.end())
    candidates: list[int] = []
    strong = STRONG.search(text)
    if strong:
        candidates.append(strong.start())
    for verb in RUN_VERB.finditer(text):
        weak = WEAK.match(text, verb.end())
        if weak:
            candidates.append(weak.start())
    if not candidates:
        return None
    found = _scan_from(text, min(candidates))
    if found is None:
        return None
    return FoundCommand(normalize(found.command), found.start, found.end)


def remove_span(text: str, start: int, end: int) -> str:
    """`text` with [start, end) blanked out (same length, so later offsets still line up)."""
    return text[:start] + " " * (end - start) + text[end:]
