//===----------------------------------------------------------------------===//
// RingIO
//===----------------------------------------------------------------------===//

// `import RingIO` is all a user writes: the rope comes with it.
@_exported import ByteRopes
