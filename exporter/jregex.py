"""Java regular expressions (``java.util.regex.Pattern``, as jmx_exporter compiles rule patterns) for Python's ``re``.

:func:`translate` parses a Java pattern and emits an equivalent Python pattern. Java's defaults are kept: ``\\w``,
``\\d``, ``\\s``, ``\\b`` and case-insensitive matching are ASCII-only (compile with ``re.ASCII``); ``.`` stops at any
of Java's line terminators; inline flags (``(?i)``) last to the end of the enclosing group, as Java restores flags
when a group closes (Python 3.11 refuses mid-pattern global flags, so flags are applied to each atom instead);
``(?<name>...)``, ``\\k<name>``, ``\\Q...\\E``, ``\\h``, ``\\v``, ``\\R``, ``\\z``, ``\\p{Alpha}`` and friends are
rewritten; possessive quantifiers and atomic groups are native in Python 3.11. What Python cannot express
(nested or intersected character classes, ``\\G``, ``\\X``, CANON_EQ) raises :class:`JavaRegexError`.

:func:`analyse` also answers a question the engine's cache needs: can the string a pattern matches reach into the
attribute value at the end of jmx_exporter's match string (``...><>Count: 42``)? It builds, from the same parse, a
pattern for the prefixes ``x`` such that ``x + w`` is matched for some non-empty ``w`` made of the characters Java
prints numbers with. If no suffix of ``...: `` is such a prefix, the value cannot change the outcome.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Characters of Long.toString and Double.toString (digits, sign, point, exponent, NaN, Infinity).
VALUE_CHARS = frozenset("0123456789.-ENaInfity")
_LINE_END = "\\n\\r\\u0085\\u2028\\u2029"
LINE_END = re.compile(f"[{_LINE_END}]")  # Java's line terminators: a text without them may use `single_line`
_DOT = f"[^{_LINE_END}]"
_JAVA_DOLLAR = "(?=(?:\\r\\n|[\\n\\r\\u0085\\u2028\\u2029])?\\Z)"
_POSIX = {  # \p{...} classes Java defines over US-ASCII
    "Lower": "a-z", "Upper": "A-Z", "ASCII": "\\x00-\\x7f", "Alpha": "a-zA-Z", "Digit": "0-9", "Alnum": "a-zA-Z0-9",
    "Punct": "!-/:-@\\[-`{-~", "Graph": "!-~", "Print": " -~", "Blank": " \\t", "Cntrl": "\\x00-\\x1f\\x7f",
    "XDigit": "0-9a-fA-F", "Space": " \\t\\n\\x0b\\f\\r", "javaLowerCase": "a-z", "javaUpperCase": "A-Z",
    "IsAlphabetic": "a-zA-Z", "IsDigit": "0-9", "IsLetter": "a-zA-Z", "IsLowercase": "a-z", "IsUppercase": "A-Z",
    "IsWhite_Space": " \\t\\n\\x0b\\f\\r\\x85\\xa0", "L": "a-zA-Z", "Lu": "A-Z", "Ll": "a-z", "N": "0-9", "Nd": "0-9",
}
_CLASS_ESC = {"h": " \\t\\xa0\\u1680\\u180e\\u2000-\\u200a\\u202f\\u205f\\u3000", "v": "\\n\\x0b\\f\\r\\x85\\u2028\\u2029"}
_CHAR_ESC = {"t": "\t", "n": "\n", "r": "\r", "f": "\f", "a": "\a", "e": "\x1b"}


class JavaRegexError(ValueError):
    """A Java pattern that is invalid, or valid but not expressible with Python's ``re``."""


# ------------------------------------------------------------------------------------------------ syntax tree

@dataclass
class Node:
    def emit(self, cap: bool = True) -> str:
        raise NotImplementedError

    def nullable(self) -> bool:
        return False

    def in_values(self) -> bool:
        """Can it match some (possibly empty) string of VALUE_CHARS only?"""
        return True

    def quot(self) -> str | None:
        """A pattern for x such that x + w is matched for some non-empty w of VALUE_CHARS (a superset; None: none)."""
        return None


@dataclass
class Atom(Node):
    """One character out of a set (literal, class, escape, dot), already resolved against the flags in force."""

    py: str
    value_chars: frozenset = field(default_factory=frozenset)
    lit: str = ""  # the character, when a case-sensitive literal

    def emit(self, cap: bool = True) -> str:
        return self.py

    def in_values(self) -> bool:
        return bool(self.value_chars)

    def quot(self) -> str | None:
        return "" if self.value_chars else None


@dataclass
class Zero(Node):
    """A zero-width assertion (anchors, boundaries, lookarounds); `peeks`: it may look at neighbouring text."""

    py: str
    peeks: bool

    def emit(self, cap: bool = True) -> str:
        return self.py

    def nullable(self) -> bool:
        return True


@dataclass
class Backref(Node):
    py: str

    def emit(self, cap: bool = True) -> str:
        return self.py if cap else ".*"

    def nullable(self) -> bool:
        return True


@dataclass
class Seq(Node):
    items: list[Node]

    def emit(self, cap: bool = True) -> str:
        return "".join(i.emit(cap) for i in self.items)

    def nullable(self) -> bool:
        return all(i.nullable() for i in self.items)

    def in_values(self) -> bool:
        return all(i.in_values() for i in self.items)

    def quot(self) -> str | None:
        alts = []
        for k, item in enumerate(self.items):
            q = item.quot()
            if q is None or not all(i.in_values() for i in self.items[k + 1:]):
                continue
            alts.append("".join(i.emit(False) for i in self.items[:k]) + q)
        return _union(alts)


@dataclass
class Alt(Node):
    branches: list[Node]

    def emit(self, cap: bool = True) -> str:
        return "|".join(b.emit(cap) for b in self.branches)

    def nullable(self) -> bool:
        return any(b.nullable() for b in self.branches)

    def in_values(self) -> bool:
        return any(b.in_values() for b in self.branches)

    def quot(self) -> str | None:
        return _union([q for b in self.branches if (q := b.quot()) is not None])


@dataclass
class Group(Node):
    """`open` is the Python group opener (``(``, ``(?:``, ``(?P<n>``, ``(?>``)."""

    open: str
    body: Node

    def emit(self, cap: bool = True) -> str:
        opener = self.open if cap or self.open in ("(?:", "(?>") else "(?:"
        return f"{opener}{self.body.emit(cap)})"

    def nullable(self) -> bool:
        return self.body.nullable()

    def in_values(self) -> bool:
        return self.body.in_values()

    def quot(self) -> str | None:
        q = self.body.quot()
        return None if q is None else f"(?:{q})"


@dataclass
class Repeat(Node):
    body: Node
    lo: int
    hi: int | None  # None: unbounded
    suffix: str     # "" greedy, "?" lazy, "+" possessive
    text: str       # the quantifier as Python writes it, without suffix

    def emit(self, cap: bool = True) -> str:
        return f"(?:{self.body.emit(cap)}){self.text}{self.suffix}"

    def nullable(self) -> bool:
        return self.lo == 0 or self.body.nullable()

    def in_values(self) -> bool:
        return self.lo == 0 or self.body.in_values()

    def quot(self) -> str | None:
        q = self.body.quot()  # any number of whole copies, then a part of one (counts dropped: a superset)
        return None if q is None or self.hi == 0 else f"(?:{self.body.emit(False)})*(?:{q})"


def _union(alts: list[str]) -> str | None:
    if not alts:
        return None
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


# ------------------------------------------------------------------------------------------------ parser

_FLAG_LETTERS = "idmsuxU"


class _Parser:
    """Recursive descent over Java's pattern grammar; emits Python per atom with the flags in force."""

    def __init__(self, src: str, single_line: bool = False) -> None:
        self.s, self.i = src, 0
        self.single_line = single_line   # for texts without line terminators: plain `.` and `\Z`
        self.flags: set[str] = set()
        self.groups = 0
        self.names: set[str] = set()

    def error(self, msg: str) -> JavaRegexError:
        return JavaRegexError(f"{msg} near index {self.i} in Java pattern {self.s!r}")

    def peek(self) -> str:
        self._skip_comments()
        return self.s[self.i] if self.i < len(self.s) else ""

    def _skip_comments(self) -> None:
        if "x" not in self.flags:
            return
        for _ in range(len(self.s)):  # bounded: each pass consumes at least one character or stops
            if self.i < len(self.s) and self.s[self.i] in " \t\n\x0b\f\r":
                self.i += 1
            elif self.i < len(self.s) and self.s[self.i] == "#":
                end = self.s.find("\n", self.i)
                if end < 0:  # in jmx_exporter's ^.*(?:...).*$ the comment would swallow the closing ')'
                    raise self.error("a (?x) comment runs to the end of the pattern")
                self.i = end + 1
            else:
                return

    def take(self) -> str:
        c = self.peek()
        if not c:
            raise self.error("unexpected end")
        self.i += 1
        return c

    def parse(self) -> Node:
        node = self.alternation()
        if self.i < len(self.s):
            raise self.error("unmatched closing ')'")
        return node

    def alternation(self) -> Node:
        branches = [self.sequence()]
        for _ in range(len(self.s) + 1):
            if self.peek() != "|":
                break
            self.i += 1
            branches.append(self.sequence())
        return branches[0] if len(branches) == 1 else Alt(branches)

    def sequence(self) -> Node:
        items: list[Node] = []
        for _ in range(len(self.s) + 1):
            c = self.peek()
            if c in ("", "|", ")"):
                break
            atom = self.atom()
            if isinstance(atom, Seq):  # \Q...\E: a quantifier applies to its last character
                items.extend(atom.items[:-1])
                atom = atom.items[-1]
            if atom is not None:
                items.append(self.quantified(atom))
        return items[0] if len(items) == 1 else Seq(items)

    def quantified(self, atom: Node) -> Node:
        for _ in range(len(self.s) + 1):
            c = self.peek()
            if c in ("*", "+", "?"):
                self.i += 1
                lo, hi, text = {"*": (0, None, "*"), "+": (1, None, "+"), "?": (0, 1, "?")}[c]
            elif c == "{":
                m = re.compile(r"\{(\d+)(,(\d*))?\}").match(self.s, self.i)
                if not m:
                    raise self.error("illegal repetition")
                self.i = m.end()
                lo = int(m.group(1))
                hi = lo if m.group(2) is None else (int(m.group(3)) if m.group(3) else None)
                text = m.group(0)
            else:
                return atom
            suffix = ""
            if self.i < len(self.s) and self.s[self.i] in "?+":
                suffix = self.s[self.i]
                self.i += 1
            atom = Repeat(atom, lo, hi, suffix, text)
        return atom

    def atom(self) -> Node | None:
        c = self.take()
        if c == "(":
            return self.group()
        if c == "[":
            return self.char_class()
        if c == ".":
            if "s" in self.flags:
                return self._atom("(?s:.)")
            return self._atom("." if self.single_line else "[^\\n]" if "d" in self.flags else _DOT)
        if c == "^":
            return Zero("(?m:^)" if "m" in self.flags else "^", False)
        if c == "$":
            if "m" in self.flags:
                return Zero("(?m:$)", True)
            return Zero(self._dollar("(?=\\n?\\Z)" if "d" in self.flags else _JAVA_DOLLAR), True)
        if c == "\\":
            return self.escape()
        if c in "*+?{":
            raise self.error(f"dangling meta character {c!r}")
        return self._literal(c)

    def _dollar(self, java: str) -> str:
        """Java's end of input before an optional final line terminator; just the end where there is none."""
        return "\\Z" if self.single_line else java

    # -------------------------------------------------------------------------------------------- atoms

    def _atom(self, py: str, fold: bool = False, lit: str = "") -> Atom:
        """An atom from Python text; case-insensitive when (?i) is on and the atom depends on case."""
        if fold and "i" in self.flags:
            py, lit = f"(?{'iu' if 'u' in self.flags else 'i'}:{py})", ""
        if "U" in self.flags:
            py = f"(?u:{py})"
        rx = re.compile(py, re.ASCII)
        return Atom(py, frozenset(ch for ch in VALUE_CHARS if rx.fullmatch(ch)), lit)

    def _literal(self, ch: str) -> Atom:
        return self._atom(re.escape(ch), fold=True, lit=ch)

    def escape(self) -> Node | None:
        c = self.take()
        if c in "dDwWsS":
            return self._atom("\\" + c)
        if c in "bB":
            return Zero(("(?u:\\%s)" if "U" in self.flags else "\\%s") % c, True)
        if c == "A":
            return Zero("\\A", False)
        if c == "z":
            return Zero("\\Z", True)
        if c == "Z":
            return Zero(self._dollar(_JAVA_DOLLAR), True)
        if c == "R":
            return Group("(?:", Alt([self._atom("\\r\\n"), self._atom("[\\n\\x0b\\f\\r\\x85\\u2028\\u2029]")]))
        if c in "hHvV":
            neg = "^" if c.isupper() else ""
            return self._atom(f"[{neg}{_CLASS_ESC[c.lower()]}]")
        if c in "pP":
            return self._atom(f"[{'^' if c == 'P' else ''}{self._posix()}]", fold=True)
        if c == "k":
            m = re.compile(r"<([A-Za-z][A-Za-z0-9]*)>").match(self.s, self.i)
            if not m or m.group(1) not in self.names:
                raise self.error("named capturing group is missing or undefined")
            self.i = m.end()
            return Backref(f"({'?i:' if 'i' in self.flags else '?:'}(?P={m.group(1)}))")
        if c.isdigit() and c != "0":
            n = int(c)
            for _ in range(len(self.s)):  # Java: take more digits while such a group exists
                if self.i < len(self.s) and self.s[self.i].isdigit() and int(f"{n}{self.s[self.i]}") <= self.groups:
                    n = int(f"{n}{self.s[self.i]}")
                    self.i += 1
                else:
                    break
            flag = "(?i:" if "i" in self.flags else "(?:"
            return Backref(f"{flag}\\{n})")
        if c == "Q":
            end = self.s.find("\\E", self.i)
            text = self.s[self.i:] if end < 0 else self.s[self.i:end]
            self.i = len(self.s) if end < 0 else end + 2
            atoms: list[Node] = [self._literal(ch) for ch in text]
            return Seq(atoms) if atoms else None
        if c in "GXN" or c.isalpha() and c not in "tnrfaecxu0":
            raise self.error(f"\\{c} is not supported")
        return self._literal(self._char_escape(c))

    def _char_escape(self, c: str) -> str:
        """The character of a literal escape whose letter `c` has been read."""
        if c in _CHAR_ESC:
            return _CHAR_ESC[c]
        if c == "c":
            return chr(ord(self.take()) ^ 64)
        if c == "0":
            m = re.compile(r"[0-3][0-7]{2}|[0-7]{1,2}").match(self.s, self.i)
            if not m:
                raise self.error("illegal octal escape sequence")
            self.i = m.end()
            return chr(int(m.group(0), 8))
        if c == "x":
            m = re.compile(r"\{([0-9a-fA-F]+)\}|[0-9a-fA-F]{2}").match(self.s, self.i)
            if not m:
                raise self.error("illegal hexadecimal escape sequence")
            self.i = m.end()
            return chr(int(m.group(1) or m.group(0), 16))
        if c == "u":
            m = re.compile(r"[0-9a-fA-F]{4}").match(self.s, self.i)
            if not m:
                raise self.error("illegal Unicode escape sequence")
            self.i = m.end()
            return chr(int(m.group(0), 16))
        if c.isalnum():
            raise self.error(f"illegal/unsupported escape sequence \\{c}")
        return c

    def _posix(self) -> str:
        if self.i < len(self.s) and self.s[self.i] == "{":
            end = self.s.find("}", self.i)
            name, self.i = self.s[self.i + 1:end], end + 1
        else:
            name, self.i = self.s[self.i:self.i + 1], self.i + 1
        for prefix in ("", "Is", "In"):
            if name.startswith(prefix) and name[len(prefix):] in _POSIX:
                return _POSIX[name[len(prefix):]]
        if name in _POSIX:
            return _POSIX[name]
        raise self.error(f"\\p{{{name}}} is not supported")

    def char_class(self) -> Atom:
        neg = ""
        if self.i < len(self.s) and self.s[self.i] == "^":
            neg, self.i = "^", self.i + 1
        parts: list[str] = []
        first = True
        for _ in range(len(self.s) + 1):
            if "x" in self.flags:
                self._skip_comments()
            if self.i >= len(self.s):
                raise self.error("unclosed character class")
            c = self.s[self.i]
            if c == "]" and not first:
                self.i += 1
                break
            if c == "[" or self.s.startswith("&&", self.i):
                raise self.error("nested or intersected character classes are not supported")
            first = False
            self.i += 1
            lo = self._class_char(c)
            if lo is None or len(lo) != 1:  # class text (\\d, \\p{...}, \\Q...\\E), not a character
                parts.append(lo or "")
                continue
            if self.s.startswith("-", self.i) and self.i + 1 < len(self.s) and self.s[self.i + 1] != "]":
                self.i += 1
                hi = self._class_char(self.take())
                if hi is None or len(hi) != 1 or ord(hi) < ord(lo):
                    raise self.error("illegal character range")
                parts.append(f"{_class_escape(lo)}-{_class_escape(hi)}")
            else:
                parts.append(_class_escape(lo))
        return self._atom(f"[{neg}{''.join(parts)}]" if parts or neg else "(?!)", fold=True)

    def _class_char(self, c: str) -> str | None:
        """One member of a class: a single character, or Python class text (escapes like \\d, \\p{...})."""
        if c != "\\":
            return c
        e = self.take()
        if e in "dDwWsS":
            return "\\" + e
        if e in "hHvV":
            if e.isupper():
                raise self.error(f"\\{e} inside a class is not supported")
            return _CLASS_ESC[e]
        if e in "pP":
            if e == "P":
                raise self.error("\\P inside a class is not supported")
            return self._posix()
        if e == "Q":
            end = self.s.find("\\E", self.i)
            text = self.s[self.i:] if end < 0 else self.s[self.i:end]
            self.i = len(self.s) if end < 0 else end + 2
            return "".join(_class_escape(ch) for ch in text) or None
        return self._char_escape(e)

    # -------------------------------------------------------------------------------------------- groups

    def group(self) -> Node | None:
        saved = set(self.flags)
        opener = "("
        if self.s.startswith("?", self.i):
            self.i += 1
            m = re.compile(r"<([A-Za-z][A-Za-z0-9]*)>").match(self.s, self.i)
            if self.s.startswith(":", self.i):
                opener, self.i = "(?:", self.i + 1
            elif m:
                if m.group(1) in self.names:
                    raise self.error(f"named capturing group <{m.group(1)}> is already defined")
                self.names.add(m.group(1))
                self.groups += 1
                opener, self.i = f"(?P<{m.group(1)}>", m.end()
            elif self.s[self.i:self.i + 1] in ("=", "!") or self.s[self.i:self.i + 2] in ("<=", "<!"):
                look = "(?" + (self.s[self.i] if self.s[self.i] != "<" else self.s[self.i:self.i + 2])
                self.i += len(look) - 2
                body = self.alternation()
                self._close(saved)
                return Zero(f"{look}{body.emit()})", True)
            elif self.s.startswith(">", self.i):
                opener, self.i = "(?>", self.i + 1
            else:
                if self._inline_flags():
                    return None  # (?i) alone: in force until the enclosing group closes
                opener = "(?:"
        else:
            self.groups += 1
        body = self.alternation()
        self._close(saved)
        return Group(opener, body)

    def _inline_flags(self) -> bool:
        """Read ``idmsuxU-idmsuxU`` then ``)`` (True) or ``:`` (False, a scoped group follows)."""
        m = re.compile(r"([a-zA-Z]*)(?:-([a-zA-Z]*))?([:)])").match(self.s, self.i)
        if not m or any(f not in _FLAG_LETTERS for f in (m.group(1) or "") + (m.group(2) or "")):
            raise self.error("unknown inline modifier")
        self.flags |= set(m.group(1) or "")
        self.flags -= set(m.group(2) or "")
        self.i = m.end()
        return m.group(3) == ")"

    def _close(self, saved: set[str]) -> None:
        if self.peek() != ")":
            raise self.error("unclosed group")
        self.i += 1
        self.flags = saved


def _class_escape(ch: str) -> str:
    return "\\" + ch if ch in "\\]^-[" else ch


# ------------------------------------------------------------------------------------------------ API

@dataclass(frozen=True)
class Analysis:
    python: str                 # the translated pattern (compile with re.ASCII)
    groups: int                 # capturing groups, as Java counts them
    dynamic: bool               # the outcome may depend on the value whatever the prefix (peeks, backrefs, ...)
    value_prefix: str | None    # pattern for prefixes a match could extend into the value from; None: none
    literals: tuple[str, ...]   # literal runs every match contains (case-sensitive ones only), for a prefilter
    single_line: str = ""       # `python` for texts without line terminators: plain `.`, `$` as `\Z` (faster)


def translate(java: str, single_line: bool = False) -> str:
    """The Python equivalent of a Java pattern (for ``re.compile(..., re.ASCII)``); `single_line`: the same
    for texts that hold none of Java's line terminators (:data:`LINE_END`), where ``.`` need not exclude them."""
    a = analyse(java)
    return a.single_line if single_line else a.python


def analyse(java: str) -> Analysis:
    p = _Parser(java)
    tree = p.parse()
    py = tree.emit()
    try:
        re.compile(py, re.ASCII)
    except re.error as e:
        raise JavaRegexError(f"Java pattern {java!r} has no Python equivalent: {e}") from None
    # Non-nullable and able to match VALUE_CHARS only: a match may lie wholly inside the value.
    dynamic = tree.nullable() or tree.in_values() or \
        _has(tree, lambda n: isinstance(n, Backref) or isinstance(n, Zero) and n.peeks)
    single = _Parser(java, single_line=True).parse().emit()
    return Analysis(py, p.groups, dynamic, None if dynamic else tree.quot(), tuple(_literals(tree)), single)


def _has(node: Node, pred) -> bool:
    if pred(node):
        return True
    kids = node.items if isinstance(node, Seq) else node.branches if isinstance(node, Alt) else \
        [node.body] if isinstance(node, Group | Repeat) else []
    return any(_has(k, pred) for k in kids)


def _literals(node: Node) -> list[str]:
    """Maximal runs of case-sensitive literal characters in the top-level sequence: every match contains them."""
    items = node.items if isinstance(node, Seq) else [node]
    runs, cur = [], ""
    for it in items:
        if isinstance(it, Atom) and it.lit:
            cur += it.lit
            continue
        if cur:
            runs.append(cur)
        cur = ""
    return runs + [cur] if cur else runs
