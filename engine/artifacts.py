"""Collecting a step's artifacts (spec 15): the files of the run's directory that its `artifacts` globs match.

    collected = collect(run_dir, step.artifacts, max_file_bytes=10 << 20, budget_bytes=left, into=copies_dir)
    for kept in collected.kept:     # Kept(path="report/a.pdf", size=..., sha256=..., copy=copies_dir/"report/a.pdf")
        ...
    for refused in collected.refused:  # Refused(path="link.txt", reason="a symbolic link, never followed")
        ...

The step that wrote the directory is not trusted: it may leave symbolic links (to a file or a directory), hard
links, fifos, devices or sockets, and it may still be changing the directory while it is read. So nothing is
ever followed: the directory is walked through directory descriptors opened with O_NOFOLLOW, each file is opened
with O_NOFOLLOW relative to its parent's descriptor and checked with fstat on the open descriptor (a name swapped
for a link after the listing fails to open), and at most the bound is read. A file is hashed as it is copied, so
the copy under `into` holds exactly the bytes whose size and sha256 are reported.

Glob rules: `/` separates segments; `*`, `?` and `[...]` match within one segment (names starting with a dot
included); a `**` segment matches any number of segments. A pattern that is absolute or has a `..` segment is
refused whole (validation refuses it earlier, with its line). Directories are walked only where a pattern may
match below them. A match that is a directory is refused only when the pattern names it without a wildcard
(`report` rather than `report/*`).
"""

from __future__ import annotations

import errno
import hashlib
import itertools
import os
import stat
import tempfile
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

MAX_FILE_BYTES = 10 * 1024 * 1024  # spec 15's bounds, unless the installation says otherwise
MAX_RUN_BYTES = 100 * 1024 * 1024
MAX_PATTERNS = 100
MAX_PATTERN_CHARS = 512
MAX_ENTRIES = 100_000  # directory entries looked at per collection: a step cannot make collecting endless
MAX_DEPTH = 64  # directories nested below the run's directory that are walked (each holds a descriptor)
MAX_KEPT = 1000  # files kept per collection: empty files cost no bytes, yet each is a row to keep
MAX_REFUSED = 100  # refusals listed per collection; the rest are counted in one last entry
MAX_PATH_CHARS = 1024  # a kept file's relative path (the runtime's column)
_CHUNK = 1 << 16
_WILDCARDS = frozenset("*?[")


@dataclass(frozen=True, slots=True)
class Kept:
    """A regular file kept: its path relative to the run's directory, its size and sha256, and where its copy is
    (None when `collect` was given no `into`)."""

    path: str
    size: int
    sha256: str
    copy: Path | None = None

    def to_json(self) -> dict:
        return {"path": self.path, "size": self.size, "sha256": self.sha256}


@dataclass(frozen=True, slots=True)
class Refused:
    """A match not kept (or a pattern refused whole), and why, as a sentence fragment for people."""

    path: str
    reason: str

    def to_json(self) -> dict:
        return {"path": self.path, "reason": self.reason}


@dataclass(slots=True)
class Collected:
    kept: list[Kept] = field(default_factory=list)
    refused: list[Refused] = field(default_factory=list)

    @property
    def total_bytes(self) -> int:
        return sum(kept.size for kept in self.kept)

    def to_json(self) -> dict:
        return {"kept": [kept.to_json() for kept in self.kept], "refused": [r.to_json() for r in self.refused]}


def pattern_problem(pattern: object) -> str | None:
    """Why `pattern` cannot be an artifacts glob (None: it can). Validation and `collect` share this rule."""
    if not isinstance(pattern, str) or not pattern.strip():
        return "must be a non-empty glob relative to the run's directory"
    if len(pattern) > MAX_PATTERN_CHARS:
        return f"must be at most {MAX_PATTERN_CHARS} characters"
    if "\x00" in pattern or "\\" in pattern:
        return "must not contain a NUL or a backslash (use / between segments)"
    if pattern.startswith("/") or pattern.startswith("~"):
        return "must be relative to the run's directory, not an absolute path"
    if ".." in pattern.split("/"):
        return "must stay inside the run's directory (no '..' segment)"
    return None


def _segments(pattern: str) -> tuple[str, ...]:
    return tuple(part for part in pattern.split("/") if part not in ("", "."))


def _matches(pattern: tuple[str, ...], path: tuple[str, ...]) -> bool:
    # The pattern positions reachable segment by segment: trying each way to split the path between `**`s was
    # exponential in their number, and a glob of many `**` over a deep directory held the worker for ever.
    reached = _past_double_stars(pattern, {0})
    for name in path:
        reached = _past_double_stars(pattern, {i if pattern[i] == "**" else i + 1 for i in reached
                                               if i < len(pattern) and (pattern[i] == "**"
                                                                        or fnmatchcase(name, pattern[i]))})
        if not reached:
            return False
    return len(pattern) in reached


def _past_double_stars(pattern: tuple[str, ...], reached: set[int]) -> set[int]:
    """`reached` and the positions after any `**` in it (a `**` matches no segment too)."""
    out, todo = set(reached), list(reached)
    while todo:
        i = todo.pop()
        if i < len(pattern) and pattern[i] == "**" and i + 1 not in out:
            out.add(i + 1)
            todo.append(i + 1)
    return out


def _reaches_below(pattern: tuple[str, ...], path: tuple[str, ...]) -> bool:
    """Whether `pattern` may match something inside the directory `path`."""
    if not path:
        return bool(pattern)
    if not pattern:
        return False
    if pattern[0] == "**":
        return True
    return fnmatchcase(path[0], pattern[0]) and _reaches_below(pattern[1:], path[1:])


def _kind(mode: int) -> str | None:
    """Why a file of this type is refused (None: a regular file)."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode):
        return "a symbolic link, never followed"
    if stat.S_ISDIR(mode):
        return "a directory (name its files, e.g. dir/**)"
    if stat.S_ISFIFO(mode):
        return "a fifo, not a regular file"
    if stat.S_ISSOCK(mode):
        return "a socket, not a regular file"
    return "a device, not a regular file"


class _Walk:
    def __init__(self, patterns: list[tuple[str, ...]], literal: set[tuple[str, ...]], max_file_bytes: int,
                 budget_bytes: int, into: Path | None):
        self.patterns = patterns
        self.literal = literal
        self.max_file_bytes = max_file_bytes
        self.left = budget_bytes
        self.into = into
        self.seen = 0
        self.unlisted = 0  # refusals past MAX_REFUSED
        self.out = Collected()

    def refuse(self, path: tuple[str, ...], reason: str) -> None:
        if len(self.out.refused) >= MAX_REFUSED:
            self.unlisted += 1
            return
        shown = "/".join(path)
        if len(shown) > MAX_PATH_CHARS:
            shown = shown[:MAX_PATH_CHARS - 1] + "…"
        self.out.refused.append(Refused(shown, reason))

    def directory(self, fd: int, rel: tuple[str, ...]) -> bool:
        """Walk one open directory; False once the entry bound is reached."""
        with os.scandir(fd) as listing:  # at most what the bound still allows, then sorted
            entries = sorted(itertools.islice(listing, MAX_ENTRIES - self.seen + 1), key=lambda entry: entry.name)
        for entry in entries:
            self.seen += 1
            if self.seen > MAX_ENTRIES:
                self.refuse(rel or (".",), f"more than {MAX_ENTRIES} entries in the run's directory; "
                                           "the rest were not looked at")
                return False
            path = (*rel, entry.name)
            matched = any(_matches(pattern, path) for pattern in self.patterns)
            below = any(_reaches_below(pattern, path) for pattern in self.patterns)
            if not (matched or below):
                continue
            if not _utf8(entry.name):
                self.refuse(tuple(_shown(part) for part in path), "a name that is not UTF-8")
                continue
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except FileNotFoundError:
                continue  # removed since the listing
            if stat.S_ISDIR(mode):
                if matched and path in self.literal:
                    self.refuse(path, _kind(mode))
                if below and len(path) > MAX_DEPTH:
                    self.refuse(path, f"nested deeper than {MAX_DEPTH} directories; not looked into")
                elif below and not self.subdirectory(fd, entry.name, path):
                    return False
            elif matched:
                self.file(fd, entry.name, path, mode)
            elif stat.S_ISLNK(mode):
                self.refuse(path, "a symbolic link, never followed")  # a pattern reaches through it
        return True

    def subdirectory(self, parent: int, name: str, path: tuple[str, ...]) -> bool:
        try:
            fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
        except OSError as error:
            if error.errno in (errno.ELOOP, errno.ENOTDIR):
                self.refuse(path, "a symbolic link, never followed")  # swapped in since the listing
            elif error.errno != errno.ENOENT:
                self.refuse(path, f"could not be read ({os.strerror(error.errno)})")
            return True
        try:
            return self.directory(fd, path)
        finally:
            os.close(fd)

    def file(self, parent: int, name: str, path: tuple[str, ...], mode: int) -> None:
        if (reason := _kind(mode)) is not None:
            self.refuse(path, reason)  # never opened: opening a device or a fifo may act on it
            return
        if len(self.out.kept) >= MAX_KEPT:
            self.refuse(path, f"more than {MAX_KEPT} files matched; only the first were kept")
            return
        if len("/".join(path)) > MAX_PATH_CHARS:
            self.refuse(path, f"a path longer than {MAX_PATH_CHARS} characters")
            return
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=parent)
        except OSError as error:
            if error.errno == errno.ELOOP:
                self.refuse(path, "a symbolic link, never followed")
            elif error.errno != errno.ENOENT:
                self.refuse(path, f"could not be read ({os.strerror(error.errno)})")
            return
        try:
            self.read(fd, path)
        finally:
            os.close(fd)

    def read(self, fd: int, path: tuple[str, ...]) -> None:
        info = os.fstat(fd)
        if (reason := _kind(info.st_mode)) is not None:
            self.refuse(path, reason)
            return
        if info.st_nlink != 1:
            self.refuse(path, "a hard link (a file with several names), never followed")
            return
        if info.st_size > self.max_file_bytes:
            self.refuse(path, f"larger than {self.max_file_bytes} bytes, the bound for one artifact")
            return
        if info.st_size > self.left:
            self.refuse(path, f"over the run's bound for artifacts ({self.left} bytes were left)")
            return
        bound = min(self.max_file_bytes, self.left)
        digest = hashlib.sha256()
        size = 0
        copy = partial = sink = None
        if self.into is not None:
            copy = self.into.joinpath(*path)
            copy.parent.mkdir(parents=True, exist_ok=True)
            handle, name = tempfile.mkstemp(dir=copy.parent, prefix=".partial-")
            partial, sink = Path(name), os.fdopen(handle, "wb")
        try:
            while size <= bound:
                chunk = os.read(fd, min(_CHUNK, bound + 1 - size))
                if not chunk:
                    break
                size += len(chunk)
                if size > bound:
                    break
                digest.update(chunk)
                if sink is not None:
                    sink.write(chunk)
        finally:
            if sink is not None:
                sink.close()
        if size > bound:
            if partial is not None:
                partial.unlink()
            self.refuse(path, f"grew past {bound} bytes while it was read")
            return
        if partial is not None:
            os.replace(partial, copy)
        self.left -= size
        self.out.kept.append(Kept("/".join(path), size, digest.hexdigest(), copy))


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False  # undecodable bytes, kept by the os module as surrogates
    return True


def _shown(name: str) -> str:
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def collect(root: Path | str, patterns: list[str], *, max_file_bytes: int, budget_bytes: int,
            into: Path | None = None) -> Collected:
    """The regular files under `root` that `patterns` match, each at most `max_file_bytes`, together at most
    `budget_bytes` (what the run has left), in path order; and the matches refused, with why.

    With `into` (a directory the caller owns, e.g. a fresh temporary one), each kept file is copied to
    `into/<its relative path>` as it is hashed; `Kept.copy` names the copy. `root` itself is the caller's (the
    run's directory); what is inside it is the step's and is never trusted.
    """
    good: list[tuple[str, ...]] = []
    literal: set[tuple[str, ...]] = set()
    out_refused: list[Refused] = []
    for pattern in list(patterns)[:MAX_PATTERNS]:
        if (problem := pattern_problem(pattern)) is not None:
            out_refused.append(Refused(str(pattern)[:MAX_PATTERN_CHARS], f"refused pattern: it {problem}"))
            continue
        segments = _segments(pattern)
        if segments:
            good.append(segments)
            if not any(_WILDCARDS & set(part) for part in segments):
                literal.add(segments)
    walk = _Walk(good, literal, max(0, max_file_bytes), max(0, budget_bytes), into)
    if good:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            walk.directory(fd, ())
        finally:
            os.close(fd)
    if walk.unlisted:
        walk.out.refused.append(Refused(".", f"{walk.unlisted} more matches were refused; the first "
                                             f"{MAX_REFUSED} are listed"))
    walk.out.refused[:0] = out_refused
    walk.out.kept.sort(key=lambda kept: kept.path)
    return walk.out


class Listing:
    """What a run's steps kept and had refused, attempt by attempt, within the run's bound: the local runner's
    record (it keeps no copies; its report lists them). `steps[step]` is {"kept": [...], "refused": [...]}, each
    entry with its `attempt`."""

    def __init__(self, *, max_file_bytes: int = MAX_FILE_BYTES, run_bytes: int = MAX_RUN_BYTES):
        self.max_file_bytes = max_file_bytes
        self.left = run_bytes
        self.steps: dict[str, dict[str, list]] = {}

    def collect(self, root: Path | str, step: str, attempt: int, patterns: list[str]) -> None:
        got = collect(root, patterns, max_file_bytes=self.max_file_bytes, budget_bytes=self.left)
        self.left -= got.total_bytes
        listed = self.steps.setdefault(step, {"kept": [], "refused": []})
        listed["kept"] += [{**kept.to_json(), "attempt": attempt} for kept in got.kept]
        listed["refused"] += [{**refused.to_json(), "attempt": attempt} for refused in got.refused]
