//===----------------------------------------------------------------------===//
// RingIO — the engine: why a ring could not be set up, and what to do about it.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import SystemPackage

/// A ring could not be set up: the kernel's answer, with its likely cause and remedy.
///
/// Where io_uring is refused (EPERM, ENOSYS, EINVAL), a loop runs on the readiness engine
/// instead (``RingLoop/Backend``): this error then comes only when io_uring is forced
/// (`RINGIO_BACKEND=io_uring`), when `RINGIO_BACKEND` names no engine, when `entries` is out
/// of range (which io_uring would refuse with EINVAL as well, and which must not read as a
/// refusal of io_uring), or for a resource error (ENOMEM, EMFILE), which switching engines would
/// not cure.
///
///     do {
///         let ring = try RingLoop()
///     } catch {
///         print(error)   // "io_uring is disabled (EPERM): … set kernel.io_uring_disabled=0 …"
///     }
public struct RingSetupError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What the kernel answered.
    public let errno: Errno
    /// Set up the readiness engine (epoll) failed rather than io_uring.
    private var readiness = false
    /// `RINGIO_BACKEND`'s value, when it names no engine.
    private var badBackendName: String?
    /// The `entries` asked for, when out of ``RingLoop/entriesRange``.
    private var badEntries: UInt32?

    /// The error of a set-up that failed with `errno`; ``description`` gives the cause and
    /// remedy RingIO knows for it.
    public init(errno: Errno) {
        self.errno = errno
    }

    internal init(errno: Errno, readiness: Bool) {
        self.errno = errno
        self.readiness = readiness
    }

    internal init(badBackendName: String) {
        self.errno = .invalidArgument
        self.badBackendName = badBackendName
    }

    internal init(badEntries: UInt32) {
        self.errno = .invalidArgument
        self.badEntries = badEntries
    }

    /// The cause and the remedy, in one sentence each.
    public var description: String {
        if let name = self.badBackendName {
            return "RINGIO_BACKEND=\(name) names no engine (EINVAL): set it to io_uring or epoll, or unset "
                + "it to take io_uring where the kernel allows it and epoll elsewhere."
        }
        if let entries = self.badEntries {
            return "entries: \(entries) is out of range (EINVAL): a ring has 1...16384 submission entries (its "
                + "completion queue, four times larger, is at most io_uring's 65,536); on either engine."
        }
        if self.readiness {
            return "The readiness engine could not be set up (\(self.errno)): epoll_create1 or eventfd "
                + "failed; close descriptors or raise RLIMIT_NOFILE."
        }
        switch self.errno {
        case .noFunction:
            return "io_uring is not available (ENOSYS): this kernel is too old or was built without "
                + "CONFIG_IO_URING. RingIO needs Linux 5.19 or later; 6.1 or later is recommended."
        case .notPermitted:
            return "io_uring is disabled (EPERM): the sysctl kernel.io_uring_disabled forbids it, or a "
                + "seccomp profile (such as a container runtime's default) blocks io_uring_setup. Set "
                + "kernel.io_uring_disabled=0 (or add this process's group to kernel.io_uring_group), or "
                + "run the container with a seccomp profile that allows io_uring_setup, io_uring_enter "
                + "and io_uring_register."
        case .noMemory:
            return "io_uring could not allocate its rings (ENOMEM): the locked-memory limit is too low "
                + "for this kernel's accounting. Raise RLIMIT_MEMLOCK (ulimit -l) or use fewer or "
                + "smaller rings."
        case .tooManyOpenFiles, .tooManyOpenFilesInSystem:
            return "io_uring could not get a file descriptor (\(self.errno)): close descriptors or "
                + "raise RLIMIT_NOFILE."
        default:
            return "io_uring could not be set up: \(self.errno)."
        }
    }
}
