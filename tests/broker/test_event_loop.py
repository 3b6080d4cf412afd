"""broker.event_loop: the selector tells whether its last select() reported a ready socket."""

import selectors
import socket

from broker.event_loop import IdleTimingSelector


def test_saw_io_follows_the_last_select_with_and_without_idle_listeners():
    a, b = socket.socketpair()
    sel = IdleTimingSelector()
    try:
        sel.register(a, selectors.EVENT_READ)
        for listening in (False, True):
            if listening:
                sel.add_listener(lambda _ns: None)
            sel.select(0)
            assert sel.saw_io is False
            b.send(b"x")
            sel.select(0)
            assert sel.saw_io is True
            a.recv(1)
            sel.select(0)
            assert sel.saw_io is False
    finally:
        sel.close()
        a.close()
        b.close()
