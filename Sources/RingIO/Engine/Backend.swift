//===----------------------------------------------------------------------===//
// RingIO — the engine: io_uring, or the readiness engine where io_uring is refused.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import CLiburing
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

extension RingLoop {
    /// The engine that runs a loop's operations.
    ///
    /// Both run the same requests with the same completions, so every channel, source and
    /// listener behaves alike on either (DESIGN.md, "Two engines"). A loop takes io_uring when
    /// the kernel allows it and has every operation RingIO uses, and the readiness engine
    /// where io_uring is refused — a container whose seccomp profile denies it (Docker 25+,
    /// containerd 2.0), `kernel.io_uring_disabled`, gVisor, a kernel built without it. A
    /// resource error (ENOMEM from a low `RLIMIT_MEMLOCK`, EMFILE) is never a reason to
    /// switch: it fails set-up with its own ``RingSetupError``.
    ///
    /// Force one with the `backend:` parameter of ``RingLoop/init(entries:receiveBuffers:receiveBufferSize:backend:)``
    /// or ``RingLoopGroup/init(count:entries:backend:)``, or for the whole process with the
    /// environment variable `RINGIO_BACKEND=io_uring` or `RINGIO_BACKEND=epoll`. Forcing
    /// io_uring where it is refused fails with the same ``RingSetupError`` as before.
    public enum Backend: String, Sendable, CaseIterable, CustomStringConvertible {
        /// io_uring: operations are submitted to the kernel in batches and complete there.
        case ioUring = "io_uring"
        /// The readiness engine: epoll and non-blocking system calls for sockets and pipes,
        /// a small thread pool for regular files, in user space behind the same requests.
        case epoll

        public var description: String { self.rawValue }

        /// The engine `RINGIO_BACKEND` names, `nil` when it is not set (or empty).
        ///
        /// - Throws: ``RingSetupError`` when it names neither engine.
        static func fromEnvironment() throws(RingSetupError) -> Backend? {
            guard let value = getenv("RINGIO_BACKEND").map({ String(cString: $0) }), !value.isEmpty else {
                return nil
            }
            switch value.lowercased() {
            case "io_uring", "iouring", "uring": return .ioUring
            case "epoll", "readiness": return .epoll
            default: throw RingSetupError(badBackendName: value)
            }
        }
    }

    /// The engine that runs this loop's operations.
    public var backend: Backend {
        self.core.backendSelection.backend
    }

    /// Why this loop runs on ``backend``, in a sentence: for instance "io_uring is available",
    /// "RINGIO_BACKEND=epoll", or, on the readiness engine, io_uring's refusal with its cause
    /// and remedy (as ``RingSetupError`` words it).
    public var backendReason: String {
        self.core.backendSelection.reason
    }
}

/// The engine a loop took, and why.
internal struct _BackendSelection: Sendable {
    let backend: RingLoop.Backend
    let reason: String
}

/// The engine of one ring: io_uring, or the readiness engine where io_uring is refused. The
/// one place that tells the two apart: the ring core submits, waits and reaps through it, and
/// never asks which it is.
///
/// A struct of two optionals, exactly one set, rather than a protocol or an enum with
/// payloads: each method tests one optional (a load and a compare, predicted the same way for
/// the ring's whole life) and calls the engine directly — no existential and no copy of an
/// enum that would retain its engine per call (+2% instructions per echo round trip when the
/// core switched over an enum). The core keeps it in a `let`, so calls borrow it.
internal struct _Engine {
    /// io_uring, when the ring runs on it.
    let uring: _URing?
    /// The readiness engine, when the ring runs on it.
    let readiness: _ReadinessEngine?

    private init(uring: _URing) {
        self.uring = uring
        self.readiness = nil
    }

    private init(readiness: _ReadinessEngine) {
        self.uring = nil
        self.readiness = readiness
    }

    /// Sets up the engine for a new ring, on the ring thread: `forced` (or `RINGIO_BACKEND`),
    /// else io_uring when the kernel allows it and has every operation RingIO uses, else the
    /// readiness engine.
    static func make(entries: UInt32, forced: RingLoop.Backend?) throws(RingSetupError) -> (_Engine, _BackendSelection)
    {
        let requested: RingLoop.Backend?
        let why: String
        if let forced {
            requested = forced
            why = "requested by the caller"
        } else {
            requested = try RingLoop.Backend.fromEnvironment()
            why = "RINGIO_BACKEND=\(requested?.rawValue ?? "")"
        }
        switch requested {
        case .ioUring?:
            do throws(Errno) {
                return (
                    _Engine(uring: try _URing(entries: entries, cqMultiple: 4)),
                    _BackendSelection(backend: .ioUring, reason: why)
                )
            } catch {
                throw RingSetupError(errno: error)
            }
        case .epoll?:
            return (try Self.readiness(entries: entries), _BackendSelection(backend: .epoll, reason: why))
        case nil:
            let refusal: String
            do throws(Errno) {
                let uring = try _URing(entries: entries, cqMultiple: 4)
                let missing = uring.missingOperations()
                if missing.isEmpty {
                    return (
                        _Engine(uring: uring), _BackendSelection(backend: .ioUring, reason: "io_uring is available")
                    )
                }
                uring.close()
                refusal =
                    "io_uring lacks operations RingIO uses (\(missing.joined(separator: ", "))): this kernel is too old"
            } catch  where error == .notPermitted || error == .noFunction || error == .invalidArgument {
                refusal = RingSetupError(errno: error).description
            } catch {
                throw RingSetupError(errno: error)  // a resource error is not a reason to switch
            }
            return (try Self.readiness(entries: entries), _BackendSelection(backend: .epoll, reason: refusal))
        }
    }

    private static func readiness(entries: UInt32) throws(RingSetupError) -> _Engine {
        do throws(Errno) {
            return _Engine(readiness: try _ReadinessEngine(entries: entries))
        } catch {
            throw RingSetupError(errno: error, readiness: true)
        }
    }

    // MARK: Set-up

    var submissionEntries: UInt32 {
        self.uring?.submissionEntries ?? self.readiness.unsafelyUnwrapped.submissionEntries
    }

    var completionEntries: UInt32 {
        self.uring?.completionEntries ?? self.readiness.unsafelyUnwrapped.completionEntries
    }

    /// The setup flags io_uring accepted; none for the readiness engine.
    var setupFlags: UInt32 { self.uring?.setupFlags ?? 0 }

    /// Whether io_uring's descriptor is registered with the ring thread; never for the
    /// readiness engine.
    var registeredRingDescriptor: Bool { self.uring?.registeredRingDescriptor ?? false }

    /// io_uring's feature flags; none for the readiness engine.
    var features: UInt32 { self.uring?.features ?? 0 }

    /// The ring's own wake-up eventfd: the readiness engine keeps its registration for good.
    func adoptWakeUpDescriptor(_ fd: CInt) {
        self.readiness?.persistentFD = fd
    }

    // MARK: Submitting

    /// Hands a request to the engine for the next flush: an SQE for io_uring, a queued request
    /// for the readiness engine. False when io_uring's submission queue is full: flush, then
    /// push again.
    @inline(__always)
    func push(_ request: RingRequest, userData: UInt64) -> Bool {
        if let engine = self.readiness {
            engine.push(request, userData: userData)
            return true
        }
        guard let sqe = self.uring.unsafelyUnwrapped.nextSQE() else { return false }
        request.prepare(sqe, userData: userData)
        return true
    }

    /// Whether `count` requests can be pushed now without a flush (always, for the readiness
    /// engine).
    @inline(__always)
    func hasSubmissionSpace(_ count: UInt32) -> Bool {
        guard let uring = self.uring else { return true }
        return uring.submissionSpaceLeft >= count
    }

    /// Pushes `first` and `second` as a chain: `second` starts once `first` has completed in
    /// full; a `first` that fails or comes up short ends `second` with ECANCELED
    /// (IOSQE_IO_LINK; the readiness engine runs the same rule).
    ///
    /// - Precondition: ``hasSubmissionSpace(_:)`` for 2: a chain cut by a flush between its
    ///   entries is no chain.
    func pushLinked(
        _ first: RingRequest,
        userData firstUserData: UInt64,
        then second: RingRequest,
        userData secondUserData: UInt64
    ) {
        if let engine = self.readiness {
            engine.push(first, userData: firstUserData, linkedToNext: true)
            engine.push(second, userData: secondUserData)
            return
        }
        let uring = self.uring.unsafelyUnwrapped
        guard let firstEntry = uring.nextSQE(), let secondEntry = uring.nextSQE() else {
            preconditionFailure("RingIO: a linked pair pushed without room for both")
        }
        first.prepare(firstEntry, userData: firstUserData)
        firstEntry.pointee.flags |= CLiburing_IOSQE_IO_LINK
        second.prepare(secondEntry, userData: secondUserData)
    }

    /// Submits what was pushed and, when `wait`, waits for a completion. Returns how many
    /// requests were submitted.
    ///
    /// - Throws: `EBUSY`/`EAGAIN` when io_uring's completion queue overflowed: reap, then
    ///   call again.
    @inline(__always)
    func submit(wait: Bool) throws(Errno) -> Int {
        if let engine = self.readiness { return try engine.submit(wait: wait) }
        return try self.uring.unsafelyUnwrapped.submit(wait: wait)
    }

    // MARK: Completing

    /// Copies up to `buffer.count` ready completions into `buffer`.
    @inline(__always)
    func reap(into buffer: UnsafeMutableBufferPointer<RingCompletion>) -> Int {
        if let engine = self.readiness { return engine.reap(into: buffer) }
        return self.uring.unsafelyUnwrapped.reap(into: buffer)
    }

    /// Whether completions wait in io_uring's overflow list (never on the readiness engine).
    @inline(__always)
    var hasOverflow: Bool {
        self.uring?.hasOverflow ?? false
    }

    // MARK: Descriptors and buffers

    /// The ring's user is done with `fd`: the readiness engine lets go of its registration
    /// (io_uring registers nothing).
    func forget(_ fd: CInt) {
        self.readiness?.forget(fd)
    }

    func registerBufferRing(entries: UInt16, group: UInt16) throws(Errno) -> _BufferRingHandle {
        if let engine = self.readiness { return try engine.registerBufferRing(entries: entries, group: group) }
        return try self.uring.unsafelyUnwrapped.registerBufferRing(entries: entries, group: group)
    }

    func unregisterBufferRing(_ handle: _BufferRingHandle) {
        if let engine = self.readiness {
            engine.unregisterBufferRing(handle)
        } else {
            self.uring.unsafelyUnwrapped.unregisterBufferRing(handle)
        }
    }

    /// Tears the engine down.
    func close() {
        if let engine = self.readiness {
            engine.close()
        } else {
            self.uring.unsafelyUnwrapped.close()
        }
    }
}

extension _URing {
    /// The operations RingIO submits that this kernel's io_uring lacks (by name), from its
    /// probe (not supported before Linux 5.6: then only the buffer ring is checked), and the
    /// provided-buffer ring every receive uses (Linux 5.19), tried by registering one.
    /// The corresponding liburing calls are `io_uring_get_probe_ring` and
    /// `io_uring_opcode_supported`.
    func missingOperations() -> [String] {
        let needed: [(io_uring_op, String)] = [
            (IORING_OP_NOP, "NOP"), (IORING_OP_READ, "READ"), (IORING_OP_WRITE, "WRITE"),
            (IORING_OP_WRITEV, "WRITEV"), (IORING_OP_SEND, "SEND"), (IORING_OP_SENDMSG, "SENDMSG"),
            (IORING_OP_RECV, "RECV"), (IORING_OP_ACCEPT, "ACCEPT"), (IORING_OP_OPENAT, "OPENAT"),
            (IORING_OP_CLOSE, "CLOSE"), (IORING_OP_TIMEOUT, "TIMEOUT"), (IORING_OP_POLL_ADD, "POLL_ADD"),
            (IORING_OP_SPLICE, "SPLICE"), (IORING_OP_ASYNC_CANCEL, "ASYNC_CANCEL"),
            (IORING_OP_CONNECT, "CONNECT"), (IORING_OP_SHUTDOWN, "SHUTDOWN"), (IORING_OP_RECVMSG, "RECVMSG"),
        ]
        var missing: [String] = []
        if let probe = self.probe() {
            defer { io_uring_free_probe(probe) }
            missing = needed.filter { io_uring_opcode_supported(probe, Int32($0.0.rawValue)) == 0 }
                .map { "IORING_OP_" + $0.1 }
        }
        // Provided-buffer rings (Linux 5.19) are no opcode: registering one is the probe.
        do throws(Errno) {
            self.unregisterBufferRing(try self.registerBufferRing(entries: 1, group: UInt16.max))
        } catch {
            missing.append("IORING_REGISTER_PBUF_RING")
        }
        return missing
    }
}
