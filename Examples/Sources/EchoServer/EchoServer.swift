//===----------------------------------------------------------------------===//
// RingIO — example: an echo server with async/await.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

// echo-server: writes back every byte a client sends it.
//
//     swift run --package-path Examples echo-server [PORT]        (default 7000; 0: any free)
//     python3 -c 'import socket; s=socket.create_connection(("127.0.0.1",7000)); s.sendall(b"hi"); print(s.recv(2))'
//
// What it teaches:
// - A `RingLoopGroup`: one ring (an io_uring instance and the thread that drives it) per core.
// - An `IOListener` over the group, with `reusePort`: a listening socket per ring, the kernel
//   spreading connections over them.
// - `serve`: a task per connection, on the ring that accepted it, so that every `await` on the
//   connection's channel resumes on that ring's thread, with no hop.
// - `channel.reads()`: the bytes as they arrive, an `AsyncSequence` of `ByteRope`s that ends
//   when the client closes its side; `channel.write(_:)` sends them back. The rope is the
//   kernel's receive buffers: writing it back copies nothing.
// - A graceful stop on Ctrl-C (SIGINT): stop accepting, let each connection finish the writes
//   it has started (5 seconds at most), shut the rings down, exit.

import RingIO

#if canImport(Glibc)
import Glibc
#endif

@main
struct EchoServer {
    static func main() async throws {
        let port = CommandLine.arguments.dropFirst().first.flatMap { UInt16($0) } ?? 7000
        let group = try RingLoopGroup()
        var options = IOListener.Options()
        options.reusePort = true
        let listener = try IOListener(host: "127.0.0.1", port: port, options: options, group: group)

        // Ctrl-C. RingIO's signal source runs its handler on a ring; the shutdown ends `serve`
        // below once every connection is done.
        let interrupt = IOSource.makeSignalSource(signal: SIGINT, queue: group.next())
        interrupt.setRegistrationHandler {  // from now on, SIGINT is ours
            print("echo-server: listening on \(listener.localAddresses[0])")
            fflush(nil)  // at once, also into a pipe
        }
        interrupt.setEventHandler {
            print("echo-server: stopping")
            Task { await listener.shutdown(gracePeriod: .seconds(5)) }
        }
        interrupt.resume()

        await listener.serve { connection in
            let channel = connection.channel
            for try await data in channel.reads() {
                try await channel.write(data)
            }
        }

        interrupt.cancel()
        await group.shutdown()
        print("echo-server: stopped")
    }
}
