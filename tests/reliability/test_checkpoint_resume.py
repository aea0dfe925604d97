"""Checkpoint resume: a retried attempt gets `resume_arg` filled with the newest checkpoint it left."""

from __future__ import annotations

import os
import time
from pathlib import Path

from scheduler.clock import now_ms
from scheduler.worker import newest_checkpoint
from tests.conftest import wait_until
from tests.reliability.conftest import settled

TRAIN = """\
if [ "$1" = "--resume" ]; then
  echo "attempt $NIGHTSHIFT_ATTEMPT resumed from $2 at step $(cat "$2") (env: $NIGHTSHIFT_RESUME_FROM)"
  exit 0
fi
mkdir -p "$NIGHTSHIFT_CHECKPOINT_DIR/ckpt"
echo 3 > "$NIGHTSHIFT_CHECKPOINT_DIR/ckpt/step3.pt"
sleep 0.05
echo 7 > "$NIGHTSHIFT_CHECKPOINT_DIR/ckpt/step7.pt"
echo "attempt $NIGHTSHIFT_ATTEMPT saved step 7, then crashed"
exit 1
"""


def test_a_failed_attempt_continues_from_its_newest_checkpoint_on_the_retry(
    cluster, start_worker, submit_to, tmp_path
):
    start_worker()
    (tmp_path / "train.sh").write_text(TRAIN)
    task = submit_to(
        {
            "command": "sh train.sh",
            "workdir": str(tmp_path),
            "retries": 1,
            "resume_arg": "--resume {latest}",
            "checkpoint_glob": "ckpt/*.pt",
        }
    )
    # the first attempt saves and crashes; the retry is queued again (the scheduler's part is done here)
    wait_until(
        lambda: (
            cluster.tasks.get_any(task.id).attempts_count == 1 and cluster.queue.position(task.id) is not None
        )
    )
    assert cluster.queue.assign(task.id, "node-a", [0], now_ms())

    assert wait_until(lambda: settled(cluster, task.id)) == "succeeded"
    checkpoint = cluster.settings.checkpoints_dir / str(task.id) / "ckpt" / "step7.pt"
    log = cluster.log_path(task.id).read_text()
    assert "attempt 1 saved step 7, then crashed" in log
    assert f"attempt 2 resumed from {checkpoint} at step 7 (env: {checkpoint})" in log
    assert f"$ sh train.sh --resume {checkpoint}" in log


def test_the_newest_matching_regular_file_inside_the_folder_is_the_checkpoint(tmp_path: Path):
    folder = tmp_path / "ckpt-dir"
    (folder / "ckpt").mkdir(parents=True)
    old, new, other = folder / "ckpt" / "a.pt", folder / "ckpt" / "b.pt", folder / "ckpt" / "c.txt"
    for index, path in enumerate((old, new, other)):
        path.write_text("x")
        os.utime(path, (time.time() + index, time.time() + index))
    outside = tmp_path / "outside.pt"
    outside.write_text("x")
    (folder / "ckpt" / "z.pt").symlink_to(outside)

    assert newest_checkpoint(folder, "ckpt/*.pt") == new
    assert newest_checkpoint(folder, None) is None  # `*` matches only the `ckpt` folder itself
    assert newest_checkpoint(folder, "nothing/*.pt") is None
