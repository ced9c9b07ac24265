"""Where a shell step runs: a bubblewrap sandbox (spec section 6; docs/engine.md says what it isolates).

A step sees the system's programs read-only (/usr and a few files of /etc), its run's working directory
(the only writable place besides a small private /tmp), a /proc of its own PID namespace and a minimal /dev;
nothing of the data folder, other runs, /run (PostgreSQL's socket), /var or the worker's processes. It has no
network unless its agent says `network: true`, and limits on CPU time, memory, processes and file size.

The step never runs as root: a root worker has bubblewrap set up the mounts, then `setpriv` drops to an
unprivileged uid (no capabilities, no new privileges) before the command starts, so the process limit applies
(root is exempt from it). Each run has a uid of its own, picked from a range by its directory, so one run's
processes never count against another's limit. A worker that is not root runs bubblewrap in a user namespace of
its own uid.
"""

from __future__ import annotations

import os
import shutil
import zlib
import subprocess
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

SAFE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
UIDS = range(200_000, 265_536)  # unprivileged ids no account uses, one per run
# (name in the config, default, smallest, largest)
LIMITS = {
    "cpu_seconds": (3600, 1, 86_400),
    "memory_mb": (4096, 64, 262_144),
    "processes": (256, 16, 16_384),
    "output_kb": (1024, 1, 65_536),
    "file_mb": (1024, 1, 1_048_576),
    "tmp_mb": (256, 1, 16_384),
}
_ETC = ("passwd", "group", "nsswitch.conf", "hosts", "host.conf", "resolv.conf", "gai.conf", "localtime",
        "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "ssl", "ca-certificates", "mime.types",
        "os-release", "debian_version")
_TOP = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")


def limits_problems(config: Mapping) -> list[str]:
    """Why a shell agent's `network` and `limits` are refused (an empty list: accepted)."""
    problems = []
    network = config.get("network", False)
    if not isinstance(network, bool):
        problems.append("network: true or false")
    limits = config.get("limits", {})
    if not isinstance(limits, Mapping):
        return [*problems, f"limits: a mapping of {', '.join(LIMITS)}"]
    for name, value in limits.items():
        if name not in LIMITS:
            problems.append(f"limits: {str(name)[:60]!r} is not a limit (one of {', '.join(LIMITS)})")
            continue
        _, low, high = LIMITS[name]
        if type(value) is not int or not low <= value <= high:
            problems.append(f"limits.{name}: a whole number from {low} to {high}")
    return problems


@dataclass(frozen=True)
class Sandbox:
    """How shell steps are confined. `enabled=False` runs them as the worker does (FORGE_SHELL_SANDBOX=off)."""

    enabled: bool = True
    network: bool = False
    limits: Mapping[str, int] = field(default_factory=lambda: {name: spec[0] for name, spec in LIMITS.items()})
    uids: range = UIDS  # whom a root worker's steps run as: a run's own uid (and gid) from this range

    def for_agent(self, config: Mapping) -> Sandbox:
        """This sandbox with a shell agent's `network` and `limits` (validated by limits_problems)."""
        problems = limits_problems(config)
        if problems:
            raise ValueError("; ".join(problems))
        return replace(self, network=config.get("network", False), limits={**self.limits, **config.get("limits", {})})

    @property
    def output_bytes(self) -> int:
        return self.limits["output_kb"] * 1024

    @property
    def drops_to_uid(self) -> bool:
        return self.enabled and os.geteuid() == 0

    def prepare(self, workdir: str) -> None:
        """The run's directory belongs to the step's user, who alone may enter it. Only a new (empty) directory
        is given away, so a directory named by mistake (a project, a home) is never handed to the step's user.

        Raises:
            OSError: the directory cannot be given to the step's user.
        """
        uid = self.uid_of(workdir)
        if not self.drops_to_uid or os.stat(workdir).st_uid == uid:
            return
        if any(os.scandir(workdir)):
            raise PermissionError(f"{workdir} already holds files of another user; shell steps run as uid "
                                  f"{uid} in a new directory of their own")
        os.chown(workdir, uid, uid)
        os.chmod(workdir, 0o700)

    def uid_of(self, workdir: str) -> int:
        """The run's own uid: the same for every step of the run (they share its directory)."""
        return self.uids[zlib.crc32(os.path.realpath(workdir).encode()) % len(self.uids)]

    def argv(self, command: list[str], workdir: str, *, as_run: bool = True) -> list[str]:
        """`command` wrapped in the limits and the sandbox (as is when disabled); `as_run=False` keeps a root
        worker's own user inside (the probe: the run's user may have no process left to spare)."""
        if not self.enabled:
            return command
        mb = 1024 * 1024
        limits = ["prlimit", f"--cpu={self.limits['cpu_seconds']}", f"--as={self.limits['memory_mb'] * mb}",
                  f"--nproc={self.limits['processes']}", f"--fsize={self.limits['file_mb'] * mb}", "--"]
        spaces = (["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
                  + ([] if self.network else ["--unshare-net"])) if self.drops_to_uid else \
            (["--unshare-all"] + (["--share-net"] if self.network else []))
        mounts = ["--ro-bind", "/usr", "/usr"]
        for top in _TOP:
            path = f"/{top}"
            if os.path.islink(path):
                mounts += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                mounts += ["--ro-bind", path, path]
        for name in _ETC:
            mounts += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        mounts += ["--proc", "/proc", "--dev", "/dev",
                   "--perms", "1777", "--size", str(self.limits["tmp_mb"] * mb), "--tmpfs", "/tmp",
                   "--bind", workdir, workdir, "--remount-ro", "/", "--chdir", workdir]
        uid = self.uid_of(workdir)
        drop = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all",
                "--bounding-set=-all", "--no-new-privs", "--"] if self.drops_to_uid and as_run else []
        return [*limits, "bwrap", *spaces, "--die-with-parent", "--new-session", "--hostname", "forge-step",
                *mounts, "--", *drop, *command]

    def problem(self, workdir: str) -> str | None:
        """Why shell steps cannot run in this sandbox here (None: they can), found by starting one that does
        nothing. Remembered once it worked, so a step pays for it once per worker."""
        if not self.enabled or (self.drops_to_uid, self.network) in _WORKED:
            return None
        missing = [tool for tool in ("bwrap", "prlimit", *(["setpriv"] if self.drops_to_uid else []))
                   if shutil.which(tool, path=SAFE_PATH) is None]
        if missing:
            return (f"shell steps run in a sandbox, and {', '.join(missing)} is not installed (Debian: apt-get "
                    f"install bubblewrap util-linux)")
        try:
            done = subprocess.run(self.argv(["true"], workdir, as_run=False), env={"PATH": SAFE_PATH},
                                  capture_output=True, stdin=subprocess.DEVNULL, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"the shell sandbox cannot start: {exc}"
        if done.returncode != 0:
            said = done.stderr.decode("utf-8", "replace").strip()[-300:]
            return f"the shell sandbox cannot start here (bubblewrap said: {said or done.returncode})"
        with _LOCK:
            _WORKED.add((self.drops_to_uid, self.network))
        return None


_WORKED: set[tuple[bool, bool]] = set()
_LOCK = threading.Lock()


def sandbox_from_environ(environ: Mapping[str, str] | None = None, *, network: bool = False) -> Sandbox:
    """The local runner's sandbox: on unless FORGE_SHELL_SANDBOX=off; FORGE_SHELL_UIDS (FIRST-LAST) for a root user.

    Raises:
        ValueError: a variable holds something else than it may.
    """
    environ = os.environ if environ is None else environ
    switch = environ.get("FORGE_SHELL_SANDBOX", "on").strip().lower()
    if switch not in ("on", "off"):
        raise ValueError(f"FORGE_SHELL_SANDBOX must be on or off, not {switch[:20]!r}")
    raw = environ.get("FORGE_SHELL_UIDS", f"{UIDS.start}-{UIDS.stop - 1}").strip()
    first, _, last = raw.partition("-")
    if not all(part.isascii() and part.isdigit() and len(part) <= 10 for part in (first, last)) \
            or not 1000 <= int(first) <= int(last) < 2**31 - 1:
        raise ValueError("FORGE_SHELL_UIDS must be FIRST-LAST, unprivileged user ids (1000 or more) no account uses")
    return Sandbox(enabled=switch == "on", network=network, uids=range(int(first), int(last) + 1))
