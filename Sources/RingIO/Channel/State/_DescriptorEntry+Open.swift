//===----------------------------------------------------------------------===//
// RingIO — channels: opening a path channel's file lazily.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

extension _DescriptorEntry {
    // MARK: Lazy open

    /// Calls `body` with `nil` once the descriptor is open, or with the open's error.
    @inline(__always)
    func withDescriptor(_ body: @escaping (Errno?) -> Void) {
        switch self.openState {
        case .open:
            body(nil)
        case .failed(let error):
            body(error)
        case .opening, .notOpened:
            self.waitForOpen(body)
        }
    }

    /// A path channel's descriptor is not open yet: `body` waits for the open, which starts
    /// now (or when the ring's open-path budget allows) if it has not.
    @inline(never)
    func waitForOpen(_ body: @escaping (Errno?) -> Void) {
        self.openWaiters.append({ [unowned self] in
            if case .failed(let error) = self.openState { body(error) } else { body(nil) }
        })
        guard case .notOpened = self.openState else { return }
        self.openState = .opening
        if self.channelRing.openPaths < _ChannelLimits.openPathsPerRing {
            self.submitOpen()
        } else {
            self.channelRing.openQueue.append(self)
        }
    }

    func submitOpen() {
        self.channelRing.openPaths += 1
        let path = self.path!
        self.core.submit(
            .openat(directory: AT_FDCWD, path: path.cString, flags: path.flags, mode: path.permissions),
            target: self,
            context: Tag.open
        )
    }

    func opened(result: Int32) {
        if result >= 0 {
            self.fd = result
            self.openState = .open
            // Only where the channel is not closed: a close on another thread stores
            // `closedDescriptor` first, and the exchange then leaves it (a check of
            // `closeRequested` before a store would race with a close between the two).
            for channel in self.channels {
                _ = channel.descriptor.compareExchange(expected: -1, desired: result, ordering: .acquiringAndReleasing)
            }
        } else {
            self.openState = .failed(Errno(rawValue: -result))
            self.releaseOpenBudget()
        }
        let waiters = self.openWaiters
        self.openWaiters.removeAll()
        for waiter in waiters { waiter() }
        self.finishIfIdle()
    }

    func releaseOpenBudget() {
        self.channelRing.openPaths -= 1
        if !self.channelRing.openQueue.isEmpty {
            self.channelRing.openQueue.removeFirst().submitOpen()
        }
    }
}
