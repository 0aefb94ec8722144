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

/// The engine of one ring, as set up: its sizes, buffer rings and tear-down. (`_RingCore`'s
/// hot path — submit, reap — tests the two cases apart, without switching over this enum.)
internal enum _Backend {
    case uring(_URing)
    case readiness(_ReadinessEngine)

    /// Sets up the engine for a new ring, on the ring thread: `forced` (or `RINGIO_BACKEND`),
    /// else io_uring when the kernel allows it and has every operation RingIO uses, else the
    /// readiness engine.
    static func make(entries: UInt32, forced: RingLoop.Backend?) throws(RingSetupError) -> (_Backend, _BackendSelection)
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
                    .uring(try _URing(entries: entries, cqMultiple: 4)),
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
                    return (.uring(uring), _BackendSelection(backend: .ioUring, reason: "io_uring is available"))
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

    private static func readiness(entries: UInt32) throws(RingSetupError) -> _Backend {
        do throws(Errno) {
            return .readiness(try _ReadinessEngine(entries: entries))
        } catch {
            throw RingSetupError(errno: error, readiness: true)
        }
    }

    var submissionEntries: UInt32 {
        switch self {
        case .uring(let uring): return uring.submissionEntries
        case .readiness(let engine): return engine.submissionEntries
        }
    }

    var completionEntries: UInt32 {
        switch self {
        case .uring(let uring): return uring.completionEntries
        case .readiness(let engine): return engine.completionEntries
        }
    }

    /// The setup flags io_uring accepted; none for the readiness engine.
    var setupFlags: UInt32 {
        if case .uring(let uring) = self { return uring.setupFlags }
        return 0
    }

    /// Whether io_uring's descriptor is registered with the ring thread; never for the
    /// readiness engine.
    var registeredRingDescriptor: Bool {
        if case .uring(let uring) = self { return uring.registeredRingDescriptor }
        return false
    }

    /// io_uring's feature flags; none for the readiness engine.
    var features: UInt32 {
        if case .uring(let uring) = self { return uring.features }
        return 0
    }

    func registerBufferRing(entries: UInt16, group: UInt16) throws(Errno) -> _BufferRingHandle {
        switch self {
        case .uring(let uring): return try uring.registerBufferRing(entries: entries, group: group)
        case .readiness(let engine): return try engine.registerBufferRing(entries: entries, group: group)
        }
    }

    func unregisterBufferRing(_ handle: _BufferRingHandle) {
        switch self {
        case .uring(let uring): uring.unregisterBufferRing(handle)
        case .readiness(let engine): engine.unregisterBufferRing(handle)
        }
    }

    func close() {
        switch self {
        case .uring(let uring): uring.close()
        case .readiness(let engine): engine.close()
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
