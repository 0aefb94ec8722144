//===----------------------------------------------------------------------===//
// RingIO — test support: requests submitted to a ring straight, over the package hooks.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import RingIO
import Synchronization
import SystemPackage
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension _RingIOTesting {
    package static func nop(on ring: RingLoop, completion: @escaping @Sendable (Int32) -> Void) {
        self.submit(.nop, on: ring) { completion($0.result) }
    }

    package static func timeout(nanoseconds: Int64, on ring: RingLoop, completion: @escaping @Sendable (Int32) -> Void)
    {
        let spec = _KernelTimespec(nanoseconds: nanoseconds)
        self.submit(.timeout(spec: spec), on: ring, keepAlive: spec) { completion($0.result) }
    }

    /// Submits `request` and waits (bounded) for its final completion.
    package static func perform(
        _ request: @escaping @Sendable @autoclosure () -> RingRequest,
        on ring: RingLoop,
        keepAlive: (any Sendable)? = nil
    ) throws -> Int32 {
        let done = DispatchSemaphore(value: 0)
        let result = _Lock<Int32?>(nil)
        self.submit(request(), on: ring, keepAlive: keepAlive) { completion in
            guard !completion.hasMore else { return }
            result.withLock { $0 = completion.result }
            done.signal()
        }
        try #require(wait(done))
        return try #require(result.withLock { $0 })
    }

    package static func read(fd: CInt, count: Int, offset: Int64, on ring: RingLoop) throws -> Result<[UInt8], Errno> {
        let buffer = TestBuffer(count: count)
        let result = try self.perform(
            .read(fd: fd, buffer: UnsafeMutableRawBufferPointer(rebasing: buffer.bytes[..<count]), offset: offset),
            on: ring,
            keepAlive: buffer
        )
        return result < 0 ? .failure(Errno(rawValue: -result)) : .success(buffer.prefix(Int(result)))
    }

    package static func write(fd: CInt, bytes: [UInt8], offset: Int64, on ring: RingLoop) throws -> Result<Int, Errno> {
        let buffer = TestBuffer(bytes)
        let result = try self.perform(
            .write(fd: fd, buffer: UnsafeRawBufferPointer(rebasing: buffer.bytes[..<bytes.count]), offset: offset),
            on: ring,
            keepAlive: buffer
        )
        return result < 0 ? .failure(Errno(rawValue: -result)) : .success(Int(result))
    }
}
