#!/usr/bin/env python3
# ===----------------------------------------------------------------------===#
# RingIO — benchmarks: instructions per operation of RingIO's servers (and of the
# benchmarks' UDP echo server), counted by callgrind.
#
# Run by run-instruction-check.sh, which builds and strips the servers; see Benchmarks/README.md
# ("Checked thresholds: instructions"). Standard library only.
#
# For each case: start the server under `valgrind --tool=callgrind` (one ring), wait for its
# "listening on" line, open one connection, run WARMUP operations, zero the counters
# (`callgrind_control -z`), run OPERATIONS operations, dump (`callgrind_control -d`), and divide
# the instructions of the dump (every thread of the server) by OPERATIONS. The client is strict
# ping-pong on one connection and pauses PAUSE seconds before each operation, so that the server
# is asleep in the kernel when each request arrives and every operation takes the same path
# through the ring loop; without the pause, whether a request arrives before or after the ring's
# next wait changes the count by about 8% from run to run.
#
# The proxy case runs tcp-proxy under callgrind in front of an echo server of this script's own
# (a thread, not counted) that answers each message after UPSTREAM_PAUSE seconds, so that the
# proxy is asleep when the answer arrives as well: each hop takes the same path through the
# ring loop (with an upstream that answers at once, whether its answer beats the proxy's next
# wait moves the count by 3%). One operation is a 64-byte round trip forwarded both ways. The
# UDP cases send a 64-byte datagram from a connected socket and wait for its echo. The "close"
# case opens a connection per operation: one `GET /` with `Connection: close`, the answer read
# to the end of the stream, then the client closes — the whole life of an accepted connection
# (accept, channel set-up, read, write, close, teardown) in each operation. The HTTPS case
# serves the HTTP GET over TLS 1.3 (AES-128-GCM, an ECDSA P-256 certificate that `openssl` makes
# in --work, no session tickets), to Python's ssl client; the handshake is in the warm-up. The
# handshake case makes one new TLS connection per operation (a full TLS 1.3 handshake, then the
# client closes) and counts the instructions outside OpenSSL and the C library only — the
# server's own code, the Swift runtime and liburing (OUTSIDE_OPENSSL): OpenSSL's 2.3 million
# per handshake would hide any change of RingIO's and RingTLS's 45,000 in a 1% tolerance.
# ===----------------------------------------------------------------------===#

import argparse
import os
import re
import select
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time

WARMUP = 200
OPERATIONS = 1000
PAUSE = 0.002
UPSTREAM_PAUSE = 0.001

ECHO_PAYLOAD = b"x" * 64
HTTP_REQUEST = b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"
HTTP_CLOSE_REQUEST = b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
# The static file of the "file" client: 16 KiB under --root, deterministic bytes.
STATIC_FILE = bytes((index * 31 + 7) % 251 for index in range(16384))
STATIC_REQUEST = b"GET /file-16KiB.bin HTTP/1.1\r\nHost: localhost\r\n\r\n"
PIPELINE_DEPTH = 16

# http-server's TLS arguments for the HTTPS cases.
TLS_ARGUMENTS = [
    "--tls-certificate",
    "{certificate}",
    "--tls-key",
    "{key}",
    "--tls-ciphersuites",
    "TLS_AES_128_GCM_SHA256",
    "--no-tls-session-tickets",
]

# name: (server product, server arguments, client, operations per exchange[, tolerance in percent])
#
# A case with a tolerance of its own overrides --tolerance: the interval case's strict ticks are
# timed (every 10 ms of wall-clock time, not every so many operations), so how many fall in the
# measured window moves with the machine's speed and load — 0.25% between five quiet runs, 0.95%
# between three beside a build. The handshake case's count spread 2.1% over three server
# processes of one build (47,206–48,211 per handshake), where the others move by 0.2% at most.
CASES = {
    "echo_pingpong64B_handlers": ("echo-server", ["--api", "handlers"], "echo", 1),
    "echo_pingpong64B_async": ("echo-server", ["--api", "async"], "echo", 1),
    # The classic GCD server's 10 ms strict interval on every read and write.
    "echo_pingpong64B_interval10ms": (
        "echo-server",
        ["--api", "handlers", "--interval", "10", "--strict"],
        "echo",
        1,
        3.0,
    ),
    "http_hello_keepalive_handlers": ("http-server", ["--api", "handlers"], "http", 1),
    "http_hello_keepalive_async": ("http-server", ["--api", "async"], "http", 1),
    "http_hello_pipelined16_handlers": ("http-server", ["--api", "handlers"], "http", PIPELINE_DEPTH),
    "http_hello_pipelined16_async": ("http-server", ["--api", "async"], "http", PIPELINE_DEPTH),
    # A connection per operation: accept, one request with `Connection: close`, close.
    "http_hello_close_handlers": ("http-server", ["--api", "handlers"], "close", 1),
    # A 16 KiB static file under --root ({root}: a directory in --work holding it), kept-alive.
    "http_file16k_keepalive_handlers": ("http-server", ["--api", "handlers", "--root", "{root}"], "file", 1),
    "http_file16k_keepalive_async": ("http-server", ["--api", "async", "--root", "{root}"], "file", 1),
    # HTTPS ({certificate}, {key}: made in --work by openssl), RingTLS in user space.
    "https_hello_keepalive_handlers": ("http-server", ["--api", "handlers", *TLS_ARGUMENTS], "https", 1),
    # New HTTPS connections: a full handshake each, counted outside OpenSSL (OUTSIDE_OPENSSL).
    "https_handshake_handlers": ("http-server", ["--api", "handlers", *TLS_ARGUMENTS], "handshake", 1, 4.0),
    # tcp-proxy forwarding to an echo server ({upstream}: the script's own, not counted).
    "proxy_pingpong64B": ("tcp-proxy", ["--upstream", "{upstream}"], "echo", 1),
    # The benchmarks' UDP echo server on IODatagramChannel.
    "udp_echo64B_handlers": ("udp-echo-server", ["--api", "handlers"], "udp", 1),
    "udp_echo64B_async": ("udp-echo-server", ["--api", "async"], "udp", 1),
}

# The cases counted outside these objects (see the header): OpenSSL, and the C library, where
# OpenSSL's allocations and string work land.
OUTSIDE_OPENSSL = {"https_handshake_handlers": ("libssl.so", "libcrypto.so", "libc.so", "ld-linux")}


def log(message):
    print(f"** {message}", file=sys.stderr, flush=True)


class Failure(Exception):
    pass


class Server:
    """A server under callgrind, started with its output file in `work`."""

    def __init__(self, binary, arguments, work, name):
        self.output = os.path.join(work, f"{name}.callgrind")
        self.stderr = open(os.path.join(work, f"{name}.stderr"), "w")
        self.process = subprocess.Popen(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={self.output}",
                binary,
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--rings",
                "1",
                *arguments,
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            # RingIO's documented switch for valgrind: rings wait in poll(2), not io_uring_enter.
            env={**os.environ, "RINGIO_VALGRIND": "1"},
        )
        self.port = self._read_port(timeout=120)
        self.dumps = 0

    def _read_port(self, timeout):
        deadline = time.monotonic() + timeout
        line = b""
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.process.stdout], [], [], 1)
            if ready:
                chunk = os.read(self.process.stdout.fileno(), 4096)
                if not chunk:
                    break
                line += chunk
                match = re.search(rb"listening on 127\.0\.0\.1:(\d+)", line)
                if match:
                    return int(match.group(1))
            elif self.process.poll() is not None:
                break
        self.stop()
        with open(self.stderr.name) as stderr:
            tail = "".join(stderr.readlines()[-20:])
        raise Failure(f"the server did not print its port; its standard error ends with:\n{tail}")

    def control(self, *arguments):
        # callgrind_control reaches the server through vgdb, which uses ptrace to wake a server
        # blocked in a syscall (valgrind allows it with PR_SET_PTRACER); where ptrace is denied,
        # the command waits for the server to run, which never comes: give up then.
        try:
            result = subprocess.run(
                ["callgrind_control", *arguments, str(self.process.pid)],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=120,
            )
        except subprocess.TimeoutExpired:
            raise Failure(f"callgrind_control {' '.join(arguments)} had no answer in 120 s (is ptrace denied?)")
        if result.returncode != 0 or "OK" not in result.stdout:
            raise Failure(f"callgrind_control {' '.join(arguments)} failed: {result.stdout}{result.stderr}")

    def zero(self):
        self.control("-z")

    def dump(self, excluding=()):
        """The instructions counted since the last zero; with `excluding`, those of the objects
        (shared libraries, the binary) whose paths contain none of its strings."""
        self.control("-d")
        self.dumps += 1
        path = f"{self.output}.{self.dumps}"
        if excluding:
            costs = object_costs(path)
            return sum(cost for name, cost in costs.items() if not any(part in name for part in excluding))
        with open(path) as dump:
            for line in dump:
                if line.startswith("summary:"):
                    return int(line.split()[1])
        raise Failure(f"no summary line in {path}")

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.stderr.close()


def object_costs(path):
    """Instructions per object (`ob=`) of a callgrind dump: each cost line counts for the object
    of its function, except the line after `calls=` (a call's inclusive cost, counted in the
    callee already)."""
    names = {}
    costs = {}
    current = None
    after_call = False

    def resolve(specification):
        match = re.match(r"\((\d+)\)(?: (.*))?", specification)
        if not match:
            return specification
        if match.group(2):
            names[match.group(1)] = match.group(2)
        return names.get(match.group(1), "?")

    with open(path) as dump:
        for line in dump:
            if line.startswith("ob="):
                current = resolve(line[3:].rstrip("\n"))
            elif line.startswith("cob="):
                resolve(line[4:].rstrip("\n"))  # names an object the first time it appears
            elif line.startswith("calls="):
                after_call = True
            elif line[:1].isdigit() or line[:1] in ("+", "-", "*"):
                fields = line.split()
                if after_call:
                    after_call = False
                elif len(fields) > 1:
                    costs[current] = costs.get(current, 0) + int(fields[1])
    return costs


class Upstream:
    """An echo server on a thread, serving its connections one after another: each message goes
    back UPSTREAM_PAUSE seconds after it arrived (the proxy's upstream)."""

    def __init__(self):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return  # stopped
            try:
                connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                with connection:
                    while data := connection.recv(65536):
                        time.sleep(UPSTREAM_PAUSE)
                        connection.sendall(data)
            except OSError:
                continue  # that connection was reset

    def stop(self):
        self.listener.close()


class Client:
    def __init__(self, port, kind, depth, certificate=None):
        self.port = port
        self.kind = kind
        self.depth = depth
        self.pending = b""
        if kind == "close":
            self.socket = None  # a connection per exchange
            return
        if kind == "handshake":
            self.socket = None  # a connection per operation
        elif kind == "udp":
            self.socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            self.socket.settimeout(60)
            self.socket.connect(("127.0.0.1", port))
        else:
            self.socket = socket.create_connection(("127.0.0.1", port), timeout=60)
            self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if kind in ("https", "handshake"):
            self.context = ssl.create_default_context(cafile=certificate)
            self.context.minimum_version = ssl.TLSVersion.TLSv1_3
            self.context.set_alpn_protocols(["http/1.1"])
        if kind == "https":
            self.socket = self.context.wrap_socket(self.socket, server_hostname="localhost")

    def exchange(self):
        time.sleep(PAUSE)
        if self.kind == "handshake":
            raw = socket.create_connection(("127.0.0.1", self.port), timeout=60)
            with self.context.wrap_socket(raw, server_hostname="localhost") as connection:
                if connection.selected_alpn_protocol() != "http/1.1":
                    raise Failure(f"the handshake agreed on ALPN {connection.selected_alpn_protocol()!r}")
        elif self.kind == "echo":
            self.socket.sendall(ECHO_PAYLOAD)
            received = b""
            while len(received) < len(ECHO_PAYLOAD):
                received += self._receive()
            if received != ECHO_PAYLOAD:
                raise Failure(f"echo answered {received!r}")
        elif self.kind == "udp":
            self.socket.send(ECHO_PAYLOAD)
            received = self.socket.recv(65536)
            if received != ECHO_PAYLOAD:
                raise Failure(f"the UDP echo answered {received!r}")
        elif self.kind == "close":
            self._close_exchange()
        elif self.kind == "file":
            self.socket.sendall(STATIC_REQUEST)
            self._response(STATIC_FILE)
        else:
            self.socket.sendall(HTTP_REQUEST * self.depth)
            for _ in range(self.depth):
                self._response()

    def _close_exchange(self):
        """A connection of its own: the request, the answer up to the server's close, our close."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=60) as connection:
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            connection.sendall(HTTP_CLOSE_REQUEST)
            response = b""
            while chunk := connection.recv(65536):
                response += chunk
        head, _, body = response.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200") or b"\r\nconnection: close" not in head.lower():
            raise Failure(f"the server answered {head[:80]!r}")
        if body != b"Hello, World!":
            raise Failure(f"the server answered a body of {len(body)} bytes: {body[:40]!r}…")

    def _receive(self):
        chunk = self.socket.recv(65536)
        if not chunk:
            raise Failure("the server closed the connection")
        return chunk

    def _response(self, expected=b"Hello, World!"):
        while b"\r\n\r\n" not in self.pending:
            self.pending += self._receive()
        head, self.pending = self.pending.split(b"\r\n\r\n", 1)
        if not head.startswith(b"HTTP/1.1 200"):
            raise Failure(f"the server answered {head[:40]!r}")
        match = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
        length = int(match.group(1)) if match else 0
        while len(self.pending) < length:
            self.pending += self._receive()
        body, self.pending = self.pending[:length], self.pending[length:]
        if body != expected:
            raise Failure(f"the server answered a body of {len(body)} bytes: {body[:40]!r}…")

    def close(self):
        if self.socket is not None:
            self.socket.close()


def make_certificate(work):
    """An ECDSA P-256 certificate for "localhost", self-signed, and its key, in `work`."""
    certificate = os.path.join(work, "localhost.pem")
    key = os.path.join(work, "localhost.key")
    if not os.path.exists(certificate):
        command = [
            "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", key, "-out", certificate, "-days", "2", "-subj", "/CN=localhost",
            "-addext", "subjectAltName=DNS:localhost",
        ]  # fmt: skip
        result = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if result.returncode != 0:
            raise Failure(f"openssl could not make the certificate: {result.stderr}")
    return certificate, key


def measure(name, binaries, work):
    """Instructions per operation of case `name`, from one server process."""
    product, arguments, kind, depth = CASES[name][:4]
    if "{root}" in arguments:
        root = os.path.join(work, "root")
        os.makedirs(root, exist_ok=True)
        with open(os.path.join(root, "file-16KiB.bin"), "wb") as file:
            file.write(STATIC_FILE)
        arguments = [root if argument == "{root}" else argument for argument in arguments]
    certificate = None
    if "{certificate}" in arguments:
        certificate, key = make_certificate(work)
        substitutes = {"{certificate}": certificate, "{key}": key}
        arguments = [substitutes.get(argument, argument) for argument in arguments]
    upstream = None
    if "{upstream}" in arguments:
        upstream = Upstream()
        arguments = [f"127.0.0.1:{upstream.port}" if argument == "{upstream}" else argument for argument in arguments]
    try:
        server = Server(os.path.join(binaries, product), arguments, work, name)
    except BaseException:
        if upstream:
            upstream.stop()
        raise
    try:
        client = Client(server.port, kind, depth, certificate)
        for _ in range(WARMUP):
            client.exchange()
        server.zero()
        for _ in range(OPERATIONS):
            client.exchange()
        instructions = server.dump(excluding=OUTSIDE_OPENSSL.get(name, ()))
        client.close()
    finally:
        server.stop()
        if upstream:
            upstream.stop()
    return instructions / (OPERATIONS * depth)


def read_thresholds(path):
    thresholds = {}
    with open(path) as file:
        for line in file:
            line = line.split("#", 1)[0].strip()
            if line:
                name, value = line.split()
                thresholds[name] = int(value)
    return thresholds


def write_thresholds(path, results, tolerance):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as file:
        file.write(
            "# Instructions per operation of RingIO's servers under callgrind, checked by\n"
            f"# Benchmarks/run-instruction-check.sh within {tolerance:g}% (see Benchmarks/README.md).\n"
            "# Written by the update command the script prints; review the diff and commit it.\n"
        )
        for name in CASES:
            if name in results:
                file.write(f"{name:<36} {round(results[name])}\n")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binaries", required=True, help="the directory with the stripped servers")
    parser.add_argument("--work", required=True, help="a scratch directory for callgrind's files")
    parser.add_argument("--thresholds", required=True)
    parser.add_argument("--tolerance", type=float, required=True, help="percent")
    parser.add_argument("--update", action="store_true", help="write the thresholds instead of checking")
    parser.add_argument("--runs", type=int, default=1, help="server processes per case (the spread)")
    parser.add_argument("--only", help="a regular expression on the case names")
    parser.add_argument("--update-command", default="", help="printed when a count moved")
    options = parser.parse_args()

    names = [name for name in CASES if not options.only or re.search(options.only, name)]
    thresholds = {} if options.update else read_thresholds(options.thresholds)
    results = {}
    worse, better = [], []
    print(f"{'case':<36} {'instructions/op':>15} {'threshold':>10} {'change':>8}   runs")
    for name in names:
        samples = [measure(name, options.binaries, options.work) for _ in range(options.runs)]
        value = sorted(samples)[len(samples) // 2]
        results[name] = value
        spread = ""
        if len(samples) > 1:
            low, high = min(samples), max(samples)
            spread = f"   min {low:.1f} max {high:.1f} (spread {100 * (high - low) / low:.3f}%)"
        threshold = thresholds.get(name)
        if threshold is None:
            verdict = "new" if options.update else "NO THRESHOLD"
            if not options.update:
                worse.append(name)
            print(f"{name:<36} {value:>15.1f} {'-':>10} {verdict:>8}{spread}", flush=True)
            continue
        change = 100 * (value - threshold) / threshold
        tolerance = CASES[name][4] if len(CASES[name]) > 4 else options.tolerance
        if change > tolerance:
            worse.append(name)
        elif change < -tolerance:
            better.append(name)
        print(f"{name:<36} {value:>15.1f} {threshold:>10} {change:>+7.2f}%{spread}", flush=True)

    if options.update:
        # Cases not run this time (--only) keep their thresholds.
        kept = read_thresholds(options.thresholds) if os.path.exists(options.thresholds) else {}
        write_thresholds(options.thresholds, {**kept, **results}, options.tolerance)
        log(f"Wrote {options.thresholds}.")
        return 0
    if worse:
        log(f"FAILED: more instructions than the threshold + {options.tolerance:g}% (or no threshold): {', '.join(worse)}.")
        log("Fix the regression, or, if the extra instructions are intended, record them deliberately with:")
        log(f"    {options.update_command}")
        return 1
    if better:
        log(f"FAILED: fewer instructions than the threshold - {options.tolerance:g}%: {', '.join(better)}.")
        log("Record the improvement deliberately (review the diff, commit it with the change) with:")
        log(f"    {options.update_command}")
        return 1
    log(f"OK: every count is within {options.tolerance:g}% of its threshold (or its case's own tolerance).")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (Failure, OSError) as failure:
        log(f"ERROR: {failure}")
        sys.exit(2)
