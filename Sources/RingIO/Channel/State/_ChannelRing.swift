//===----------------------------------------------------------------------===//
// RingIO — channels: what the channels keep per ring.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Synchronization
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// What the channels keep per ring (the ring's ``_RingCore/local(_:)``): the open-path budget,
/// and the entries not yet finished, which the ring closes as it exits. Ring thread only.
internal final class _ChannelRing: _RingLocal {
    /// Path channels holding an open descriptor on this ring.
    var openPaths = 0
    /// Path entries waiting for the open-path budget, in order.
    var openQueue: [_DescriptorEntry] = []
    /// The descriptor entries with channels on this ring that are not finished (see
    /// `_DescriptorEntry.attach` and `finishIfIdle`), in no particular order; each knows its
    /// index (`openIndex`), so that one joins and leaves with no hashing.
    // @exclusivity(unchecked): ring-thread state, accesses never overlap (see _RingCore).
    @exclusivity(unchecked) private(set) var openEntries: [_DescriptorEntry] = []

    init(core: _RingCore) {}

    /// `entry` has a channel and is not finished: it joins `openEntries`.
    func opened(_ entry: _DescriptorEntry) {
        assert(entry.openIndex == nil)
        entry.openIndex = self.openEntries.count
        self.openEntries.append(entry)
    }

    /// `entry` is finished: it leaves `openEntries` (the last one takes its place).
    func finished(_ entry: _DescriptorEntry) {
        guard let index = entry.openIndex else { return }
        entry.openIndex = nil
        let last = self.openEntries.removeLast()
        if last !== entry {
            self.openEntries[index] = last
            last.openIndex = index
        }
    }

    /// Stops every channel of the entries still open (the ring is exiting, nothing in
    /// flight); returns whether there was any.
    func ringIsExiting() -> Bool {
        let entries = self.openEntries.filter { !$0.closingForRingExit }
        for entry in entries { entry.closeForRingExit() }
        return !entries.isEmpty
    }
}
