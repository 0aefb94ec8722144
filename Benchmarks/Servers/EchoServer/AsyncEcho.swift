//===----------------------------------------------------------------------===//
// RingIO — benchmark server: the echo server's connections with async/await (--api async).
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import RingIO
import SystemPackage

/// One connection served by a task on the ring that accepted it (``IOListener/serve(_:)``):
/// what it reads is written back as it came,
///
///     for try await data in channel.reads() { try await channel.write(data) }
///
/// Every await completes on the ring thread in the turn its I/O does: no queue, no thread
/// hop. The listener counts the connection (`--max-connections`) and closes its socket.
func echo(_ connection: IOConnection, configuration: EchoServer, stats: ServerStats?) async {
    let channel = connection.channel
    stats?.connectionAccepted()
    defer { stats?.connectionClosed() }
    channel.setLimit(lowWater: configuration.lowWater)
    if configuration.idleTimeout > 0 {
        channel.setInterval(.seconds(configuration.idleTimeout), flags: .strict)
    } else if configuration.interval > 0 {
        channel.setInterval(.milliseconds(configuration.interval), flags: configuration.strict ? .strict : [])
    }
    var active = true
    stats?.readStarted()
    defer { stats?.readFinished() }
    do throws(Errno) {
        for try await data in channel.reads() {
            if data.isEmpty {
                // A strict tick: close when nothing arrived since the last one (idle).
                if configuration.idleTimeout > 0 {
                    if !active { return }
                    active = false
                }
                continue
            }
            active = true
            stats?.writeStarted()
            defer { stats?.writeFinished() }
            try await channel.write(data)
        }
    } catch {
        if error != .canceled && error != .connectionReset && error != .brokenPipe {
            print("echo-server: connection failed: \(error)")
        }
    }
}
