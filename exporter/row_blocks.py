"""The fused path of a scrape for gauge families (per-partition gauges: ``kafka.log:type=Log``,
``kafka.cluster:type=Partition``; issue 20): a family's rows are named once, then taken as a block.

The generic path (:meth:`exporter.collector.RegistryCollector.matched`, :meth:`JmxEngine.families`,
:func:`exporter.collector.families_text`) costs a few µs of Python per series: a plan lookup per row (hashing its
tags), grouping each sample by name, a float conversion, a line start lookup. With 10,000 partitions that is ten
gauge families of 10,000 rows each. A :class:`Block` keeps what the rule file made of one gauge family's rows
(their samples in row order, and each exposition line start) while the rows' tags are equal to the last scrape's
(one C-level tuple comparison); the scrape then only reads the values and joins the lines.

A block is made only when the outcome is what the generic path would write for any numeric value: every row's
match is settled (no rule reads the value), no rule sets ``value`` or ``valueFactor``, all the rows' samples
have one name and one type. Anything else (a ``rules:`` file with value-dependent rules, a bool or non-numeric
value, a negative counter, a family shared with other samples) goes through the generic path, row by row.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass, field

from common.steps import run_steps
from exporter.jmx_engine import _TYPES, Family, JmxEngine, Sample

_NUMBERS = frozenset((int, float))


@dataclass(slots=True, eq=False)
class Block:
    """One gauge family's rows as named samples, valid while its rows have these `tags`."""

    tags: tuple                   # every row's tags, in row order
    samples: list[Sample]         # the exported rows' samples, in row order
    kept: list[int] | None        # indices of the exported rows; None: every row
    unique: bool                  # no two samples with the same labels
    keys: frozenset = field(default_factory=frozenset)  # the samples' label keys (families of several blocks)
    heads: dict = field(default_factory=dict)  # exposition line starts per (metric name, unique), in order

    @property
    def name(self) -> str:
        return self.samples[0].name

    @property
    def type(self) -> str:
        return self.samples[0].type

    def values(self, row_values: Sequence) -> Sequence | None:
        """This scrape's values of the exported rows, or None when the generic path must take them (a value that
        is not an int or a float, or a negative counter: the generic path converts or drops those)."""
        if not set(map(type, row_values)) <= _NUMBERS:
            return None
        vals = row_values if self.kept is None else [row_values[i] for i in self.kept]
        if self.type == "COUNTER" and any(map(0.0.__gt__, vals)):
            return None
        return vals


def make_block(tags: tuple, samples: list[Sample | None]) -> Block | None:
    """A block of rows whose samples (None: row not exported; all settled) allow one; None otherwise."""
    kept = [i for i, s in enumerate(samples) if s is not None]
    if not kept:
        return None
    named = [s for s in samples if s is not None]
    first = named[0]
    for s in named:
        if s.name != first.name or s.type != first.type or s.value is not None or s.factor != 1.0:
            return None
    keys = frozenset(s.key for s in named)
    return Block(tags, named, None if len(kept) == len(samples) else kept, len(keys) == len(named), keys)


@dataclass
class BlockFamily(Family):
    """A family made only of blocks; `points` stays empty, the values are in `blocks`."""

    blocks: list[tuple[Block, list | tuple]] = field(default_factory=list)


Entry = tuple  # (Sample, value) of the generic path, or (Block, values)


def families(entries: list[Entry]) -> list[Family]:
    """:meth:`JmxEngine.families` of entries some of which are blocks: a family made of blocks alone is a
    :class:`BlockFamily`; one that mixes blocks with other samples is expanded and takes the generic path."""
    return run_steps(families_steps(entries))


def families_steps(entries: list[Entry]) -> Generator[None, None, list[Family]]:
    """`families`, yielding after each family that takes the generic path (a render's first read of 10,000
    partitions has no blocks yet: each per-partition family is then 10,000 points, ~30 ms)."""
    by_name: dict[str, list[Entry]] = {}
    for e in entries:
        name = e[0].name
        got = by_name.get(name)
        if got is None:
            by_name[name] = [e]
        else:
            got.append(e)
    out: list[Family] = []
    for name in sorted(by_name):
        ents = by_name[name]
        if all(e[0].__class__ is Block for e in ents):
            out.append(_block_family(name, ents))
            continue
        fam = JmxEngine.family(name, expand(ents))
        if fam is not None:
            out.append(fam)
        yield
    return out


def expand(entries: list[Entry]) -> list[tuple[Sample, object]]:
    """The (sample, value) points of entries, blocks row by row."""
    out: list[tuple[Sample, object]] = []
    for e in entries:
        if e[0].__class__ is Block:
            out.extend(zip(e[0].samples, e[1], strict=True))
        else:
            out.append(e)
    return out


def _block_family(name: str, ents: list[Entry]) -> BlockFamily:
    blocks: list[Block] = [e[0] for e in ents]
    first = blocks[0]
    typ = first.type
    if any(b.type != typ for b in blocks):
        typ = "UNKNOWN"
    if len(blocks) == 1:
        unique = first.unique or len(first.samples) == 1
    else:
        total = sum(len(b.samples) for b in blocks)
        unique = all(b.unique for b in blocks) and len(frozenset().union(*(b.keys for b in blocks))) == total
    return BlockFamily(name, _TYPES.get(typ, "unknown"), first.samples[0].help, [], unique, ents)
