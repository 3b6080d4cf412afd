"""Metadata for all topics from kept encoded topic entries (issue 20): the same frame as the dict-and-kio path,
rebuilt when a topic changes, not rebuilt when nothing did."""

from __future__ import annotations

import pytest

from broker.protocol.api import RequestContext
from broker.protocol.codec import build, encode_response, encode_with_kio, request_class
from broker.protocol.handlers import metadata as handler
from tests.broker.harness import Harness


def _frames(h: Harness, version: int) -> tuple[bytes, bytes]:
    """(the frame the broker sends, the frame kio writes for the same answer built as dicts)."""
    req = build(request_class(3, version), {"topics": None, "allow_auto_topic_creation": False})
    ctx = RequestContext(h.broker, 3, version, 9, "c", "127.0.0.1")
    body = h.loop.run_until_complete(handler.handle_metadata(ctx, req))
    live = {b.node_id for b in h.broker.metadata.brokers()}
    topics = h.broker.metadata.topics()
    as_dicts = {**body, "topics": [handler._topic_entry(ctx, info, live, {}) for info in topics.values()]}
    return bytes(encode_response(3, version, 9, body)), encode_with_kio(3, version, 9, as_dicts)  # type: ignore[arg-type]


@pytest.mark.parametrize("version", [0, 1, 5, 7, 9, 10, 12])
def test_the_answer_is_the_one_kio_writes_before_and_after_a_change(tmp_path, version):
    with Harness(tmp_path) as h:
        h.broker.create_topic("a", 3, 1)
        h.broker.create_topic("b", 2, 1)
        h.settle()
        ours, kio = _frames(h, version)
        assert ours == kio
        assert _frames(h, version) == (ours, kio)  # from the kept entries
        h.broker.metadata.add_partitions("a", 5)
        h.settle()
        grown, kio_grown = _frames(h, version)
        assert grown == kio_grown and grown != ours


def test_unchanged_topics_are_not_built_again(tmp_path, monkeypatch):
    with Harness(tmp_path) as h:
        for i in range(4):
            h.broker.create_topic(f"t{i}", 10, 1)
        h.settle()
        _frames(h, 12)
        built: list[str] = []
        real = handler._topic_entry

        def counting(ctx, info, live, offline):
            built.append(info.name)
            return real(ctx, info, live, offline)
        monkeypatch.setattr(handler, "_topic_entry", counting)
        req = build(request_class(3, 12), {"topics": None, "allow_auto_topic_creation": False})
        ctx = RequestContext(h.broker, 3, 12, 9, "c", "127.0.0.1")
        h.loop.run_until_complete(handler.handle_metadata(ctx, req))
        assert built == []
        h.broker.metadata.add_partitions("t2", 12)
        h.settle()
        h.loop.run_until_complete(handler.handle_metadata(ctx, req))
        assert built == ["t2"]
