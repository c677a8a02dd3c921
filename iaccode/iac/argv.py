"""Reading an infrastructure CLI's arguments: options, ``--``, and which verb they name.

Each CLI of :mod:`iaccode.iac.clis` is a :class:`Spec`: the global options that take a value
(``kubectl -v 9 delete``: 9 is no verb), a tree of verbs (:class:`Verbs`: the words that change
something, the words that only read, and groups whose next word decides: ``terraform state
rm``), how it reads a dry run, and an optional function for what a table cannot say (``aws s3
cp`` changes only towards ``s3://``).

The verb is the first word of the table found among the positional arguments (a word the table
does not know, such as the value of an option it does not know, is passed over). Options after
``--`` are the program's arguments, not the CLI's (``kubectl exec pod -- --dry-run``), and so
is a ``--help`` there. Where the table finds no verb, the spec says whether that is a read
(terraform's unknown words print its help) or a change it cannot tell (a kubectl plugin).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from attrs import field, frozen


@frozen
class Change:
    """What changes real infrastructure: ``terraform apply``, ``aws ec2 terminate-instances``."""

    label: str
    """The CLI and the words up to its verb; the same argv always gets the same label."""
    unknown: bool = False
    """A verb the table does not know, counted as a change: the question says it cannot tell."""


@frozen
class Parsed:
    """A CLI's arguments, split."""

    positionals: list[str]
    """Words before ``--`` that are neither options nor the values of known value options."""
    options: list[str]
    """Option words before ``--`` (``--dry-run=client``, ``-C``), values glued as given."""
    after: list[str]
    """What follows ``--``: the program's arguments, never the CLI's options."""

    before: list[str] = field(factory=list)
    """Every word before ``--``, in order."""

    def has(self, *names: str, clusters: bool = False) -> bool:
        """Whether one of the options ``names`` is given (``--check``, ``-C=x``); with
        ``clusters``, also a short one inside a cluster (``-C`` in ``-vC``). Not by default:
        single-dash long options (``-chdir``) would read as clusters."""
        for option in self.options:
            if option.split("=", 1)[0] in names:
                return True
            if clusters and not option.startswith("--") and option[1:].isalpha():
                shorts = {name[1] for name in names if len(name) == 2 and name[0] == "-"}
                if shorts.intersection(option[1:]):
                    return True
        return False

    def value(self, *names: str) -> str | None:
        """The value of the first of ``names`` given as ``--name=value`` or ``--name value``."""
        for name in names:
            for index, word in enumerate(self.before):
                if word == name and index + 1 < len(self.before):
                    return self.before[index + 1]
                if word.startswith(name + "="):
                    return word.split("=", 1)[1]
        return None


def parse(args: list[str], value_options: frozenset[str] = frozenset()) -> Parsed:
    positionals: list[str] = []
    options: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            return Parsed(positionals, options, args[index + 1 :], args[:index])
        if arg.startswith("-") and len(arg) > 1:
            options.append(arg)
            if arg in value_options and index + 1 < len(args):
                index += 1  # its value is no positional
        else:
            positionals.append(arg)
        index += 1
    return Parsed(positionals, options, [], args)


@frozen
class Verbs:
    """One level of a CLI's verbs."""

    changes: frozenset[str] = frozenset()
    reads: frozenset[str] = frozenset()
    groups: dict[str, Verbs] = field(factory=dict)
    """Words whose next known word decides (``state`` -> ``rm`` / ``list``)."""
    otherwise: str = "change"
    """A group with no known word after it: ``change`` (asks, cannot tell) or ``read``."""


def options(words: str) -> frozenset[str]:
    """Option names from space-separated words."""
    return frozenset(words.split())


def verbs(
    changes: str = "",
    reads: str = "",
    groups: dict[str, Verbs] | None = None,
    otherwise: str = "change",
) -> Verbs:
    """A :class:`Verbs` from space-separated words."""
    return Verbs(frozenset(changes.split()), frozenset(reads.split()), groups or {}, otherwise)


TABLE: Literal[True] = True
"""What a :data:`Special` returns when the verb table decides."""
Decision = Change | None | Literal[True]
Special = Callable[[str, Parsed], Decision]
"""What a table cannot say: a Change, None (a read), or :data:`TABLE` (the table decides)."""


@frozen
class Spec:
    verbs: Verbs
    value_options: frozenset[str] = frozenset()
    dry_run: Callable[[Parsed], bool] = lambda parsed: False
    """Whether the options make this run a dry run (a read)."""
    special: Special | None = None
    hyphen_prefix: bool = False
    """``add-iam-policy-binding`` is an ``add``: a word's part before its first ``-`` counts."""
    otherwise: str = "read"
    """No verb of the table at all: ``read`` (the CLI prints its help) or ``change``."""
    help_words: frozenset[str] = frozenset({"help"})
    words: Callable[[list[str]], list[str]] | None = None
    """The words the verb tree reads, when not the positionals (az: those before an option)."""


def classify_with(name: str, spec: Spec, args: list[str]) -> Change | None:
    parsed = parse(args, spec.value_options)
    if parsed.has("-h", "--help", "-help", "--version", "-version"):
        return None
    if parsed.positionals[:1] and parsed.positionals[0] in spec.help_words | {"version"}:
        return None
    if parsed.positionals[-1:] == ["help"]:  # aws ec2 terminate-instances help
        return None
    if spec.dry_run(parsed):
        return None
    if spec.special is not None:
        decided = spec.special(name, parsed)
        if decided is None or isinstance(decided, Change):
            return decided
    return scan(name, spec.words(args) if spec.words else parsed.positionals, spec)


def scan(name: str, words: list[str], spec: Spec) -> Change | None:
    """The decision of the verb tree on ``words`` (the positionals, in order)."""
    level = spec.verbs
    path: list[str] = [name]
    in_group = False
    for word in words:
        key = word.split("-", 1)[0] if spec.hyphen_prefix else word
        if word in level.groups:
            path.append(word)
            level, in_group = level.groups[word], True
        elif word in level.changes or key in level.changes:
            return Change(" ".join([*path, word]))
        elif word in level.reads or key in level.reads:
            return None
        elif spec.hyphen_prefix:  # a group or resource name: gcloud compute instances ...
            path.append(word)
        # else a word the table does not know (the value of an unknown option): look further
    if in_group:
        return None if level.otherwise == "read" else Change(" ".join(path), unknown=True)
    if spec.otherwise == "change" and words:
        return Change(" ".join([name, *words[:2]]), unknown=True)
    return None


def flag_dry_run(*names: str) -> Callable[[Parsed], bool]:
    """A dry run is any of the options ``names`` (``--check``, ``-C``)."""
    return lambda parsed: parsed.has(*names)


def valued_dry_run(
    option: str, real: frozenset[str] = frozenset({"none", "false"})
) -> Callable[[Parsed], bool]:
    """``--dry-run`` alone or ``--dry-run=client|server|true`` is a dry run; ``=none`` and
    ``=false`` run for real (kubectl, helm)."""

    def dry(parsed: Parsed) -> bool:
        for given in parsed.options:
            bare, _, value = given.partition("=")
            if bare == option:
                return value.strip().lower() not in real
        return False

    return dry
