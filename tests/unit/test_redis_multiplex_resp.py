"""The RESP of store/redis_multiplex.py: commands packed as redis-py sends them, replies parsed alike however the
bytes split."""

from __future__ import annotations

import pytest
from redis.connection import PythonRespSerializer
from redis.exceptions import AuthenticationError, BusyLoadingError, NoScriptError, ReadOnlyError, ResponseError

from flask_mcp_gevent.store.redis_multiplex import HiredisParser, pack, reply_or_raise

# One reply of each kind, and what the parser makes of it.
REPLIES = [
    (b"+OK\r\n", b"OK"),
    (b"+\r\n", b""),
    (b":42\r\n", 42),
    (b":-7\r\n", -7),
    (b"$5\r\nhello\r\n", b"hello"),
    (b"$0\r\n\r\n", b""),
    (b"$4\r\na\r\nb\r\n", b"a\r\nb"),  # a bulk string may hold CRLF: its length says where it ends
    (b"$-1\r\n", None),
    (b"*-1\r\n", None),
    (b"*0\r\n", []),
    (b"*3\r\n$1\r\na\r\n:1\r\n+b\r\n", [b"a", 1, b"b"]),
]
NESTED = (b"*4\r\n$-1\r\n*2\r\n$1\r\nx\r\n*-1\r\n*0\r\n*1\r\n*1\r\n$-1\r\n",
          [None, [b"x", None], [], [[None]]])


@pytest.fixture
def make_parser():
    """The reply parser."""
    return HiredisParser


def holds_nothing(parser) -> bool:
    """No bytes wait in the parser for the rest of a reply."""
    return not parser.reader.has_data()


def test_pack_writes_text_as_utf8_bytes_as_they_are_and_integers_as_digits():
    assert pack(("SET", "clé", b"\x00\r\n", 0, -12)) == (
        b"*5\r\n$3\r\nSET\r\n$4\r\ncl\xc3\xa9\r\n$3\r\n\x00\r\n\r\n$1\r\n0\r\n$3\r\n-12\r\n")
    assert pack(("GET", "")) == b"*2\r\n$3\r\nGET\r\n$0\r\n\r\n"
    assert pack((b"ab", memoryview(b"cd"))) == b"*2\r\n$2\r\nab\r\n$2\r\ncd\r\n"


@pytest.mark.parametrize("value", [True, False, None, object()])
def test_pack_refuses_bools_none_and_other_objects(value):
    with pytest.raises(TypeError):
        pack(("SET", "k", value))


@pytest.mark.parametrize(("data", "expected"), REPLIES + [NESTED], ids=lambda value: repr(value)[:30])
def test_each_reply_kind_parses_to_what_redis_py_gives_undecoded(data, expected, make_parser):
    parser = make_parser()
    assert parser.feed(data) == [expected]
    assert holds_nothing(parser)


def test_nested_arrays_keep_their_nil_members_in_place(make_parser):
    assert make_parser().feed(NESTED[0]) == [NESTED[1]]


def test_several_replies_in_one_feed_come_back_in_order(make_parser):
    data = b"".join(raw for raw, _ in REPLIES) + NESTED[0]
    assert make_parser().feed(data) == [parsed for _, parsed in REPLIES] + [NESTED[1]]


def test_a_reply_stream_split_at_any_byte_parses_the_same(make_parser):
    data = b"".join(raw for raw, _ in REPLIES) + NESTED[0] + b"-ERR boom\r\n"
    whole = make_parser().feed(data)
    for cut in range(len(data) + 1):
        parser = make_parser()
        replies = parser.feed(data[:cut]) + parser.feed(data[cut:])
        assert [r if not isinstance(r, Exception) else (type(r), str(r)) for r in replies] == \
               [r if not isinstance(r, Exception) else (type(r), str(r)) for r in whole], cut
        assert holds_nothing(parser), cut


def test_a_reply_fed_one_byte_at_a_time_completes_on_its_last_byte(make_parser):
    parser = make_parser()
    data = b"*2\r\n$3\r\nfoo\r\n:5\r\n"
    for byte in range(len(data) - 1):
        assert parser.feed(data[byte:byte + 1]) == []
    assert parser.feed(data[-1:]) == [[b"foo", 5]]


def test_a_bulk_string_missing_only_its_final_crlf_waits(make_parser):
    parser = make_parser()
    assert parser.feed(b"$3\r\nabc") == []
    assert parser.feed(b"\r") == []
    assert parser.feed(b"\n+next\r\n") == [b"abc", b"next"]


@pytest.mark.parametrize(("line", "kind"), [
    (b"-NOSCRIPT No matching script. Please use EVAL.\r\n", NoScriptError),
    (b"-READONLY You can't write against a read only replica.\r\n", ReadOnlyError),
    (b"-ERR value is not an integer or out of range\r\n", ResponseError),
    (b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", ResponseError),
    (b"-LOADING Redis is loading the dataset in memory\r\n", BusyLoadingError),
    (b"-NOAUTH Authentication required.\r\n", AuthenticationError),
])
def test_an_error_reply_is_returned_as_the_exception_redis_py_would_raise(line, kind, make_parser):
    (reply,) = make_parser().feed(line)
    assert type(reply) is kind
    # The text after the code is kept, as redis-py keeps it.
    assert line[1:-2].decode().split(" ", 1)[1] in str(reply)


@pytest.mark.parametrize("line", [b"-LOADING Redis is loading the dataset in memory\r\n",
                                  b"-NOAUTH Authentication required.\r\n", b"-ERR nope\r\n"])
def test_every_error_reply_is_raised_even_those_redis_py_counts_as_connection_errors(line, make_parser):
    (reply,) = make_parser().feed(line)
    with pytest.raises(type(reply)):
        reply_or_raise(reply)


def test_an_error_inside_an_array_is_an_exception_member_not_a_failure(make_parser):
    (reply,) = make_parser().feed(b"*3\r\n:1\r\n-ERR nope\r\n+OK\r\n")
    assert reply[0] == 1 and reply[2] == b"OK"
    assert type(reply[1]) is ResponseError and "nope" in str(reply[1])


@pytest.mark.parametrize("data", [b"?what\r\n", b"hello\r\n"])
def test_an_unknown_type_byte_raises_value_error(data, make_parser):
    with pytest.raises(ValueError):
        make_parser().feed(data)


def test_an_unknown_type_byte_after_good_replies_still_raises(make_parser):
    with pytest.raises(ValueError):
        make_parser().feed(b"+OK\r\n!oops\r\n")


def test_arguments_are_packed_as_the_same_bytes_as_redis_py_sends():
    serializer = PythonRespSerializer(buffer_cutoff=1 << 30, encode=lambda value: value if isinstance(
        value, bytes) else str(value).encode())
    args = ("EVALSHA", "mcp:session:{ab}", "mcp:session:{ab}:calls", 7, 15000, "", "streamable", b"\x00raw", "é")
    expected = b"".join(serializer.pack(*args))
    assert pack(args) == expected
