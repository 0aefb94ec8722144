//===----------------------------------------------------------------------===//
// RingIO — the engine: which backend a loop runs on, and why.
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
    /// listener behaves alike on either (<doc:ComingFromDispatch#Two-engines>). A loop takes
    /// io_uring when the kernel allows it and has every operation RingIO uses, and the
    /// readiness engine where io_uring is refused — a container whose seccomp profile denies it
    /// (Docker 25+, containerd 2.0), `kernel.io_uring_disabled`, gVisor, a kernel built without
    /// it or too old to have every operation. A resource error (ENOMEM from a low
    /// `RLIMIT_MEMLOCK`, EMFILE) is never a reason to switch: it fails set-up with its own
    /// ``RingSetupError``.
    ///
    /// Force one with the `backend:` parameter of ``RingLoop/init(entries:receiveBuffers:receiveBufferSize:backend:)``
    /// or ``RingLoopGroup/init(count:entries:backend:)``, or for the whole process with the
    /// environment variable `RINGIO_BACKEND=io_uring` or `RINGIO_BACKEND=epoll`. Forcing
    /// io_uring where it is refused fails with the ``RingSetupError`` that names the cause
    /// and the remedy.
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
