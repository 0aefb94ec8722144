//===----------------------------------------------------------------------===//
// RingIO — engine test support: small conveniences over the package test hooks.
//===----------------------------------------------------------------------===//

import Dispatch
import RingIO
import Synchronization
import SystemPackage
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Memory that lives until the last reference to it goes: what a test hands the kernel.
final class TestBuffer: @unchecked Sendable {
    // @unchecked: written by the kernel during the operation, read by the test only after the
    // completion has been observed (through a semaphore or a lock).
    let bytes: UnsafeMutableRawBufferPointer

    init(count: Int) {
        self.bytes = .allocate(byteCount: max(count, 1), alignment: 16)
        self.bytes.initializeMemory(as: UInt8.self, repeating: 0)
    }

    convenience init(_ contents: [UInt8]) {
        self.init(count: contents.count)
        self.bytes.copyBytes(from: contents)
    }

    deinit {
        self.bytes.deallocate()
    }

    func prefix(_ count: Int) -> [UInt8] { Array(self.bytes[..<count]) }
}

extension _RingIOTesting {
    static func nop(on ring: RingLoop, completion: @escaping @Sendable (Int32) -> Void) {
        self.submit(.nop, on: ring) { completion($0.result) }
    }

    static func timeout(nanoseconds: Int64, on ring: RingLoop, completion: @escaping @Sendable (Int32) -> Void) {
        let spec = _KernelTimespec(nanoseconds: nanoseconds)
        self.submit(.timeout(spec: spec, repeating: false), on: ring, keepAlive: spec) { completion($0.result) }
    }

    /// Submits `request` and waits (bounded) for its final completion.
    static func perform(
        _ request: @escaping @Sendable @autoclosure () -> RingRequest,
        on ring: RingLoop,
        keepAlive: (any Sendable)? = nil
    ) throws -> Int32 {
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<Int32?>(nil)
        self.submit(request(), on: ring, keepAlive: keepAlive) { completion in
            guard !completion.hasMore else { return }
            result.withLock { $0 = completion.result }
            done.signal()
        }
        try #require(wait(done))
        return try #require(result.withLock { $0 })
    }

    static func read(fd: CInt, count: Int, offset: Int64, on ring: RingLoop) throws -> Result<[UInt8], Errno> {
        let buffer = TestBuffer(count: count)
        let result = try self.perform(
            .read(fd: fd, buffer: UnsafeMutableRawBufferPointer(rebasing: buffer.bytes[..<count]), offset: offset),
            on: ring,
            keepAlive: buffer
        )
        return result < 0 ? .failure(Errno(rawValue: -result)) : .success(buffer.prefix(Int(result)))
    }

    static func write(fd: CInt, bytes: [UInt8], offset: Int64, on ring: RingLoop) throws -> Result<Int, Errno> {
        let buffer = TestBuffer(bytes)
        let result = try self.perform(
            .write(fd: fd, buffer: UnsafeRawBufferPointer(rebasing: buffer.bytes[..<bytes.count]), offset: offset),
            on: ring,
            keepAlive: buffer
        )
        return result < 0 ? .failure(Errno(rawValue: -result)) : .success(Int(result))
    }
}
