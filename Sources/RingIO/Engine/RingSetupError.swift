//===----------------------------------------------------------------------===//
// RingIO — the engine: why a ring could not be set up, and what to do about it.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import SystemPackage

/// io_uring could not be set up: the kernel's answer, with its likely cause and remedy.
///
///     do {
///         let ring = try RingLoop()
///     } catch {
///         print(error)   // "io_uring is disabled (EPERM): … set kernel.io_uring_disabled=0 …"
///     }
public struct RingSetupError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What the kernel answered.
    public let errno: Errno

    public init(errno: Errno) {
        self.errno = errno
    }

    /// The cause and the remedy, in one sentence each.
    public var description: String {
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
