//===----------------------------------------------------------------------===//
// RingIO — hooks for the test suites (package-visible, not public API).
//===----------------------------------------------------------------------===//

import Dispatch
import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// Test hooks over the engine's internal API.
package enum _RingIOTesting {
    /// Whether this process can set up io_uring at all; the error the kernel gave if not.
    package static func ringSetUpError() -> RingSetupError? {
        do {
            let ring = try RingLoop(entries: 4)
            ring.shutdown()
            return nil
        } catch {
            return error
        }
    }

    /// A completion as a test sees it.
    package struct Completion: Sendable, Equatable {
        package var result: Int32
        package var hasMore: Bool

        package init(result: Int32, hasMore: Bool) {
            self.result = result
            self.hasMore = hasMore
        }
    }

    /// Submits `request` from the ring thread; `completion` runs on the ring thread for each
    /// of its completions. `keepAlive` is held until the final completion (the owner of the
    /// request's pointers). Call from any thread.
    ///
    /// - Parameter submitted: Receives the operation's user data on the ring thread.
    package static func submit(
        _ request: @escaping @Sendable @autoclosure () -> RingRequest,
        on ring: RingLoop,
        keepAlive: (any Sendable)? = nil,
        submitted: (@Sendable (UInt64) -> Void)? = nil,
        completion: @escaping @Sendable (Completion) -> Void
    ) {
        ring.enqueue {
            let userData = ring.core.submit(request(), target: self.target(keepAlive: keepAlive, completion))
            submitted?(userData)
        }
    }

    /// A target reporting each completion, holding `keepAlive` until the final one.
    private static func target(
        keepAlive: (any Sendable)?,
        _ completion: @escaping @Sendable (Completion) -> Void
    ) -> _ClosureTarget {
        _ClosureTarget { result, flags in
            if !flags.hasMore { withExtendedLifetime(keepAlive) {} }
            completion(Completion(result: result, hasMore: flags.hasMore))
        }
    }

    /// Submits `request` and, in the same ring turn (so the same submission), a cancellation
    /// of it: the two race in the kernel.
    package static func submitThenCancel(
        _ request: @escaping @Sendable @autoclosure () -> RingRequest,
        on ring: RingLoop,
        keepAlive: (any Sendable)? = nil,
        completion: @escaping @Sendable (Completion) -> Void,
        cancelCompletion: @escaping @Sendable (Int32) -> Void
    ) {
        ring.enqueue {
            let userData = ring.core.submit(request(), target: self.target(keepAlive: keepAlive, completion))
            ring.core.submit(
                .cancel(userData: userData),
                target: _ClosureTarget { result, _ in cancelCompletion(result) }
            )
        }
    }

    /// Submits `request` linked to a timeout of `nanoseconds`; `completion` gets the request's
    /// final result, `timeoutCompletion` the timeout's.
    package static func submit(
        _ request: @escaping @Sendable @autoclosure () -> RingRequest,
        on ring: RingLoop,
        timeoutNanoseconds: Int64,
        completion: @escaping @Sendable (Int32) -> Void,
        timeoutCompletion: @escaping @Sendable (Int32) -> Void
    ) {
        ring.enqueue {
            let spec = _KernelTimespec(nanoseconds: timeoutNanoseconds)
            ring.core.submit(
                request(),
                target: _ClosureTarget { result, _ in completion(result) },
                timeout: spec,
                timeoutTarget: _ClosureTarget { result, _ in
                    withExtendedLifetime(spec) {}
                    timeoutCompletion(result)
                }
            )
        }
    }

    /// Submits `count` no-ops in one ring turn; each completion calls `completion`.
    package static func nops(_ count: Int, on ring: RingLoop, completion: @escaping @Sendable (Int32) -> Void) {
        ring.enqueue {
            let target = _ClosureTarget { result, _ in completion(result) }
            for _ in 0..<count {
                ring.core.submit(.nop, target: target)
            }
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
        on ring: RingLoop,
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

    /// Runs `body` on the ring thread and returns its result.
    private static func onRing<R: Sendable>(_ ring: RingLoop, _ body: @escaping @Sendable () -> R) -> R {
        let result = Mutex<R?>(nil)
        let done = DispatchSemaphore(value: 0)
        ring.enqueue {
            let value = body()
            result.withLock { $0 = value }
            done.signal()
        }
        done.wait()
        return result.withLock { $0! }
    }

    /// The address range of the ring's receive buffers (registering them if needed).
    package static func receiveBufferMemory(of ring: RingLoop) -> Range<UInt> {
        self.onRing(ring) { ring.core.providedBuffers.memoryRange }
    }

    /// Whether the kernel has multishot read (Linux 6.7), which pipes need.
    package static func supportsReadMultishot(_ ring: RingLoop) -> Bool {
        self.onRing(ring) { ring.core.supportsReadMultishot }
    }

    /// Stats `path` through the ring; the file's size, or the error.
    package static func statxSize(path: String, on ring: RingLoop) -> Result<UInt64, Errno> {
        let outcome = Mutex<Result<UInt64, Errno>?>(nil)
        let done = DispatchSemaphore(value: 0)
        ring.enqueue {
            let result = _StatxResult()
            let cPath = strdup(path)!
            ring.core.submit(
                .statx(directory: AT_FDCWD, path: cPath, flags: 0, mask: .size, result: result),
                target: _ClosureTarget { value, _ in
                    let size = result.size
                    free(cPath)
                    outcome.withLock { $0 = value < 0 ? .failure(Errno(rawValue: -value)) : .success(size) }
                    done.signal()
                }
            )
        }
        done.wait()
        return outcome.withLock { $0! }
    }

    /// Runs `work` on `queue` through the ring's delivery path, from the ring thread: grouped
    /// into one `async` per DispatchQueue per turn, inline for the ring itself.
    package static func deliver(from ring: RingLoop, on queue: some IOQueue, _ work: @escaping @Sendable () -> Void) {
        precondition(ring.isCurrentThread)
        ring.core.deliver(on: queue, work)
    }
}
