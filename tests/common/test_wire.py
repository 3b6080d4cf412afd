import pytest

from common.wire import (
    Reader,
    WireError,
    Writer,
    array_len,
    nullable_string,
    read_uvarint,
    read_varint,
    string,
    unzigzag,
    uvarint,
    write_varint,
    zigzag,
)


@pytest.mark.parametrize(("n", "raw"), [(0, b"\x00"), (1, b"\x01"), (127, b"\x7f"), (128, b"\x80\x01"),
                                        (300, b"\xac\x02"), (2**31 - 1, b"\xff\xff\xff\xff\x07")])
def test_uvarint_known_bytes_and_roundtrip(n, raw):
    assert uvarint(n) == raw
    assert read_uvarint(b"x" + raw + b"y", 1, len(raw) + 2) == (n, len(raw) + 1)


def test_read_uvarint_bounds():
    with pytest.raises(WireError, match="runs past the frame at 1"):
        read_uvarint(b"\x80", 0, 1)
    with pytest.raises(WireError, match="longer than 5 bytes"):
        read_uvarint(b"\x80" * 6 + b"\x01", 0, 7)
    assert read_uvarint(b"\x80" * 6 + b"\x01", 0, 7, limit=10) == (1 << 42, 7)


@pytest.mark.parametrize(("n", "z"), [(0, 0), (-1, 1), (1, 2), (-2, 3), (2**63 - 1, 2**64 - 2), (-(2**63), 2**64 - 1)])
def test_zigzag_and_signed_varints(n, z):
    assert zigzag(n) == z and unzigzag(z) == n
    out = bytearray()
    write_varint(out, n)
    assert read_varint(bytes(out), 0) == (n, len(out))


def test_signed_varint_errors():
    with pytest.raises(WireError, match="too long"):
        read_varint(b"\xff" * 11, 0)
    with pytest.raises(IndexError):
        read_varint(b"\x80", 0)


def test_field_encoders_classic_and_compact():
    assert string("ab", False) == b"\x00\x02ab" and string("ab", True) == b"\x03ab"
    assert nullable_string(None, False) == b"\xff\xff" and nullable_string(None, True) == b"\x00"
    assert array_len(None, False) == b"\xff\xff\xff\xff" and array_len(None, True) == b"\x00"
    assert array_len(2, False) == b"\x00\x00\x00\x02" and array_len(2, True) == b"\x03"


@pytest.mark.parametrize("flexible", [False, True])
def test_writer_reader_roundtrip(flexible):
    w = Writer(flexible)
    w.int16(-2)
    w.int32(70000)
    w.int64(-(2**40))
    w.string("héllo")
    w.string(None)
    w.bytes_(b"\x00\x01")
    w.array_len(3)
    w.tags()
    r = Reader(w.getvalue(), flexible=flexible)
    assert (r.int16(), r.int32(), r.int64()) == (-2, 70000, -(2**40))
    assert (r.string(), r.nullable_string(), r.bytes_(), r.array_len()) == ("héllo", None, b"\x00\x01", 3)
    r.skip_tags()
    r.done()


class Custom(ValueError):
    pass


def test_reader_raises_the_callers_error():
    r = Reader(b"\x00\x05ab", error=Custom)
    with pytest.raises(Custom, match="truncated at byte 2"):
        r.string()
    with pytest.raises(Custom, match="null in a non-nullable string"):
        Reader(b"\xff\xff", error=Custom).string()
    with pytest.raises(Custom, match="runs past"):
        Reader(b"\x80", flexible=True, error=Custom).uvarint()
    r = Reader(b"\x00\x00\x00", error=Custom)
    r.int16()
    with pytest.raises(Custom, match="1 trailing bytes"):
        r.done()


def test_reader_skips_unknown_tags_and_reads_bad_utf8_leniently():
    r = Reader(b"\x02" + b"\x01\x02zz" + b"\x05\x00" + b"\x03\xffa", flexible=True)
    r.skip_tags()
    assert r.nullable_string("replace") == "\ufffda"
    r.done()
    assert Reader(b"\xff\xff\x00\x02\xffb").lenient_string() == ""
    r = Reader(b"\x00\x02\xffb")
    assert r.lenient_string() == "\ufffdb"


def test_recv_frame_reads_a_frame_sent_in_pieces_and_names_a_close_midway():
    import socket
    import struct

    import pytest

    from common.wire import recv_exact, recv_frame

    a, b = socket.socketpair()
    with a, b:
        frame = struct.pack(">i", 5) + b"hello"
        for piece in (frame[:2], frame[2:6], frame[6:]):
            b.sendall(piece)
        assert recv_frame(a) == b"hello"
        b.sendall(b"abc")
        b.shutdown(socket.SHUT_WR)
        with pytest.raises(ConnectionError, match="after 3 of 4 bytes"):
            recv_exact(a, 4)
