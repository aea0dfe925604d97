"""Each job in a cgroup of its own (cgroup v2), so that none of its processes can get away.

The process group and the run token find a job's processes only while they stay in the group or keep the
token in their environment; `setsid env -i cmd &` does neither. A cgroup holds every process a job starts,
and a process cannot leave it without write access to another cgroup, which a job (not root) lacks. Where
the worker may create cgroups (root, or a subtree delegated to it: `Delegate=yes` in its systemd unit), each
job gets `<worker's cgroup>/nightshift/<run token>`: stopping the job signals every member, `cgroup.kill`
(Linux 5.14) ends them all at once, and the job is over when `cgroup.events` says it is empty. Elsewhere (no
privileges, cgroup v1 only) jobs run as before, found by process group and run token.

No controller is enabled: the cgroup only holds processes (no limits), so any cgroup v2 tree will do, a
hybrid one (`/sys/fs/cgroup/unified`) included. The job joins its cgroup before it runs anything: its shell
waits for one line on stdin, which the worker sends once it has moved the shell (`JobCgroup.join`).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import signal
import threading
import time
from pathlib import Path

from scheduler.executor.reaper import KILL_SETTLE_S, check_run_token, signal_pids

log = logging.getLogger(__name__)

MOUNTINFO = Path("/proc/self/mountinfo")
SELF_CGROUP = Path("/proc/self/cgroup")
FOLDER = "nightshift"  # under the worker's own cgroup
MAX_FREE = 64  # empty cgroups kept for later spare shells
_SETTLE_POLL_S = 0.01


def cgroup2_mount(mountinfo: str) -> tuple[Path, str] | None:
    """(mount point, root inside the hierarchy) of the first cgroup v2 mount in a `/proc/self/mountinfo`
    text that no later mount hides (one on its mount point or above it: a cgroup2 mounted over a hybrid
    tree's `/sys/fs/cgroup` hides its `/sys/fs/cgroup/unified`); None when there is none."""
    mounts: list[tuple[Path, str, str]] = []  # (mount point, root, file system type), in mount order
    for line in mountinfo.splitlines():
        fields = line.split()
        if " - " not in line or len(fields) < 5:
            continue
        fstype = line.split(" - ", 1)[1].split()[0]
        mounts.append((Path(_unescape(fields[4])), _unescape(fields[3]), fstype))
    for n, (point, root, fstype) in enumerate(mounts):
        if fstype == "cgroup2" and not any(point.is_relative_to(later) for later, _, _ in mounts[n + 1 :]):
            return point, root
    return None


def _read(path: Path) -> str:
    """A kernel file's text with plain system calls (cgroup files are read on every job start and end;
    `cgroup.procs` of a job with thousands of processes takes more than one read)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = [os.read(fd, 65536)]
        while chunks[-1]:
            chunks.append(os.read(fd, 65536))
        return b"".join(chunks).decode()
    finally:
        os.close(fd)


def _write(path: Path, text: str) -> None:
    """Write `text` to a cgroup control file in one write (the kernel takes one command per write)."""
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _unescape(field: str) -> str:
    """mountinfo writes spaces, tabs, newlines and backslashes as octal escapes (`\\040`)."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field


def own_cgroup(proc_cgroup: str) -> str | None:
    """This process's cgroup v2 path (the `0::/path` line of `/proc/self/cgroup`), None without one."""
    for line in proc_cgroup.splitlines():
        if line.startswith("0::"):
            return line[3:].strip() or "/"
    return None


def cgroup_base(mountinfo: str, proc_cgroup: str) -> Path | None:
    """Where this process's cgroup v2 lives in the file system, or None (no cgroup v2, or outside the
    part of the hierarchy that is mounted here)."""
    mount = cgroup2_mount(mountinfo)
    path = own_cgroup(proc_cgroup)
    if mount is None or path is None:
        return None
    point, root = mount
    relative = Path(path).relative_to("/")
    root_relative = Path(root).relative_to("/")
    if path.endswith(" (deleted)") or not relative.is_relative_to(root_relative):
        return None
    return point / relative.relative_to(root_relative)


class JobCgroup:
    """The cgroup of one job: join it, list, signal and kill what is in it, remove it once empty."""

    def __init__(self, path: Path, pool: JobCgroups | None = None) -> None:
        self.path = path
        self.pool = pool  # where it goes back once its job is over (spare shells' cgroups), if anywhere
        # CPU seconds its processes used before its next job, where known without a read (a cgroup just
        # made: 0; one given back: what its last job's end read), else None
        self.cpu_used_s: float | None = None

    def __repr__(self) -> str:
        return f"<JobCgroup {self.path}>"

    def join(self, pid: int) -> bool:
        """Move process `pid` (with the threads it has) into this cgroup; False when the kernel refuses."""
        try:
            _write(self.path / "cgroup.procs", f"{pid}\n")
        except OSError as error:
            log.warning("could not move process %s into %s: %s", pid, self.path, error)
            return False
        return True

    def pids(self) -> list[int]:
        """The live processes in this cgroup and any cgroup below it (exited ones are not listed)."""
        if not self.populated():  # one small read for the usual answer: nothing
            return []
        found: list[int] = []
        for folder, subfolders, _ in os.walk(self.path):
            with contextlib.suppress(OSError, ValueError):
                found += [int(word) for word in _read(Path(folder) / "cgroup.procs").split()]
            subfolders.sort()
        return sorted(set(found))

    def populated(self) -> bool:
        """True while any process is in this cgroup or below it (False once it is gone)."""
        try:
            events = _read(self.path / "cgroup.events")
        except OSError:
            return False
        return "populated 1" in events

    def wait_empty(self, timeout_s: float) -> bool:
        """Wait up to `timeout_s` for every process in it to have exited completely; True once it is empty.

        A killed process leaves `cgroup.procs` as its exit begins, but frees its memory (a GPU's too, which
        a large CUDA context takes a moment to give back) only as the exit ends, when the cgroup stops being
        populated: a job is over then, not before.
        """
        deadline = time.monotonic() + timeout_s
        while self.populated():
            if time.monotonic() >= deadline:
                return False
            time.sleep(_SETTLE_POLL_S)
        return True

    def cpu_s(self) -> float | None:
        """CPU time (user + system) its processes have used, in seconds, since it was made (`cpu.stat`,
        there without any controller); None where it cannot be read."""
        try:
            for line in _read(self.path / "cpu.stat").splitlines():
                name, _, value = line.partition(" ")
                if name == "usage_usec":
                    return int(value) / 1e6
        except (OSError, ValueError):
            return None
        return None

    def signal(self, sig: int) -> list[int]:
        """Send `sig` to every process in the cgroup; return their pids."""
        pids = self.pids()
        signal_pids(pids, sig)
        return pids

    def kill_now(self) -> list[int]:
        """SIGKILL everything in the cgroup at once (`cgroup.kill`; each process where the kernel lacks it,
        before Linux 5.14); return the pids that were in it. Does not wait for them to be gone."""
        pids = self.pids()
        if pids:
            try:
                _write(self.path / "cgroup.kill", "1\n")
            except OSError:
                signal_pids(pids, signal.SIGKILL)
        return pids

    def kill(self, settle_s: float = KILL_SETTLE_S) -> list[int]:
        """`kill_now` until the cgroup is empty or `settle_s` passes; return the pids that were in it."""
        killed: set[int] = set()
        deadline = time.monotonic() + settle_s
        while pids := self.kill_now():
            killed.update(pids)
            if time.monotonic() >= deadline:
                log.warning("processes %s in %s survive SIGKILL", pids, self.path)
                break
            time.sleep(_SETTLE_POLL_S)
        return sorted(killed)

    def release(self, cpu_used_s: float | None = None) -> bool:
        """Its job is over: back to its pool for a later job when it has one and is empty, else `remove`;
        False while something still runs in it. `cpu_used_s`: its `cpu_s()` read once it was empty, if the
        caller has it (the next job in it then needs no read to know where its CPU time starts)."""
        self.cpu_used_s = cpu_used_s
        if self.pool is not None and not self.populated():
            return self.pool.give_back(self)
        return self.remove()

    def remove(self) -> bool:
        """Remove the cgroup (sub-cgroups first) once it is empty; False while something still runs in it."""
        if not self.path.exists():
            return True
        folders = [Path(folder) for folder, _, _ in os.walk(self.path)]
        for folder in sorted(folders, key=lambda path: len(path.parts), reverse=True):
            try:
                folder.rmdir()
            except FileNotFoundError:
                continue
            except OSError:
                return False
        return True


class JobCgroups:
    """The folder in which a worker makes one cgroup per job (`<its own cgroup>/nightshift`).

    A job's cgroup is named by its run token (`<owner>:task<id>:<lease>`), a spare shell's (`spares.py`)
    `<owner>:spare<pid>-<n>`: everything of one worker starts with its `owner` (the run tokens' node part),
    which is how a restarted worker finds what its previous life left (`owned`).
    """

    def __init__(self, base: Path, owner: str = "local") -> None:
        self.base = base
        self.owner = owner
        self.usable = True  # False after the kernel refused to move a job in: then jobs run without
        # empty cgroups of ended jobs kept for the next spares: creating and removing a cgroup takes the
        # kernel's cgroup mutex, which a move into a cgroup holds for a grace period
        self._free: list[JobCgroup] = []
        self._lock = threading.Lock()
        self._names = itertools.count(1)

    def __repr__(self) -> str:
        return f"<JobCgroups {self.base}>"

    @classmethod
    def detect(
        cls, owner: str = "local", mountinfo: Path = MOUNTINFO, proc_cgroup: Path = SELF_CGROUP
    ) -> JobCgroups | None:
        """The job cgroups of this process, or None where it may not create cgroups (then jobs are found
        by process group and run token alone)."""
        try:
            own = cgroup_base(mountinfo.read_text(), proc_cgroup.read_text())
        except OSError:
            return None
        if own is None or not (own / "cgroup.procs").is_file():
            return None
        base = own / FOLDER
        try:
            base.mkdir(exist_ok=True)
        except OSError as error:
            log.info("jobs run without cgroups: cannot create %s (%s)", base, error)
            return None
        if not os.access(base / "cgroup.procs", os.W_OK):
            log.info("jobs run without cgroups: %s is not writable", base / "cgroup.procs")
            return None
        return cls(base, owner)

    def spare_prefix(self, pid: int | None = None) -> str:
        """How the cgroups of the spare shells of worker process `pid` (this one) start."""
        return f"{self.owner}:spare{os.getpid() if pid is None else pid}-"

    def spare_name(self, n: int) -> str:
        """The cgroup name of this process's n-th spare shell."""
        return f"{self.spare_prefix()}{n}"

    def create_spare(self) -> JobCgroup | None:
        """An empty cgroup for a spare shell: one an ended job left, else a new one; None when cgroups are
        not usable here."""
        with self._lock:
            while self._free:  # empty when given back, and only root could have moved a process in since
                cgroup = self._free.pop()
                if cgroup.path.is_dir():
                    return cgroup
        created = self.create(self.spare_name(next(self._names)))
        if created is not None:
            created.pool = self
        return created

    def give_back(self, cgroup: JobCgroup) -> bool:
        """Keep an empty spare cgroup for a later spare (a few at most; the others are removed)."""
        with self._lock:
            if self.usable and len(self._free) < MAX_FREE:
                self._free.append(cgroup)
                return True
        return cgroup.remove()

    def remove_free(self) -> None:
        """Remove the empty cgroups kept for later spares (the worker stops)."""
        with self._lock:
            free, self._free = self._free, []
        for cgroup in free:
            cgroup.remove()

    def of(self, run_token: str) -> JobCgroup:
        """The cgroup of the job with this run token (it may not exist)."""
        return JobCgroup(self.base / check_run_token(run_token))

    def create(self, run_token: str) -> JobCgroup | None:
        """A new, empty cgroup for the job with this run token; None when cgroups are not usable here."""
        if not self.usable:
            return None
        cgroup = self.of(run_token)
        try:
            cgroup.path.mkdir()
            cgroup.cpu_used_s = 0.0
        except FileExistsError:
            if cgroup.pids():  # a token is unique per attempt: this is a leftover of the same attempt
                cgroup.kill()
        except OSError as error:
            log.warning("jobs run without cgroups from now on: cannot create %s (%s)", cgroup.path, error)
            self.usable = False
            return None
        return cgroup

    def owned(self, prefix: str | None = None) -> dict[str, JobCgroup]:
        """The cgroups of this owner in the folder, by name (a restarted worker's leftovers among them);
        only those whose name starts with `prefix`, when given."""
        try:
            names = sorted(entry.name for entry in os.scandir(self.base) if entry.is_dir())
        except OSError:
            return {}
        mine = [name for name in names if name.split(":", 1)[0] == self.owner]
        if prefix is not None:
            mine = [name for name in mine if name.startswith(prefix)]
        return {name: JobCgroup(self.base / name) for name in mine}
