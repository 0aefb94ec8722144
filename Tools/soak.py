#!/usr/bin/env python3
"""A bounded soak of RingIO's servers: connection churn, every byte verified, no leaks.

Starts the release echo-server and http-server (the Benchmarks package's) itself, each with
--stats, serving with completion handlers on the rings and with async/await (--targets adds
handlers on a DispatchQueue per connection), and churns connections against each for its
share of --duration:

  echo   random message sizes (1 byte to 1 MiB), one at a time or pipelined, sent in random
         pieces; the echo is compared byte for byte with the seeded pattern that was sent, and
         the server must close after the client's EOF;
  http   keep-alive connections with pipelined requests (1 to 16 deep): GET and HEAD of files
         of random sizes under a generated --root (deterministic content), GET /, POST /echo
         with Content-Length and chunked bodies, 404s; every status, length and body byte is
         checked, and a `Connection: close` request must be answered and then closed;
  both   slow readers (a small SO_RCVBUF, small reads with pauses) and abrupt resets
         (SO_LINGER 0) at random points: what a reset connection received before the reset
         must be a correct prefix; every other connection must verify completely.

After a warm-up (the same churn, its first half with twice the connections, so that what the
server keeps for reuse reaches its high-water mark first), once every client is gone and the server reports itself
quiet, it takes the server's baseline: its descriptors (/proc/PID/fd) and resident memory
(VmRSS; the server returns its allocator's free pages, malloc_trim, just before it reports its
counters, so that this counts memory in use rather than the allocator's high-water mark).
After the soak proper, quiet again, the descriptors must be back at the baseline,
the resident memory within --rss-tolerance (5 %) of it — or, when it is not, no further
growth of that much in a second soak of the same length (a one-time step to a new high-water
mark is reported, not failed; a leak grows again) — and the server's counters (printed
on SIGUSR1 with --stats) balanced: connections accepted == closed, none open, every read and
write started has had its final call. Then SIGTERM, and the server must exit 0.

Seeded: the seed is printed, and --seed reproduces every choice (timing aside). Exits 1 with
the reasons on any failure. Python 3.11 standard library only; Linux (it reads /proc).

  Tools/soak.py                          # CI: 28 s of churn in all, under 60 s
  Tools/soak.py --duration 180 --seed 7  # longer, reproducible
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

# The servers and ways of serving: (executable, options). DEFAULT_TARGETS are soaked unless
# --targets says otherwise.
TARGETS = {
    "echo-ring": ("echo-server", ["--api", "handlers", "--queue", "ring"]),
    "echo-dispatch": ("echo-server", ["--api", "handlers", "--queue", "dispatch"]),
    "echo-async": ("echo-server", ["--api", "async"]),
    "http-ring": ("http-server", ["--api", "handlers", "--queue", "ring"]),
    "http-dispatch": ("http-server", ["--api", "handlers", "--queue", "dispatch"]),
    "http-async": ("http-server", ["--api", "async"]),
}

DEFAULT_TARGETS = ["echo-ring", "echo-async", "http-ring", "http-async"]

PATTERN_SIZE = 4 << 20  # the seeded bytes every echo message and POST body is cut from
CONNECTION_TIMEOUT = 30.0  # one connection's whole life; longer is a hang
QUIET_TIMEOUT = 15.0  # how long the server may take to report itself quiet


class Failure(Exception):
    """A verification failure on one connection."""


@dataclass
class Totals:
    connections: int = 0
    completed: int = 0
    slow: int = 0
    reset: int = 0
    messages: int = 0
    requests: int = 0
    bytes_sent: int = 0
    bytes_verified: int = 0
    failures: list[str] = field(default_factory=list)

    def add(self, other: Totals) -> None:
        for name in ("connections", "completed", "slow", "reset", "messages", "requests", "bytes_sent", "bytes_verified"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.failures += other.failures

    def summary(self) -> str:
        return (
            f"{self.connections} connections ({self.completed} verified in full, {self.slow} of them slow "
            f"readers; {self.reset} reset by the client), {self.messages} echo messages, "
            f"{self.requests} HTTP requests, {mib(self.bytes_sent)} sent, {mib(self.bytes_verified)} verified"
        )


def mib(count: int) -> str:
    return f"{count / (1 << 20):.1f} MiB"


def log(message: str) -> None:
    print(f"soak: {message}", flush=True)


# MARK: - Client sockets


class Conn:
    """A non-blocking client socket with a receive buffer, for one connection's coroutines."""

    def __init__(self, sock: socket.socket, chunk: int, pause: float) -> None:
        self.sock = sock
        self.loop = asyncio.get_running_loop()
        self.buf = bytearray()
        self.eof = False
        self.chunk = chunk  # the most bytes one receive asks for
        self.pause = pause  # seconds slept after each receive (a slow reader)
        self.received = 0
        self.sent = 0
        self.reads = 0

    @staticmethod
    async def open(port: int, rcvbuf: int | None = None, chunk: int = 256 << 10, pause: float = 0.0) -> Conn:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        if rcvbuf is not None:
            # Before connecting, so that the window the server sees is small from the start.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            # And an Ethernet-sized segment: with loopback's 64 KiB one, a window this small
            # never reaches a segment, and the sender waits for its persist timer (which backs
            # off to minutes) rather than for the reader — a stall of TCP's, not the server's.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 1460)
        try:
            await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
        except BaseException:
            sock.close()
            raise
        return Conn(sock, chunk, pause)

    async def send(self, data: bytes | memoryview) -> None:
        await self.loop.sock_sendall(self.sock, data)
        self.sent += len(data)

    async def fill(self) -> bool:
        """Receives once into the buffer; False at EOF."""
        if self.eof:
            return False
        data = await self.loop.sock_recv(self.sock, self.chunk)
        self.reads += 1
        if self.pause and self.reads % 8 == 0:
            await asyncio.sleep(self.pause * 8)  # a pause every 8 reads: fewer timers
        if not data:
            self.eof = True
            return False
        self.received += len(data)
        self.buf += data
        return True

    async def read_exactly(self, count: int, what: str) -> bytes:
        while len(self.buf) < count:
            if not await self.fill():
                raise Failure(f"EOF after {len(self.buf)} of {count} bytes of {what}")
        data = bytes(self.buf[:count])
        del self.buf[:count]
        return data

    async def read_until(self, separator: bytes, limit: int, what: str) -> bytes:
        start = 0
        while True:
            end = self.buf.find(separator, start)
            if end >= 0:
                data = bytes(self.buf[: end + len(separator)])
                del self.buf[: end + len(separator)]
                return data
            if len(self.buf) > limit:
                raise Failure(f"no end of {what} in {len(self.buf)} bytes: {bytes(self.buf[:120])!r}")
            start = max(0, len(self.buf) - len(separator) + 1)
            if not await self.fill():
                raise Failure(f"EOF in {what} after {len(self.buf)} bytes: {bytes(self.buf[:120])!r}")

    async def expect_eof(self, what: str) -> None:
        if self.buf or await self.fill():
            raise Failure(f"{len(self.buf)} unexpected bytes after {what}: {bytes(self.buf[:80])!r}")

    def close(self) -> None:
        self.sock.close()

    def reset(self) -> None:
        """Closes abruptly: SO_LINGER 0 makes the close send RST and drop what is queued."""
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        self.sock.close()


def socket_queues(conn: Conn) -> str:
    """Both ends of `conn` in /proc/net/tcp: bytes queued to send and to read at each end, to
    tell a server that stopped sending from a client that stopped reading."""
    try:
        port = conn.sock.getsockname()[1]
        with open("/proc/net/tcp") as table:
            rows = [line.split() for line in table.readlines()[1:]]
    except OSError as error:
        return f"(no socket state: {error})"
    ends = []
    for row in rows:
        local, remote = int(row[1].split(":")[1], 16), int(row[2].split(":")[1], 16)
        if port in (local, remote):
            tx, rx = (int(part, 16) for part in row[4].split(":"))
            end = "client" if local == port else "server"
            ends.append(f"{end}: {tx} bytes unsent or unacknowledged, {rx} unread, state {int(row[3], 16):#x}")
    return "; ".join(ends) or "(the connection is gone from /proc/net/tcp)"


def pieces(rng: random.Random, data: bytes) -> list[memoryview]:
    """`data` cut into 1 to 4 random pieces, each sent with its own send."""
    view = memoryview(data)
    if len(data) < 2 or rng.random() < 0.5:
        return [view]
    cuts = sorted(rng.randrange(1, len(data)) for _ in range(rng.randint(1, 3)))
    bounds = [0] + cuts + [len(data)]
    return [view[a:b] for a, b in zip(bounds, bounds[1:]) if b > a]


def random_size(rng: random.Random, big: bool = False) -> int:
    """Mostly small, sometimes large: 1 B–512 B, –16 KiB, –256 KiB, –1 MiB."""
    roll = rng.random()
    if big or roll < 0.05:
        return rng.randint(256 << 10, 1 << 20)
    if roll < 0.50:
        return rng.randint(1, 512)
    if roll < 0.80:
        return rng.randint(513, 16 << 10)
    return rng.randint((16 << 10) + 1, 256 << 10)


async def run_both(writer, reader, reader_ends: bool = False) -> None:
    """Runs a connection's writer and reader together; the first failure cancels the other.
    With `reader_ends`, the reader's return ends the writer too (a reset is due)."""
    tasks = [asyncio.ensure_future(writer), asyncio.ensure_future(reader)]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            task.result()  # raises the failure
        if reader_ends and tasks[1].done():
            return
        for task in tasks:
            await task
    finally:
        for task in tasks:
            if not task.done():
                task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


# MARK: - Echo


class EchoClient:
    def __init__(self, port: int, pattern: bytes) -> None:
        self.port = port
        self.pattern = pattern

    async def connection(self, rng: random.Random, totals: Totals, info: dict) -> None:
        roll = rng.random()
        kind = "reset" if roll < 0.2 else "slow" if roll < 0.3 else "normal"
        if kind == "slow":
            # At most 256 KiB in all: read 2 to 4 KiB at a time, at most about 128 reads.
            sizes = [rng.randint(1, 64 << 10) for _ in range(rng.randint(1, 4))]
            conn = await Conn.open(self.port, rcvbuf=rng.choice([2048, 4096, 8192]),
                                   chunk=rng.choice([2048, 4096]), pause=rng.choice([0.0005, 0.001, 0.002]))
        else:
            sizes = [random_size(rng) for _ in range(rng.randint(1, 20))]
            conn = await Conn.open(self.port)
        offsets = [rng.randrange(0, len(self.pattern) - size + 1) for size in sizes]
        messages = [self.pattern[o : o + s] for o, s in zip(offsets, sizes)]
        expected = b"".join(messages)
        pipelined = kind == "slow" or rng.random() < 0.5
        # Reset: after this many bytes are sent (the rest is not), or this many received.
        reset_after_sent = rng.randrange(0, len(expected) + 1) if kind == "reset" and rng.random() < 0.5 else None
        reset_after_received = (
            rng.randrange(0, len(expected) + 1) if kind == "reset" and reset_after_sent is None else None
        )
        half_close = rng.random() < 0.5
        pieces_of = [pieces(rng, message) for message in messages]
        totals.connections += 1
        info["conn"] = conn
        info["what"] = (f"echo {kind} connection, {len(messages)} messages ({len(expected)} bytes, "
                        f"{'pipelined' if pipelined else 'one at a time'}, half-close {half_close}, "
                        f"reset after {reset_after_sent} sent / {reset_after_received} received)")
        position = 0  # bytes of the echo verified so far
        boundary = asyncio.Event()  # ping-pong: set when the echo reaches the message's end
        target = 0
        stop_sending = asyncio.Event()

        async def writer() -> None:
            nonlocal target
            sent = 0
            for message, parts in zip(messages, pieces_of):
                if not pipelined:
                    target = sent + len(message)
                    boundary.clear()
                for part in parts:
                    if reset_after_sent is not None and sent + len(part) > reset_after_sent:
                        await conn.send(part[: reset_after_sent - sent])
                        stop_sending.set()
                        return
                    await conn.send(part)
                    sent += len(part)
                totals.messages += 1
                if not pipelined and reset_after_sent is None:
                    await boundary.wait()
            if half_close and reset_after_sent is None:
                conn.sock.shutdown(socket.SHUT_WR)

        async def reader() -> None:
            nonlocal position
            limit = len(expected) if reset_after_received is None else reset_after_received
            while position < limit:
                if reset_after_sent is not None and stop_sending.is_set() and position >= conn.sent:
                    return  # everything sent was echoed: reset now
                if not await conn.fill():
                    raise Failure(f"EOF after {position} of {len(expected)} echoed bytes")
                data = bytes(conn.buf)
                conn.buf.clear()
                wanted = expected[position : position + len(data)]
                if data != wanted:
                    bad = next((i for i, (a, b) in enumerate(zip(data, wanted)) if a != b), len(wanted))
                    raise Failure(f"echo differs at byte {position + bad} of {len(expected)} "
                                  f"({len(data)} bytes received there)")
                position += len(data)
                totals.bytes_verified += len(data)
                if not pipelined and position >= target:
                    boundary.set()
            if kind != "reset" and half_close:
                await conn.expect_eof("the whole echo (the server must close after the client's EOF)")

        try:
            if kind == "reset":
                # The reset ends the connection at the chosen point; until then, every byte counts.
                if reset_after_sent is not None:
                    # Read the echo meanwhile (a client that does not read can stall a server
                    # that stops reading while its writes wait), then reset, perhaps a moment
                    # later, with echoed bytes still on their way.
                    read_task = asyncio.ensure_future(reader())
                    try:
                        await writer()
                        await asyncio.sleep(rng.choice([0, 0.001, 0.005]))
                    finally:
                        read_task.cancel()
                        (outcome,) = await asyncio.gather(read_task, return_exceptions=True)
                    if isinstance(outcome, Failure):
                        raise outcome
                else:
                    await run_both(writer(), reader(), reader_ends=True)
                totals.reset += 1
                conn.reset()
                return
            await run_both(writer(), reader())
            totals.completed += 1
            if kind == "slow":
                totals.slow += 1
        except Failure as failure:
            raise Failure(f"{info['what']}: {failure}") from None
        finally:
            totals.bytes_sent += conn.sent
            conn.close()


# MARK: - HTTP


@dataclass
class Expected:
    """What one request must be answered with."""

    method: str
    path: str
    status: int
    body: bytes | None  # None: check only the length (404 pages)
    length: int  # Content-Length
    close: bool  # Connection: close asked (the server must close after the response)


class HTTPClient:
    def __init__(self, port: int, pattern: bytes, files: dict[str, bytes]) -> None:
        self.port = port
        self.pattern = pattern
        self.files = files
        self.names = sorted(files)
        self.big = [name for name in self.names if 64 << 10 <= len(files[name]) <= 256 << 10]

    def request(self, rng: random.Random, close: bool, big_files: bool = False) -> tuple[bytes, Expected]:
        extra = b"Connection: close\r\n" if close else b""
        roll = rng.random()
        if big_files or roll < 0.45:
            name = rng.choice(self.big if big_files else self.names)
            body = self.files[name]
            head = rng.random() < 0.15 and not big_files
            method = "HEAD" if head else "GET"
            path = f"/{name}"
            return (f"{method} {path} HTTP/1.1\r\nHost: soak\r\n".encode() + extra + b"\r\n",
                    Expected(method, path, 200, b"" if head else body, len(body), close))
        if roll < 0.60:
            return (b"GET / HTTP/1.1\r\nHost: soak\r\n" + extra + b"\r\n",
                    Expected("GET", "/", 200, b"Hello, World!", 13, close))
        if roll < 0.92:
            size = 0 if rng.random() < 0.05 else random_size(rng)
            offset = rng.randrange(0, len(self.pattern) - size + 1)
            body = self.pattern[offset : offset + size]
            if rng.random() < 0.25:
                # Chunked: the body in 1 to 4 chunks of random sizes.
                chunks = b"".join(b"%x\r\n%b\r\n" % (len(part), bytes(part)) for part in pieces(rng, body) if len(part))
                wire = (b"POST /echo HTTP/1.1\r\nHost: soak\r\nTransfer-Encoding: chunked\r\n" + extra + b"\r\n"
                        + chunks + b"0\r\n\r\n")
            else:
                wire = (b"POST /echo HTTP/1.1\r\nHost: soak\r\nContent-Length: %d\r\n" % size + extra + b"\r\n"
                        + body)
            return wire, Expected("POST", "/echo", 200, body, size, close)
        path = f"/missing-{rng.randrange(1000)}"
        return (f"GET {path} HTTP/1.1\r\nHost: soak\r\n".encode() + extra + b"\r\n",
                Expected("GET", path, 404, None, -1, close))

    async def response(self, conn: Conn, expected: Expected, totals: Totals) -> None:
        what = f"the response to {expected.method} {expected.path}"
        head = await conn.read_until(b"\r\n\r\n", 16 << 10, f"the head of {what}")
        lines = head.decode("latin-1").split("\r\n")
        status = lines[0].split(" ")
        if len(status) < 2 or status[0] != "HTTP/1.1" or status[1] != str(expected.status):
            raise Failure(f"{what}: status line {lines[0]!r}, expected {expected.status}")
        fields = {}
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                fields[name.strip().lower()] = value.strip()
        if "content-length" not in fields:
            raise Failure(f"{what}: no Content-Length in {head!r}")
        length = int(fields["content-length"])
        if expected.length >= 0 and length != expected.length:
            raise Failure(f"{what}: Content-Length {length}, expected {expected.length}")
        closes = fields.get("connection", "").lower() == "close"
        if closes != expected.close:
            raise Failure(f"{what}: Connection: {fields.get('connection')!r}, close asked: {expected.close}")
        if expected.method == "HEAD":
            return
        body = await conn.read_exactly(length, f"the body of {what}")
        if expected.body is not None and body != expected.body:
            bad = next((i for i, (a, b) in enumerate(zip(body, expected.body)) if a != b), len(body))
            raise Failure(f"{what}: body differs at byte {bad} of {length}")
        totals.bytes_verified += len(head) + len(body)

    async def connection(self, rng: random.Random, totals: Totals, info: dict) -> None:
        roll = rng.random()
        kind = "reset" if roll < 0.2 else "slow" if roll < 0.3 else "normal"
        count = 1 if kind == "slow" else rng.randint(1, 40)
        close_last = rng.random() < 0.3
        requests = [self.request(rng, close_last and i == count - 1, big_files=kind == "slow") for i in range(count)]
        depth = rng.randint(1, 16)
        batches = [requests[i : i + depth] for i in range(0, count, depth)]
        lockstep = rng.random() < 0.5  # wait for a batch's responses before sending the next
        half_close = not close_last and rng.random() < 0.5
        reset_after = rng.randint(0, count) if kind == "reset" else None  # responses read before the reset
        # Or a reset while sending: after this many bytes of the requests, reading nothing.
        wire_size = sum(len(request) for request, _ in requests)
        reset_cut = rng.randrange(0, wire_size) if kind == "reset" and rng.random() < 0.3 else None
        if kind == "slow":
            conn = await Conn.open(self.port, rcvbuf=rng.choice([2048, 4096, 8192]),
                                   chunk=rng.choice([2048, 4096]), pause=rng.choice([0.0005, 0.001, 0.002]))
        else:
            conn = await Conn.open(self.port)
        totals.connections += 1
        info["conn"] = conn
        info["what"] = (f"http {kind} connection, {count} requests {'in lockstep' if lockstep else 'streamed'} "
                        f"{depth} deep, close {close_last}, half-close {half_close}, reset after {reset_after} "
                        f"responses or {reset_cut} bytes")
        answered = 0
        batch_done = asyncio.Event()

        async def writer() -> None:
            sent = 0
            for batch in batches:
                wire = b"".join(request for request, _ in batch)
                for part in pieces(rng, wire):
                    await conn.send(part)
                sent += len(batch)
                if lockstep:
                    while answered < sent:
                        batch_done.clear()
                        await batch_done.wait()
            if half_close:
                conn.sock.shutdown(socket.SHUT_WR)

        async def reader() -> None:
            nonlocal answered
            for _, expected in requests:
                if reset_after is not None and answered >= reset_after:
                    return
                await self.response(conn, expected, totals)
                answered += 1
                totals.requests += 1
                batch_done.set()
            if kind != "reset" and (close_last or half_close):
                await conn.expect_eof("the last response (the server must close)")

        try:
            if reset_cut is not None:
                await conn.send(b"".join(request for request, _ in requests)[:reset_cut])
                await asyncio.sleep(rng.choice([0, 0.001, 0.005]))
                totals.reset += 1
                conn.reset()
                return
            await run_both(writer(), reader(), reader_ends=kind == "reset")
            if kind == "reset":
                totals.reset += 1
                conn.reset()
                return
            totals.completed += 1
            if kind == "slow":
                totals.slow += 1
        except Failure as failure:
            raise Failure(f"{info['what']}, after {answered} responses: {failure}") from None
        finally:
            totals.bytes_sent += conn.sent
            conn.close()


def make_files(root: str, rng: random.Random, count: int) -> dict[str, bytes]:
    """`count` files of random sizes (empty, tiny, up to 2 MiB) with seeded content."""
    files = {}
    for index in range(count):
        if index == 0:
            size = 0
        elif index == 1:
            size = 1
        elif index < count // 4:
            size = rng.randint(2, 4096)
        elif index < count * 3 // 4:
            size = rng.randint(4097, 256 << 10)
        else:
            size = rng.randint((256 << 10) + 1, 2 << 20)
        name = f"file-{index:03d}.bin"
        data = rng.randbytes(size)
        with open(os.path.join(root, name), "wb") as out:
            out.write(data)
        files[name] = data
    return files


# MARK: - The server under soak


class Server:
    """One example server process, started with --stats; its output is read as it comes."""

    def __init__(self, name: str, argv: list[str]) -> None:
        self.name = name
        self.argv = argv
        self.process: asyncio.subprocess.Process | None = None
        self.port = 0
        self.stats: asyncio.Queue[dict] = asyncio.Queue()
        self.unexpected: list[str] = []
        self.readers: list[asyncio.Task] = []

    async def start(self) -> None:
        self.process = await asyncio.create_subprocess_exec(
            *self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        listening = asyncio.get_running_loop().create_future()
        self.readers = [
            asyncio.ensure_future(self.read(self.process.stdout, listening)),
            asyncio.ensure_future(self.read(self.process.stderr, listening)),
        ]
        try:
            line = await asyncio.wait_for(listening, timeout=30)
        except asyncio.TimeoutError:
            raise SystemExit(f"soak: {self.name}: no 'listening on' line within 30 s: {self.unexpected}")
        self.port = int(line.rsplit(":", 1)[1].split(",")[0])

    async def read(self, stream: asyncio.StreamReader, listening: asyncio.Future) -> None:
        while True:
            raw = await stream.readline()
            if not raw:
                if not listening.done():
                    listening.set_exception(SystemExit(f"soak: {self.name} exited before listening: {self.unexpected}"))
                return
            line = raw.decode(errors="replace").rstrip("\n")
            if line.startswith("{"):
                self.stats.put_nowait(json.loads(line))
            elif " listening on " in line and not listening.done():
                listening.set_result(line)
            elif line.startswith("echo-server: ring "):
                pass  # --stats: the rings' counters, on exit
            elif line.startswith(("echo-server engine: ", "http-server engine: ")):
                # Which engine serves (RINGIO_BACKEND, inherited, picks one), and why.
                print(f"soak: {self.name}: {line.split(' ', 1)[1]}", flush=True)
            else:
                self.unexpected.append(line)

    @property
    def pid(self) -> int:
        return self.process.pid

    def descriptors(self, counters: dict | None = None) -> int:
        """The server's open descriptors, but for the files it keeps open between requests
        (http-server's --open-files, bounded; `counters` says how many)."""
        return len(os.listdir(f"/proc/{self.pid}/fd")) - (counters or {}).get("openFiles", 0)

    def status(self, field: str) -> int:
        """A number from /proc/PID/status (VmRSS in KiB, Threads)."""
        with open(f"/proc/{self.pid}/status") as status:
            for line in status:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1])
        raise RuntimeError(f"no {field} in /proc/{self.pid}/status")

    def rss_kib(self) -> int:
        return self.status("VmRSS")

    async def counters(self) -> dict | None:
        """Asks for the counters (SIGUSR1); None when no line came within 2 s."""
        while not self.stats.empty():
            self.stats.get_nowait()
        self.process.send_signal(signal.SIGUSR1)
        try:
            return await asyncio.wait_for(self.stats.get(), timeout=2)
        except asyncio.TimeoutError:
            return None

    @staticmethod
    def imbalance(counters: dict) -> list[str]:
        problems = []
        if counters["accepted"] != counters["closed"]:
            problems.append(f"{counters['accepted']} connections accepted, {counters['closed']} closed")
        if counters["open"] != 0:
            problems.append(f"the listeners count {counters['open']} open connections")
        for op in ("reads", "writes"):
            if counters[f"{op}Started"] != counters[f"{op}Finished"]:
                problems.append(f"{counters[f'{op}Started']} {op} started, {counters[f'{op}Finished']} finished")
        return problems

    async def quiet(self, baseline_fds: int | None = None) -> tuple[dict, list[str]]:
        """Polls (bounded) until the counters balance (and the descriptors are back at
        `baseline_fds`); returns the last counters and what still differs."""
        deadline = time.monotonic() + QUIET_TIMEOUT
        while True:
            counters = await self.counters()
            problems = ["no counters line on SIGUSR1 within 2 s"] if counters is None else self.imbalance(counters)
            if baseline_fds is not None:
                fds = self.descriptors(counters)
                if fds != baseline_fds:
                    problems.append(f"{fds} descriptors open, {baseline_fds} at the baseline")
            if not problems or time.monotonic() > deadline:
                return counters or {}, problems
            await asyncio.sleep(0.1)

    async def stop(self) -> int | None:
        self.process.send_signal(signal.SIGTERM)
        try:
            code = await asyncio.wait_for(self.process.wait(), timeout=20)
        except asyncio.TimeoutError:
            self.process.kill()
            await self.process.wait()
            code = None
        await asyncio.gather(*self.readers, return_exceptions=True)
        return code


# MARK: - The churn


async def churn(client, seed: str, phase: str, seconds: float, concurrency: int) -> Totals:
    """`concurrency` workers, each opening connection after connection until `seconds` pass."""
    totals = Totals()
    end = time.monotonic() + seconds

    async def worker(index: int) -> None:
        number = 0
        while time.monotonic() < end:
            rng = random.Random(f"{seed}:{phase}:{index}:{number}")
            label = f"{phase} worker {index} connection {number}"
            number += 1
            info: dict = {}
            task = asyncio.ensure_future(client.connection(rng, totals, info))
            try:
                done, _ = await asyncio.wait([task], timeout=CONNECTION_TIMEOUT)
                if not done:
                    # A hang: what the sockets hold tells which end stopped (before closing them).
                    conn = info.get("conn")
                    progress = (f"{conn.sent} bytes sent, {conn.received} received; {socket_queues(conn)}"
                                if conn else "connecting")
                    totals.failures.append(f"{label}: not done after {CONNECTION_TIMEOUT:.0f} s (a hang): "
                                           f"{info.get('what', '')}; {progress}")
                    task.cancel()
                    await asyncio.gather(task, return_exceptions=True)
                else:
                    task.result()
            except Failure as failure:
                totals.failures.append(f"{label}: {failure}")
            except OSError as error:
                totals.failures.append(f"{label}: {error!r}")
            if len(totals.failures) >= 20:
                return

    await asyncio.gather(*(worker(index) for index in range(concurrency)))
    return totals


async def soak_target(name: str, args, bin_path: str, seconds: float, root: str, files: dict[str, bytes],
                      pattern: bytes) -> tuple[Totals, list[str]]:
    executable, options = TARGETS[name]
    argv = [os.path.join(bin_path, executable), "--port", "0", "--rings", str(args.rings), "--stats"] + options
    if executable == "http-server":
        argv += ["--root", root]
    server = Server(name, argv)
    await server.start()
    client = EchoClient(server.port, pattern) if executable == "echo-server" else HTTPClient(server.port, pattern, files)
    problems: list[str] = []
    warmup = max(2.0, seconds * args.warmup)
    log(f"{name}: pid {server.pid}, port {server.port}; warm-up {warmup:.1f} s, soak {seconds - warmup:.1f} s, "
        f"{args.connections} connections at a time")
    monitor = asyncio.ensure_future(watch(server, name)) if args.verbose else None
    # The warm-up's first half runs twice the connections: what the server keeps for reuse
    # (pools, free lists) grows to its high-water mark before the baseline, not after it.
    totals = await churn(client, f"{args.seed}:{name}", "burst", warmup / 2, args.connections * 2)
    totals.add(await churn(client, f"{args.seed}:{name}", "warm-up", warmup / 2, args.connections))
    counters, quiet_problems = await server.quiet()
    problems += [f"after the warm-up: {p}" for p in quiet_problems]
    base_fds, base_rss = server.descriptors(counters), server.rss_kib()
    log(f"{name}: baseline after warm-up: {base_fds} descriptors, VmRSS {base_rss} KiB "
        f"({server.status('RssAnon')} KiB anonymous); counters {counters}")
    if not totals.failures:
        soak = await churn(client, f"{args.seed}:{name}", "soak", seconds - warmup, args.connections)
        totals.add(soak)
    counters, quiet_problems = await server.quiet(base_fds)
    if monitor:
        monitor.cancel()
    problems += [f"at the end: {p}" for p in quiet_problems]
    end_fds, end_rss = server.descriptors(counters), server.rss_kib()
    growth = (end_rss - base_rss) / base_rss * 100
    log(f"{name}: at the end: {end_fds} descriptors, VmRSS {end_rss} KiB ({growth:+.1f} %; "
        f"{server.status('RssAnon')} KiB anonymous); counters {counters}")
    tolerance = 1 + args.rss_tolerance / 100
    if end_rss > base_rss * tolerance and not totals.failures and not quiet_problems:
        # A leak grows with the work; a one-time step to a new high-water mark (a pool, an
        # allocator heap that grew once) does not. More of the same work tells them apart.
        log(f"{name}: VmRSS {growth:+.1f} % over the baseline: soaking once more, to tell growth from a step")
        totals.add(await churn(client, f"{args.seed}:{name}", "second soak", seconds - warmup, args.connections))
        counters, quiet_problems = await server.quiet(base_fds)
        problems += [f"after the second soak: {p}" for p in quiet_problems]
        again = server.rss_kib()
        log(f"{name}: after the second soak: VmRSS {again} KiB ({(again - end_rss) / end_rss * 100:+.1f} % "
            f"over the first end); counters {counters}")
        if again > end_rss * tolerance:
            problems.append(f"VmRSS grew from {base_rss} KiB to {end_rss} KiB ({growth:+.1f} %) and again to "
                            f"{again} KiB in a second soak: more than {args.rss_tolerance:g} % each time")
        else:
            log(f"{name}: a one-time step of {end_rss - base_rss} KiB, not growth: not counted as a failure")
    elif end_rss > base_rss * tolerance:
        problems.append(f"VmRSS grew from {base_rss} KiB to {end_rss} KiB ({growth:+.1f} %, "
                        f"more than {args.rss_tolerance:g} %)")
    code = await server.stop()
    if code != 0:
        problems.append(f"exit status {code} after SIGTERM (expected 0)")
    problems += [f"unexpected output: {line}" for line in server.unexpected[:10]]
    log(f"{name}: {totals.summary()}")
    return totals, problems


async def watch(server: Server, name: str) -> None:
    """--verbose: the server's descriptors and VmRSS every 2 seconds."""
    start = time.monotonic()
    while True:
        await asyncio.sleep(2)
        log(f"{name}: {time.monotonic() - start:5.1f} s: {server.descriptors()} descriptors, "
            f"VmRSS {server.rss_kib()} KiB, {server.status('Threads')} threads")


def build(args) -> str:
    scratch = ["--scratch-path", args.scratch_path] if args.scratch_path else []
    if args.package_path:
        scratch += ["--package-path", args.package_path]
    if not args.no_build:
        for product in ("echo-server", "http-server"):
            log(f"building {product} (release)")
            subprocess.run(["swift", "build", "-c", "release", "--product", product] + scratch, check=True)
    return subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"] + scratch, check=True, text=True,
                          stdout=subprocess.PIPE).stdout.strip()


async def main_async(args, bin_path: str) -> int:
    targets = args.targets.split(",")
    seconds = args.duration / len(targets)
    pattern = random.Random(f"{args.seed}:pattern").randbytes(PATTERN_SIZE)
    root = tempfile.mkdtemp(prefix="ringio-soak-")
    failed = False
    grand = Totals()
    started = time.monotonic()
    try:
        files = make_files(root, random.Random(f"{args.seed}:files"), 48)
        for name in targets:
            totals, problems = await soak_target(name, args, bin_path, seconds, root, files, pattern)
            grand.add(totals)
            for line in totals.failures[:10] + problems:
                log(f"{name}: FAILED: {line}")
            if totals.failures or problems:
                failed = True
    finally:
        shutil.rmtree(root, ignore_errors=True)
    log(f"all: {grand.summary()}; {time.monotonic() - started:.1f} s")
    if failed:
        log(f"FAILED (seed {args.seed}: reproduce with Tools/soak.py --seed {args.seed} --duration {args.duration:g}"
            f" --connections {args.connections} --targets {args.targets})")
        return 1
    log("passed")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--seed", type=int, default=None, help="the random seed (default: a new one, printed)")
    parser.add_argument("--duration", type=float, default=28,
                        help="seconds of churn in all, shared by the targets (default 28: under 60 s in all)")
    parser.add_argument("--connections", type=int, default=200, help="connections open at a time (default 200)")
    parser.add_argument("--targets", default=",".join(DEFAULT_TARGETS),
                        help=f"the servers and ways of serving, comma-separated, of {', '.join(TARGETS)} "
                             f"(default: {','.join(DEFAULT_TARGETS)})")
    parser.add_argument("--rings", type=int, default=2, help="the servers' --rings (default 2)")
    parser.add_argument("--warmup", type=float, default=0.5,
                        help="the share of each target's time spent warming up before the baseline (default 0.5)")
    parser.add_argument("--rss-tolerance", type=float, default=5.0,
                        help="how much VmRSS may grow over the baseline, in percent (default 5)")
    parser.add_argument("--no-build", action="store_true", help="use the release build as it is")
    parser.add_argument("--scratch-path", default=None,
                        help="the build directory of the release build (default: swift build's, Benchmarks/.build)")
    parser.add_argument("--package-path", default="Benchmarks",
                        help="the package whose release build of the servers to soak (default: Benchmarks, "
                             "where the servers are; its release build makes them for the throughput comparison)")
    parser.add_argument("--verbose", action="store_true", help="print the servers' descriptors and VmRSS every 2 s")
    args = parser.parse_args()
    for name in args.targets.split(","):
        if name not in TARGETS:
            parser.error(f"unknown target {name!r} (known: {', '.join(TARGETS)})")
    if args.seed is None:
        args.seed = int.from_bytes(os.urandom(4), "little")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if args.connections * 4 + 64 > hard:
        parser.error(f"--connections {args.connections} needs more descriptors than the limit ({hard})")
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    log(f"seed {args.seed}")
    bin_path = build(args)
    return asyncio.run(main_async(args, bin_path))


if __name__ == "__main__":
    sys.exit(main())
