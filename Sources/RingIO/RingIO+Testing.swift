//===----------------------------------------------------------------------===//
// RingIO — hooks for the test suites (package-visible, not public API).
//===----------------------------------------------------------------------===//

import Dispatch
import Synchronization
import SystemPackage

/// Test hooks over the engine's internal API.
package enum _RingIOTesting {
    /// Whether this process can set up io_uring at all; the `Errno` the kernel gave if not.
    package static func ringSetUpError() -> IORingSetupError? {
        do {
            let ring = try IORing(entries: 4)
            ring.shutdown()
            return nil
        } catch {
            return error
        }
    }

    /// Submits a no-op from the ring thread; `completion` runs on the ring thread with the
    /// result. Call from any thread.
    package static func nop(on ring: IORing, completion: @escaping @Sendable (Int32) -> Void) {
        ring.enqueue {
            ring.core.submit(.nop, kind: .nop, target: _ClosureTarget { result, _ in completion(result) })
        }
    }

    /// Submits `count` no-ops at once from the ring thread; each completion calls `completion`.
    package static func nops(
        _ count: Int,
        on ring: IORing,
        completion: @escaping @Sendable (Int32) -> Void
    ) {
        ring.enqueue {
            let target = _ClosureTarget { result, _ in completion(result) }
            for _ in 0..<count {
                ring.core.submit(.nop, kind: .nop, target: target)
            }
        }
    }

    /// Reads up to `count` bytes of `fd` at `offset` (-1: the file position) through the ring.
    package static func read(
        fd: CInt,
        count: Int,
        offset: Int64,
        on ring: IORing,
        completion: @escaping @Sendable (Result<[UInt8], Errno>) -> Void
    ) {
        ring.enqueue {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 16)
            let request = RingRequest.read(fd: fd, buffer: buffer, offset: offset)
            ring.core.submit(
                request,
                kind: .read,
                target: _ClosureTarget { result, _ in
                    defer { buffer.deallocate() }
                    if result < 0 {
                        completion(.failure(Errno(rawValue: -result)))
                    } else {
                        completion(.success(Array(buffer[..<Int(result)])))
                    }
                }
            )
        }
    }

    /// Writes `bytes` to `fd` at `offset` (-1: the file position) through the ring.
    package static func write(
        fd: CInt,
        bytes: [UInt8],
        offset: Int64,
        on ring: IORing,
        completion: @escaping @Sendable (Result<Int, Errno>) -> Void
    ) {
        ring.enqueue {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 16)
            buffer.copyBytes(from: bytes)
            let request = RingRequest.write(fd: fd, buffer: UnsafeRawBufferPointer(buffer), offset: offset)
            ring.core.submit(
                request,
                kind: .write,
                target: _ClosureTarget { result, _ in
                    buffer.deallocate()
                    completion(result < 0 ? .failure(Errno(rawValue: -result)) : .success(Int(result)))
                }
            )
        }
    }

    /// Arms a one-shot timeout of `nanoseconds` on the ring; `completion` gets its result
    /// (`-ETIME` when it fires, `-ECANCELED` when cancelled).
    package static func timeout(
        nanoseconds: Int64,
        on ring: IORing,
        completion: @escaping @Sendable (Int32) -> Void
    ) {
        ring.enqueue {
            let spec = _KernelTimespec(nanoseconds: nanoseconds)
            ring.core.submit(
                .timeout(spec: spec),
                kind: .timeout,
                target: _ClosureTarget { result, _ in
                    withExtendedLifetime(spec) {}
                    completion(result)
                }
            )
        }
    }

    /// What a test receiver reports.
    package enum Received: Sendable {
        case data(ByteRope)
        case end
        case failure(Errno)
    }

    /// Keeps a multishot receive (or, with `pipe`, a multishot read) armed on `fd`, through
    /// the ring's provided buffers; `handler` runs on the ring thread.
    package static func receive(
        fd: CInt,
        pipe: Bool = false,
        on ring: IORing,
        handler: @escaping @Sendable (Received) -> Void
    ) {
        ring.enqueue {
            let receiver = _MultishotReceiver(core: ring.core, fd: fd, useRead: pipe) { event in
                switch event {
                case .data(let rope): handler(.data(rope))
                case .end: handler(.end)
                case .failure(let error): handler(.failure(error))
                }
            }
            receiver.start()
        }
    }

    /// The address range of the ring's receive buffers (registering them if needed).
    package static func receiveBufferMemory(of ring: IORing) -> Range<UInt> {
        let result = Mutex<Range<UInt>?>(nil)
        let done = DispatchSemaphore(value: 0)
        ring.enqueue {
            result.withLock { $0 = ring.core.providedBuffers.memoryRange }
            done.signal()
        }
        done.wait()
        return result.withLock { $0! }
    }

    /// Whether the kernel has multishot read (Linux 6.7), which pipes need.
    package static func supportsReadMultishot(_ ring: IORing) -> Bool {
        let result = Mutex<Bool>(false)
        let done = DispatchSemaphore(value: 0)
        ring.enqueue {
            result.withLock { $0 = ring.core.supportsReadMultishot }
            done.signal()
        }
        done.wait()
        return result.withLock { $0 }
    }

    /// Runs `work` on `queue` through the ring's delivery path, from the ring thread: grouped
    /// into one `async` per DispatchQueue per turn, inline for the ring itself.
    package static func deliver(
        from ring: IORing,
        on queue: some IOQueue,
        _ work: @escaping @Sendable () -> Void
    ) {
        precondition(ring.isCurrentThread)
        ring.core.deliver(on: queue, work)
    }
}
