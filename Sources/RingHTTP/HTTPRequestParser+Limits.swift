//===----------------------------------------------------------------------===//
// RingIO — RingHTTP
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

extension HTTPRequestParser {
    /// The sizes a request may not exceed; each is checked as soon as the bytes received
    /// prove it exceeded, so the parser never buffers more than about these sizes.
    ///
    /// | limit | default | error when exceeded |
    /// |---|---|---|
    /// | ``maxRequestLineLength`` | 8 KiB | ``HTTPParseError/uriTooLong`` (414) |
    /// | ``maxHeaderSectionLength`` | 16 KiB | ``HTTPParseError/headersTooLarge`` (431) |
    /// | ``maxBodyLength`` | 1 MiB | ``HTTPParseError/bodyTooLarge`` (413) |
    /// | ``maxChunkLineLength`` | 4 KiB | ``HTTPParseError/badRequest`` (400) |
    ///
    /// A request exactly at a limit is accepted; one byte more is refused.
    public struct Limits: Hashable, Sendable {
        /// The longest request line, `method SP target SP version`, without its CRLF.
        ///
        /// Refused with 414 as soon as this many bytes plus two have arrived without a line
        /// end.
        public var maxRequestLineLength: Int

        /// The longest header section: the field lines with their CRLFs plus the empty line
        /// that ends them (2 bytes for a request without fields). Also bounds a chunked body's
        /// trailer section, measured the same way.
        ///
        /// Refused with 431 as soon as this many bytes after the request line have arrived
        /// without the end of the section.
        public var maxHeaderSectionLength: Int

        /// The longest body: the `Content-Length`, or the sum of a chunked body's chunk sizes.
        ///
        /// A larger `Content-Length` is refused with 413 as soon as the head is parsed,
        /// before any of the body arrives; a chunked body as soon as the chunk-size line that
        /// takes it over the limit arrives.
        public var maxBodyLength: Int

        /// The longest chunk-size line of a chunked body, hexadecimal size and chunk
        /// extensions included, without its CRLF. Longer ones are refused with 400 as soon as
        /// this many bytes plus two have arrived without a line end.
        public var maxChunkLineLength: Int

        /// Creates limits; every argument has the default shown in the table above.
        ///
        /// ``HTTPRequestParser/init(limits:)`` checks them: `maxRequestLineLength` in
        /// 1...2³⁰, `maxHeaderSectionLength` in 2...2³⁰ (so that a head's offsets fit 32
        /// bits), `maxBodyLength` in 0...2⁴⁰ and `maxChunkLineLength` in 1...2³⁰.
        ///
        /// - Complexity: O(1).
        public init(
            maxRequestLineLength: Int = 8 * 1024,
            maxHeaderSectionLength: Int = 16 * 1024,
            maxBodyLength: Int = 1024 * 1024,
            maxChunkLineLength: Int = 4 * 1024
        ) {
            self.maxRequestLineLength = maxRequestLineLength
            self.maxHeaderSectionLength = maxHeaderSectionLength
            self.maxBodyLength = maxBodyLength
            self.maxChunkLineLength = maxChunkLineLength
        }

        /// Traps unless every limit is in its range (see the initializer).
        func validate() {
            let ceiling = 1 << 30
            precondition((1...ceiling).contains(self.maxRequestLineLength), "maxRequestLineLength out of 1...2^30")
            precondition((2...ceiling).contains(self.maxHeaderSectionLength), "maxHeaderSectionLength out of 2...2^30")
            precondition((0...(1 << 40)).contains(self.maxBodyLength), "maxBodyLength out of 0...2^40")
            precondition((1...ceiling).contains(self.maxChunkLineLength), "maxChunkLineLength out of 1...2^30")
        }
    }
}
