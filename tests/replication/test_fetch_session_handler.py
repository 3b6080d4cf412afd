"""The follower's fetch session (KIP-227, Kafka's FetchSessionHandler) without servers: full fetch first, then only
what changed, forgotten partitions named, a session error starts over."""

from broker.errors import ErrorCode
from broker.replication.fetch_session_handler import INITIAL_EPOCH, FetchSessionHandler

MAX = 1 << 20


def _wanted(**offsets: int) -> dict:
    """{(topic, partition): fetch state} from t0=5, t1=7 style keywords (topic t, partition from the name)."""
    return {("t", int(k[1:])): (int(k[1:]), 3, v, 0, MAX) for k, v in offsets.items()}


def test_the_first_fetch_is_full_and_asks_for_a_session():
    h = FetchSessionHandler()
    plan = h.plan(_wanted(p0=5, p1=7))
    assert (plan.session_id, plan.epoch, plan.full) == (0, INITIAL_EPOCH, True)
    assert plan.topics == [("t", [(0, 3, 5, 0, MAX), (1, 3, 7, 0, MAX)])] and plan.forgotten == []


def test_then_only_changed_partitions_are_named_with_the_next_epoch():
    h = FetchSessionHandler()
    first = h.plan(_wanted(p0=5, p1=7))
    assert h.on_response(first, ErrorCode.none, 42)
    plan = h.plan(_wanted(p0=6, p1=7))  # p0 got a batch: its fetch offset moved
    assert (plan.session_id, plan.epoch, plan.full) == (42, 1, False)
    assert plan.topics == [("t", [(0, 3, 6, 0, MAX)])]
    assert h.on_response(plan, ErrorCode.none, 42)
    idle = h.plan(_wanted(p0=6, p1=7))
    assert (idle.epoch, idle.topics, idle.forgotten) == (2, [], [])


def test_a_partition_no_longer_followed_is_forgotten_and_a_new_one_named():
    h = FetchSessionHandler()
    h.on_response(h.plan(_wanted(p0=5, p1=7)), ErrorCode.none, 42)
    plan = h.plan(_wanted(p0=5, p2=0))
    assert plan.topics == [("t", [(2, 3, 0, 0, MAX)])] and plan.forgotten == [("t", [1])]


def test_a_new_leader_epoch_names_the_partition_again():
    h = FetchSessionHandler()
    h.on_response(h.plan(_wanted(p0=5)), ErrorCode.none, 42)
    plan = h.plan({("t", 0): (0, 4, 5, 0, MAX)})
    assert plan.topics == [("t", [(0, 4, 5, 0, MAX)])]


def test_a_session_error_starts_over_with_a_full_fetch():
    h = FetchSessionHandler()
    h.on_response(h.plan(_wanted(p0=5, p1=7)), ErrorCode.none, 42)
    plan = h.plan(_wanted(p0=6, p1=7))
    assert not h.on_response(plan, ErrorCode.fetch_session_id_not_found, 0)
    again = h.plan(_wanted(p0=6, p1=7))
    assert (again.session_id, again.epoch, again.full) == (0, INITIAL_EPOCH, True) and len(again.topics[0][1]) == 2
    h.on_response(again, ErrorCode.none, 43)
    stale = h.plan(_wanted(p0=6, p1=7))
    assert not h.on_response(stale, ErrorCode.invalid_fetch_session_epoch, 0)
    assert h.plan(_wanted(p0=6)).full


def test_a_leader_without_room_for_a_session_gets_full_fetches():
    h = FetchSessionHandler()
    assert h.on_response(h.plan(_wanted(p0=5)), ErrorCode.none, 0)  # session id 0: none was created
    plan = h.plan(_wanted(p0=5))
    assert plan.full and plan.topics == [("t", [(0, 3, 5, 0, MAX)])]


def test_an_unanswered_change_is_named_again():
    h = FetchSessionHandler()
    h.on_response(h.plan(_wanted(p0=5)), ErrorCode.none, 42)
    h.plan(_wanted(p0=6))  # sent, but the connection broke before an answer (no on_response)
    assert h.plan(_wanted(p0=6)).topics == [("t", [(0, 3, 6, 0, MAX)])]
