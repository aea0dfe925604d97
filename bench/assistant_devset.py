"""Dev-set benchmark of the offline model: prints one JSON line (accuracy, count, median ms per turn).

python bench/assistant_devset.py [--failures]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from assistant.evaluation import evaluate, load_devset
from assistant.offline import OfflineChatModel


def main() -> None:
    """Run the dev set and print the summary (and, with --failures, each miss on stderr)."""
    score = evaluate(OfflineChatModel(), load_devset())
    if "--failures" in sys.argv:
        for outcome in score.outcomes:
            if not outcome.ok:
                print(
                    json.dumps({"case": outcome.case, "got": outcome.got}, ensure_ascii=False),
                    file=sys.stderr,
                )
    print(json.dumps({"bench": "assistant_devset", "model": "offline", **score.summary()}))


if __name__ == "__main__":
    main()
