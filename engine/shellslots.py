"""What a shell agent's placeholder turns into: a reference written for its context, or a refusal.

The rules here read the words of one simple command (quotes removed) and
decide whether a value in its next word would be parsed again: as code (a
nested shell, `eval`), or by bash as arithmetic or a variable name, which
runs the commands an array index holds (`a[$(...)]`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

WORD, QUOTED, SINGLE, ANSI = "word", "quoted", "single", "ansi"
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "pdksh", "ash", "yash", "posh", "rbash", "fish",
                    "csh", "tcsh"})
EVALUATING = frozenset({"eval", "trap", "alias"})
# Reserved words before a command's name, and commands that run the command a later word names.
_BEFORE_NAME = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "{", "(", "time"})
_WRAPPERS = frozenset({"command", "builtin", "exec", "env", "sudo", "doas", "nohup", "nice", "ionice", "timeout",
                       "xargs", "setsid", "stdbuf", "chroot", "taskset", "time", "su", "runuser", "watch"})
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
COND_ARITH = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-v"})
_READ_VALUE_OPTIONS = frozenset({"-p", "-d", "-t", "-n", "-N", "-u"})

NESTED = ("{p} is inside the command string of `{cmd}`, which a nested shell parses again as code; pass the value as "
          "an argument instead: sh -c 'echo \"$1\"' _ \"{p}\"")
EVALUATED = ("{p} is an argument of `{cmd}`, which parses it again as code; run the command without {cmd} and pass "
             "the value as an argument")
STDIN = ("{p} reaches a shell's standard input (`sh <<EOF`, `... | sh`, `bash <<<`), which runs it as code; give "
         "the script in a quoted heredoc and the value as an argument: sh -s -- \"{p}\" <<'EOF' (it reads \"$1\")")
ARITH = ("{p} is where bash evaluates arithmetic (`$((...))`, `((...))`, `let`, `[[ -eq ]]`, `declare -i`, an index "
         "or offset in `${...}`, the file descriptor of `>&`), which runs the commands a value can hold; copy it to a "
         "variable and check it is a number first: n={p}; case $n in ''|*[!0-9]*) exit 2;; esac; echo $((n + 1))")
NAME = ("{p} is used as a variable name (`read`, `printf -v`, `test -v`, a `${...}` name), which bash evaluates and "
        "can run commands in; use a fixed name and pass the value as data")
QUOTED_HEREDOC = ("{p} is in a heredoc whose delimiter is quoted (<<'EOF'), where the shell expands nothing; use an "
                  "unquoted delimiter (<<EOF): the value is still passed as data")
DELIMITER = "{p} is a heredoc delimiter; a delimiter must be literal text"
TOO_DEEP = ("{p} is inside more than 64 quotes and substitutions nested in one another, too deep to check where its "
            "value goes; nest less")
DYNAMIC = ("{p} is given to a command whose name comes from an expansion (`$cmd`, `$(...)`), so Forge cannot tell "
           "whether it parses the value again (`eval`, `sh -c`); name the command literally")
BACKSLASH = ("a backslash right before {p} would escape the reference to its value; remove the backslash (the value "
             "is passed as data already)")


def reference(form: str, name: str) -> str:
    """How the command refers to variable `name` in a slot of this form."""
    if form == QUOTED:
        return "${" + name + "}"
    if form == SINGLE:
        return "'\"$" + name + "\"'"
    if form == ANSI:
        return "'\"$" + name + "\"$'"
    return '"$' + name + '"'


@dataclass(slots=True)
class Slot:
    """One placeholder of the command: how its reference is written, or why no reference can stand there."""

    path: Any
    form: str
    problem: str | None = None

    def refuse(self, message: str, cmd: str = "") -> None:
        if self.problem is None:
            placeholder = "${" + self.path.text() + "}"
            self.problem = message.replace("{p}", placeholder).replace("{cmd}", cmd)


class Words:
    """The words of one simple command so far (quotes removed), and what they make of the next word.

    Kept as facts updated word by word, so that a command of many words and
    placeholders is checked in linear time.
    """

    __slots__ = ("count", "previous", "names", "int_option", "cond_arith", "shell", "flags", "operand", "skip",
                 "ended", "named", "wrapped", "dynamic")

    def __init__(self):
        self.count, self.previous = 0, ""
        self.names: set[str] = set()
        self.int_option = self.cond_arith = False
        self.shell = ""  # the last shell named, and its options and operands after it
        self.flags: set[str] = set()
        self.operand = self.skip = self.ended = False  # skip: the next word is an option's argument
        self.named = self.wrapped = self.dynamic = False  # the command's name: seen, a wrapper's, an expansion's

    def add(self, word: str) -> None:
        """The next word; a NUL in it stands for an expansion (or a placeholder)."""
        name = word.rsplit("/", 1)[-1]
        if self.names_command(word):
            self.named, self.wrapped = True, name in _WRAPPERS
            self.dynamic = "\0" in word
        elif self.wrapped and "\0" in word:
            self.dynamic = True  # `env $tool ...`: the wrapper runs what the expansion names
        self.names.add(name)
        self.int_option |= word[:1] == "-" and "i" in word[1:]
        self.cond_arith |= word in COND_ARITH
        if name in SHELLS:
            self.shell, self.flags = name, set()
            self.operand = self.skip = self.ended = False
        elif self.shell and not self.operand:
            if self.skip:
                self.skip = False
            elif self.ended or len(word) < 2 or word[0] not in "-+":
                self.operand = True
            elif word == "--":
                self.ended = True
            elif not word.startswith("--"):
                self.flags.update(word[1:])
                self.skip = word[1:] in ("o", "O")
        self.count += 1
        self.previous = word

    def names_command(self, word: str) -> bool:
        """Whether `word`, coming next, is the command's name."""
        return not self.named and word.rsplit("/", 1)[-1] not in _BEFORE_NAME and not _ASSIGNMENT.match(word)

    @property
    def reads_code(self) -> bool:
        """Whether this command is a shell reading its script from standard input."""
        return self.dynamic or (bool(self.shell) and "c" not in self.flags and ("s" in self.flags or not self.operand))

    def check_next(self, slot: Slot, current: str) -> None:
        """Refuse `slot`, which is in the next word (`current` is how it starts), if that word is parsed again."""
        names, previous = self.names, self.previous
        if self.dynamic:
            slot.refuse(DYNAMIC)
        for name in sorted(EVALUATING & names):
            slot.refuse(EVALUATED, name)
        if "let" in names or (self.int_option and names & {"declare", "typeset", "local"}):
            slot.refuse(ARITH)
        if ("read" in names and previous not in _READ_VALUE_OPTIONS) or \
                (previous == "-v" and names & {"test", "[", "[[", "printf"}):
            slot.refuse(NAME)
        if names & {"su", "runuser"} and (previous in ("-c", "--command") or current.startswith("--command=")):
            slot.refuse(NESTED, "su -c")
        if "c" in self.flags and not self.operand and not self.skip:
            slot.refuse(NESTED, f"{self.shell} -c")


class Command:
    """One simple command being read: its words, and its placeholders by what they are in it."""

    __slots__ = ("words", "cond", "slots", "stdin_slots", "cond_slots", "name_slots", "heredocs")

    def __init__(self):
        self.words = Words()
        self.cond = False  # inside [[ ... ]]
        self.slots: list[Slot] = []  # in its arguments
        self.stdin_slots: list[Slot] = []  # in a here-string
        self.cond_slots: list[Slot] = []
        self.name_slots: list[tuple[Slot, bool]] = []  # in the word that may be its name: directly, or nested
        self.heredocs: list = []  # the bodies it declares (the scanner's frames)

    def place(self, slot: Slot, target: str | None, current: str, direct: bool) -> None:
        """A placeholder in the word being read; `target`: the redirection the word is for, if any."""
        if target in ("heredoc", "fd"):  # bash reads `>&WORD` as a number, with arithmetic
            slot.refuse(DELIMITER if target == "heredoc" else ARITH)
        elif target == "herestring":
            self.stdin_slots.append(slot)
        elif target is None:
            if not self.words.named or self.words.wrapped:
                self.name_slots.append((slot, direct))
            self.slots.append(slot)
            if self.cond:
                self.cond_slots.append(slot)
            self.words.check_next(slot, current)

    def add_word(self, text: str) -> None:
        """A word that is not a redirection's: a NUL in it stands for an expansion or a placeholder."""
        name_slots, self.name_slots = self.name_slots, []
        direct = sum(is_direct for _, is_direct in name_slots)
        names = self.words.names_command(text) or self.words.wrapped  # a wrapper runs what a later word names
        if names and (text.count("\0") > direct or direct < len(name_slots)):
            for slot, _ in name_slots:  # split into fields, the value could become `eval` and its arguments
                slot.refuse(DYNAMIC)
        if text == "[[" and not self.words.count:
            self.cond = True
        elif self.cond and text == "]]":
            self.end_cond()
        self.words.add(text)

    def end_cond(self) -> None:
        self.cond = False
        if self.words.cond_arith:
            for slot in self.cond_slots:
                slot.refuse(ARITH)
        self.cond_slots = []

    @property
    def empty(self) -> bool:
        return not (self.words.count or self.slots or self.stdin_slots or self.heredocs)


def end_pipeline(commands: list[Command]) -> None:
    """Refuse what a pipeline gives a shell to run: what its shells read, or what is piped into one."""
    later = False
    for command in reversed(commands):
        reads = command.words.reads_code
        for slot in command.slots if later else ():
            slot.refuse(STDIN)
        for slot in command.stdin_slots if reads or later else ():
            slot.refuse(STDIN)
        for heredoc in command.heredocs if reads or later else ():
            heredoc.feeds_shell = True
        later = later or reads
