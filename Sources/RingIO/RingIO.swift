//===----------------------------------------------------------------------===//
// RingIO
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

// `import RingIO` is all a user writes: the rope comes with it.
@_exported import ByteRopes
