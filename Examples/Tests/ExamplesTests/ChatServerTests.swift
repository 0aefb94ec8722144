//===----------------------------------------------------------------------===//
// RingIO — example tests: chat-server — the fan-out, a slow reader dropped, an idle client
// timed out.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Testing

/// What the chat clients share: a line-reading client that knows its own name.
let chatClient = """
    import socket, sys, threading, time
    port = int(sys.argv[1])
    class Client:
        def __init__(self, receive_buffer=None):
            self.s = socket.socket()
            if receive_buffer:
                self.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
            self.s.settimeout(20)
            self.s.connect(("127.0.0.1", port))
            self.f = self.s.makefile("rb")
            welcome = self.f.readline().decode()
            assert welcome.startswith("* welcome, "), welcome
            self.name = welcome[len("* welcome, "):].strip()
        def line(self):
            return self.f.readline().decode()
        def lines_until(self, predicate):
            seen = []
            while True:
                line = self.line()
                assert line, f"EOF after {seen[-3:]}"
                seen.append(line)
                if predicate(line):
                    return seen

    """

@Suite("chat-server")
struct ChatServerTests {
    @Test("a line goes to every other client, prefixed by its sender; joins and leaves are told")
    func fanOut() throws {
        let server = try Example("chat-server", ["0"])
        let script =
            chatClient + """
                a, b, c = Client(), Client(), Client()
                assert a.lines_until(lambda l: l == f"* {c.name} joined\\n")[-1] == f"* {c.name} joined\\n"
                b.lines_until(lambda l: l == f"* {c.name} joined\\n")
                a.s.sendall(b"hello, ")
                a.s.sendall(b"everyone\\nand a second line\\n")
                for other in (b, c):
                    assert other.line() == f"{a.name}: hello, everyone\\n"
                    assert other.line() == f"{a.name}: and a second line\\n"
                b.s.sendall(b"hi a\\n")
                assert a.line() == f"{b.name}: hi a\\n"
                assert c.line() == f"{b.name}: hi a\\n"
                c.f.close(); c.s.close()  # the file holds the socket open too
                assert a.line() == f"* {c.name} left\\n"
                assert b.line() == f"* {c.name} left\\n"
                print("ok")
                """
        let result = try runPython(script, ["\(server.port)"])
        #expect(result.status == 0 && result.output == "ok\n", "\(result)")
        #expect(server.interrupt() == 0)
    }

    @Test("a client that does not read is dropped once 1 MiB is queued for it; the others get everything")
    func slowReaderDropped() throws {
        let server = try Example("chat-server", ["0"])
        // The sender sends 24 MiB in 64 KiB lines, 1 MiB at a time, each time waiting until the
        // reading client has received it (so that only the slow one falls behind). The slow
        // client reads its welcome and nothing more until the end, with a small receive buffer.
        let script =
            chatClient + """
                slow = Client(receive_buffer=4096)
                reader = Client()
                sender = Client()
                reader.lines_until(lambda l: l == f"* {sender.name} joined\\n")
                line_body = b"x" * (65536 - 1)
                received = threading.Semaphore(0)
                notices = []
                def read_all():
                    for i in range(24 * 16):
                        while True:
                            line = reader.f.readline()
                            if line.startswith(sender.name.encode()):
                                break
                            notices.append(line.decode())
                        assert line == f"{sender.name}: ".encode() + line_body + b"\\n", f"line {i}: {line[:40]}"
                        if i % 16 == 15:
                            received.release()
                thread = threading.Thread(target=read_all)
                thread.start()
                for megabyte in range(24):
                    sender.s.sendall((line_body + b"\\n") * 16)
                    assert received.acquire(timeout=20), f"the reader did not get MiB {megabyte}"
                thread.join()
                if f"* {slow.name} left\\n" not in notices:
                    reader.lines_until(lambda l: l == f"* {slow.name} left\\n")
                total = 0
                try:
                    while True:
                        chunk = slow.s.recv(1 << 16)
                        if not chunk:
                            break
                        total += len(chunk)
                except ConnectionResetError:
                    pass
                assert total < 24 * 65536 * 16, f"the slow client got everything ({total} bytes)"
                print("ok")
                """
        let result = try runPython(script, ["\(server.port)"], seconds: 120)
        #expect(result.status == 0 && result.output == "ok\n", "\(result)")
        #expect(server.interrupt() == 0)
    }

    @Test("a client silent for the idle timeout is told so and disconnected; one that talks is not")
    func idleTimeout() throws {
        let server = try Example("chat-server", ["0", "2"])
        // The talking client sends a line every 0.2 s (well within the timeout of 2 s: a clock
        // is what this test is about) until the silent one is gone.
        let script =
            chatClient + """
                silent = Client()
                talker = Client()
                done = threading.Event()
                def talk():
                    while not done.wait(0.2):
                        talker.s.sendall(b"still here\\n")
                thread = threading.Thread(target=talk)
                thread.start()
                goodbye = silent.lines_until(lambda l: l.startswith("* idle"))[-1]
                assert goodbye == "* idle for 2.0 seconds, goodbye\\n", goodbye
                assert silent.line() == ""
                talker.lines_until(lambda l: l == f"* {silent.name} left\\n")
                time.sleep(2.5)  # past another timeout: the talker must still be connected
                done.set()
                thread.join()
                talker.s.sendall(b"bye\\n")
                talker.s.shutdown(socket.SHUT_WR)
                rest = talker.f.read()
                assert b"idle" not in rest, rest
                print("ok")
                """
        let result = try runPython(script, ["\(server.port)"])
        #expect(result.status == 0 && result.output == "ok\n", "\(result)")
        #expect(server.interrupt() == 0)
    }
}
