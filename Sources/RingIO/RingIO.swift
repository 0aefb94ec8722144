//===----------------------------------------------------------------------===//
// RingIO
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

// `import RingIO` is all a user writes: the rope comes with it, and so do the types of
// swift-system that RingIO's API names (`Errno`, `FileDescriptor`, `FilePath`,
// `FilePermissions`).
@_exported import ByteRopes
@_exported import SystemPackage

// Rule numbers in this module's comments and tests: R20–R81 are dispatch I/O's rules, in
// RingIO.docc/DispatchIOContract.md; D1–D8 RingIO's deliberate differences from them, in
// RingIO.docc/ComingFromDispatch.md; R1–R19 dispatch data's, in
// Sources/ByteRopes/ByteRopes.docc/DispatchDataContract.md.
