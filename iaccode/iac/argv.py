"""Reading an infrastructure CLI's arguments: options, ``--``, and which verb they name.

Each CLI of :mod:`iaccode.iac.clis` is a :class:`Spec`: the global options that take a value
(``kubectl -v 9 delete``: 9 is no verb), a tree of verbs (:class:`Verbs`: the words that change
something, the words that only read, and groups whose next word decides: ``terraform state
rm``), how it reads a dry run, and an optional function for what a table cannot say (``aws s3
cp`` changes only towards ``s3://``).

The verb is the first word of the table found among the positional arguments (a word the table
does not know, such as the value of an option it does not know, is passed over); and where an
option we do not know stands before it, the reading in which that option took the next word as
its value counts too, when it names a change. Help options count anywhere, given bare; version
options only before the verb; a repeated option counts by its last occurrence. Options after
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
        """The value of the last of ``names`` given as ``--name=value`` or ``--name value``
        (as the CLIs read a repeated option: the last one counts)."""
        found = None
        for index, word in enumerate(self.before):
            for name in names:
                if word == name and index + 1 < len(self.before):
                    found = self.before[index + 1]
                elif word.startswith(name + "="):
                    found = word.split("=", 1)[1]
        return found

    def last(self, *names: str) -> tuple[bool, str | None]:
        """Whether one of the options ``names`` is given, and the value glued to the last one
        given (``--dry-run=none``; None when bare)."""
        given, value = False, None
        for option in self.options:
            bare, sep, glued = option.partition("=")
            if bare in names:
                given, value = True, glued if sep else None
        return given, value


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
    help_options: frozenset[str] = frozenset({"-h", "--help", "-help"})
    """Options that print help wherever they stand, given bare (``--help=false`` runs)."""
    version_options: frozenset[str] = frozenset({"--version", "-version"})
    """Options that print the version before any verb (after one they are the command's:
    ``helm upgrade --version 15.0.0`` pins a chart)."""


def classify_with(name: str, spec: Spec, args: list[str]) -> Change | None:
    parsed = parse(args, spec.value_options)
    if any(option in spec.help_options for option in parsed.options):
        return None
    if _global_version(parsed, spec):
        return None
    if parsed.positionals[:1] and parsed.positionals[0] in spec.help_words | {"version"}:
        return None
    if spec.dry_run(parsed):
        return None
    if spec.special is not None:
        decided = spec.special(name, parsed)
        if decided is None or isinstance(decided, Change):
            return decided
    if spec.words is not None:
        return scan(name, spec.words(args), spec)
    decided = scan(name, parsed.positionals, spec)
    if decided is None:
        # An option we do not know may take the next word as its value (``kubectl -f get
        # delete``: get is the manifest file): then the verb is another word. Asked when
        # that reading names a change the table knows (a flag before a read names none).
        unknown = frozenset(option for option in parsed.options if "=" not in option)
        other = scan(name, parse(args, spec.value_options | unknown).positionals, spec)
        if other is not None and not other.unknown:
            return other
    return decided


def _global_version(parsed: Parsed, spec: Spec) -> bool:
    """A bare version option before the first positional word (``terraform -version``)."""
    for word in parsed.before:
        if not word.startswith("-"):
            return False
        if word in spec.version_options:
            return True
    return False


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


FALSE = frozenset({"false", "0", "f"})
"""How Go's ``strconv.ParseBool`` spells false (any case): ``--dry-run=f`` runs for real."""


def flag_dry_run(*names: str) -> Callable[[Parsed], bool]:
    """A dry run is any of the boolean options ``names`` given bare or true, the last one
    given deciding (``--preview-only=false`` runs for real)."""

    def dry(parsed: Parsed) -> bool:
        given, value = parsed.last(*names)
        return given and (value is None or value.strip().lower() not in FALSE)

    return dry


def valued_dry_run(option: str) -> Callable[[Parsed], bool]:
    """``--dry-run`` alone or ``--dry-run=client|server|true`` is a dry run; ``=none`` and a
    false one run for real (kubectl, helm), the last one given deciding."""

    def dry(parsed: Parsed) -> bool:
        given, value = parsed.last(option)
        return given and (value is None or value.strip().lower() not in FALSE | {"none"})

    return dry
