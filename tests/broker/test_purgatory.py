"""The purgatory without servers: a waiter resumes on the loop's next turn after a notify, as Kafka's
DelayedFetch/DelayedProduce complete in the notifying thread, and its timer is the only other way out."""

import asyncio

from broker.purgatory import Attempt, Purgatory


async def _one_turn() -> None:
    """Let every callback already scheduled run once (sleep(0) queues this task behind them)."""
    await asyncio.sleep(0)


async def test_a_notified_waiter_resumes_on_the_next_turn_of_the_loop():
    p = Purgatory()
    waiter = asyncio.create_task(p.wait([("leo", "t", 0)], 30))
    await _one_turn()
    assert p.delayed("Fetch") == 1 and not waiter.done()
    p.notify(("leo", "t", 0))
    await _one_turn()  # asyncio.wait_for needed two turns here: its waiter, then the task
    assert waiter.done() and waiter.result() is True
    assert p.delayed("Fetch") == 0 and p.watched("Fetch") == 0 and len(p) == 0


async def test_a_waiter_times_out_by_its_timer_and_leaves_no_watch_behind():
    p = Purgatory()
    loop = asyncio.get_running_loop()
    start = loop.time()
    assert await p.wait([("hw", "t", 0), ("hw", "t", 1)], 0.02, kind="Produce") is False
    assert loop.time() - start >= 0.015
    assert p.delayed("Produce") == 0 and p.watched("Produce") == 0 and len(p) == 0


async def test_any_key_wakes_and_other_keys_do_not():
    p = Purgatory()
    waiter = asyncio.create_task(p.wait([("hw", "t", 0), ("hw", "t", 1)], 30, kind="Produce"))
    await _one_turn()
    assert p.watched("Produce") == 2
    p.notify(("hw", "other", 0))
    await _one_turn()
    assert not waiter.done()
    p.notify(("hw", "t", 1))
    assert await asyncio.wait_for(waiter, 1) is True
    assert len(p) == 0


async def test_a_cancelled_waiter_cancels_its_timer_and_unwatches():
    p = Purgatory()
    waiter = asyncio.create_task(p.wait([("leo", "t", 0)], 30))
    await _one_turn()
    waiter.cancel()
    await asyncio.gather(waiter, return_exceptions=True)
    assert waiter.cancelled()
    assert p.delayed("Fetch") == 0 and len(p) == 0
    p.notify(("leo", "t", 0))  # nothing left to wake


async def test_a_notify_racing_the_timeout_is_answered_once():
    p = Purgatory()
    waiter = asyncio.create_task(p.wait([("leo", "t", 0)], 0))
    p.notify(("leo", "t", 0))  # not yet watching: the waiter has not run
    assert await waiter is False


async def test_a_high_watermark_move_resumes_the_fetches_before_the_produces():
    """One loop sends the answers in the order the waiters resume: the consumer's record before the producer's
    acknowledgement, whatever order they parked in."""
    p = Purgatory()
    resumed: list[str] = []

    async def park(name: str, kind: str) -> None:
        await p.wait([("hw", "t", 0)], 30, kind=kind)
        resumed.append(name)

    tasks = [asyncio.create_task(park(n, k)) for n, k in
             [("produce-1", "Produce"), ("fetch-1", "Fetch"), ("produce-2", "Produce"), ("fetch-2", "Fetch")]]
    await _one_turn()
    p.notify(("hw", "t", 0))
    await asyncio.gather(*tasks)
    assert resumed == ["fetch-1", "fetch-2", "produce-1", "produce-2"]


async def test_a_waiter_can_learn_every_key_notified_before_it_resumed():
    p = Purgatory()
    woken: list = []
    waiter = asyncio.create_task(p.wait([("leo", "t", 0), ("leo", "t", 1), ("leo", "t", 2)], 30, woken=woken))
    await _one_turn()
    p.notify(("leo", "t", 2))
    p.notify(("leo", "other", 0))
    p.notify(("leo", "t", 0))   # before the waiter ran: still recorded
    assert await waiter is True
    assert woken == [("leo", "t", 2), ("leo", "t", 0)]
    p.notify(("leo", "t", 1))   # after: the waiter is gone from every key
    assert woken == [("leo", "t", 2), ("leo", "t", 0)] and len(p) == 0


async def test_a_completer_answers_inside_notify_and_is_not_asked_again():
    p = Purgatory()
    completed: list = []
    woken: list = []
    waiter = asyncio.create_task(p.wait([("leo", "t", 0), ("leo", "t", 1)], 30, woken=woken,
                                        complete=lambda keys: completed.append(keys) or Attempt.COMPLETED))
    await _one_turn()
    p.notify(("leo", "t", 0))
    assert completed == [[("leo", "t", 0)]]          # in notify itself, before any turn of the loop
    p.notify(("leo", "t", 1))                        # completed already: noted, not completed again
    assert completed == [[("leo", "t", 0)]]
    assert await waiter is True and woken == [("leo", "t", 1)]
    assert p.delayed("Fetch") == 0 and p.watched("Fetch") == 0 and len(p) == 0


async def test_a_completer_that_resumes_its_waiter_tells_it_the_key():
    p = Purgatory()
    woken: list = []
    waiter = asyncio.create_task(p.wait([("leo", "t", 0)], 30, woken=woken, complete=lambda keys: Attempt.RESUME))
    await _one_turn()
    p.notify(("leo", "t", 0))
    assert await waiter is True and woken == [("leo", "t", 0)]


async def test_a_completer_not_satisfied_yet_keeps_its_waiter_watched_until_it_is():
    """Kafka's DelayedFetch short of min_bytes: tried again on the next notify, never resumed in between."""
    p = Purgatory()
    woken: list = []
    tries: list = []

    def complete(keys: list) -> Attempt:
        tries.append(keys)
        return Attempt.COMPLETED if len(tries) == 3 else Attempt.WATCH

    waiter = asyncio.create_task(p.wait([("hw", "t", 0), ("hw", "t", 1)], 30, woken=woken, complete=complete))
    await _one_turn()
    p.notify(("hw", "t", 0))
    await _one_turn()
    assert not waiter.done() and p.watched("Fetch") == 2
    p.notify(("hw", "t", 1))
    await _one_turn()
    assert not waiter.done()
    p.notify(("hw", "t", 0))   # watched again after declining
    assert tries == [[("hw", "t", 0)], [("hw", "t", 1)], [("hw", "t", 0)]]
    assert await waiter is True and woken == []   # completed: told nothing
    assert p.delayed("Fetch") == 0 and p.watched("Fetch") == 0 and len(p) == 0


async def test_a_waiter_kept_watched_still_expires():
    p = Purgatory()
    waiter = asyncio.create_task(p.wait([("hw", "t", 0)], 0.05, complete=lambda keys: Attempt.WATCH))
    await _one_turn()
    p.notify(("hw", "t", 0))
    assert await asyncio.wait_for(waiter, 5) is False and len(p) == 0


async def test_a_produce_woken_with_completed_fetches_answers_in_the_batch_they_scheduled():
    """The completed fetch's answer schedules the send batch; the produce woken by the same notify resumes before
    that batch goes out, so its acknowledgement is in it (behind the fetch's answer)."""
    p = Purgatory()
    loop = asyncio.get_running_loop()
    order: list[str] = []

    async def produce() -> None:
        await p.wait([("hw", "t", 0)], 30, kind="Produce")
        order.append("acknowledgement queued")

    def complete(keys: list) -> Attempt:
        order.append("fetch answer queued")
        loop.call_soon(order.append, "batch sent")   # as SendBatch.send schedules its flush
        return Attempt.COMPLETED

    tasks = [asyncio.create_task(produce()), asyncio.create_task(p.wait([("hw", "t", 0)], 30, complete=complete))]
    await _one_turn()
    p.notify(("hw", "t", 0))
    await asyncio.gather(*tasks)
    assert order == ["fetch answer queued", "acknowledgement queued", "batch sent"]


async def test_notifications_held_are_delivered_once_per_waiter_with_every_key():
    p = Purgatory()
    completed: list = []
    waiter = asyncio.create_task(p.wait([("leo", "t", 0), ("leo", "t", 1)], 30,
                                        complete=lambda keys: completed.append(keys) or Attempt.COMPLETED))
    await _one_turn()
    with p.held():
        p.notify(("leo", "t", 0))
        with p.held():   # nested: delivered when the outermost block ends
            p.notify(("leo", "t", 1))
            p.notify(("leo", "t", 0))
        assert completed == []
    assert completed == [[("leo", "t", 0), ("leo", "t", 1)]]
    assert await waiter is True


async def test_notifications_held_are_delivered_when_the_block_raises():
    p = Purgatory()
    waiter = asyncio.create_task(p.wait([("hw", "t", 0)], 30, kind="Produce"))
    await _one_turn()
    try:
        with p.held():
            p.notify(("hw", "t", 0))
            raise RuntimeError("an append failed")
    except RuntimeError:
        pass
    assert await waiter is True
