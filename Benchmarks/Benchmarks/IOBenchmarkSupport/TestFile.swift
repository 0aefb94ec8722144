//===----------------------------------------------------------------------===//
// RingIO — benchmarks: the large file the read benchmarks (and run-fio-baseline.sh) read.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

#if canImport(Glibc)
import Glibc
#endif

/// The file read by the `FileRead_*` benchmarks and the throughput comparison's `file-read`, created once and reused by later runs.
///
/// Environment (run-fio-baseline.sh reads the same two variables the same way):
///
/// - `RINGIO_BENCH_FILE_SIZE`: bytes, optionally with a binary suffix `K`, `M` or `G`
///   (KiB, MiB, GiB). Default `2G` (2 GiB).
/// - `RINGIO_BENCH_FILE`: the path. Default `/tmp/ringio-bench-<bytes>.bin`.
///
/// Contents: each 8-byte little-endian word holds its own offset, so a read can be checked
/// anywhere without a second copy of the file.
public enum TestFile {
    public static let defaultSize = "2G"

    /// The size in bytes, from `RINGIO_BENCH_FILE_SIZE`.
    public static let size: Int = {
        let text = getenv("RINGIO_BENCH_FILE_SIZE").map { String(cString: $0) } ?? defaultSize
        guard let size = parseSize(text), size > 0, size % 8 == 0 else {
            fatalError(
                "RINGIO_BENCH_FILE_SIZE=\(text): expected a positive multiple of 8 bytes, as 123, 64K, 512M or 2G"
            )
        }
        return size
    }()

    /// The path, from `RINGIO_BENCH_FILE`.
    public static let path: String = {
        if let path = getenv("RINGIO_BENCH_FILE"), path.pointee != 0 { return String(cString: path) }
        return "/tmp/ringio-bench-\(size).bin"
    }()

    /// `123`, `64K`, `512M`, `2G` (binary multiples), or `nil`.
    public static func parseSize(_ text: String) -> Int? {
        let shifts: [Character: Int] = ["K": 10, "k": 10, "M": 20, "m": 20, "G": 30, "g": 30]
        if let last = text.last, let shift = shifts[last] {
            return Int(text.dropLast()).flatMap { $0 <= Int.max >> shift ? $0 << shift : nil }
        }
        return Int(text)
    }

    /// The word at `offset` (a multiple of 8).
    @inline(__always)
    public static func word(at offset: Int) -> UInt64 {
        UInt64(offset).littleEndian
    }

    /// Creates the file unless a file of the right size and contents is already there, and
    /// syncs it, so no write-back runs during a measurement. Returns a read-only descriptor.
    public static func open() -> CInt {
        if !self.looksRight() {
            self.create()
        }
        let fd = Glibc.open(self.path, O_RDONLY | O_CLOEXEC)
        check(fd >= 0, "open(\(self.path)) failed: errno \(errno)")
        return fd
    }

    /// Size and a few sampled words: the file was made by `create` for this size.
    private static func looksRight() -> Bool {
        var status = stat()
        guard stat(self.path, &status) == 0, status.st_size == self.size else { return false }
        let fd = Glibc.open(self.path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        for offset in [0, self.size / 2 & ~7, self.size - 8] {
            var word: UInt64 = 0
            guard pread(fd, &word, 8, off_t(offset)) == 8, word == self.word(at: offset) else { return false }
        }
        return true
    }

    private static func create() {
        let partial = "\(self.path).partial-\(getpid())"
        let fd = Glibc.open(partial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        check(fd >= 0, "open(\(partial)) failed: errno \(errno)")
        let chunk = 1 << 20
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunk, alignment: 8)
        defer { buffer.deallocate() }
        var offset = 0
        while offset < self.size {
            let count = min(chunk, self.size - offset)
            let words = buffer.bindMemory(to: UInt64.self)
            for index in 0..<(count / 8) {
                words[index] = self.word(at: offset + index * 8)
            }
            var written = 0
            while written < count {
                let result = pwrite(fd, buffer.baseAddress! + written, count - written, off_t(offset + written))
                if result < 0 && errno == EINTR { continue }
                check(result > 0, "writing \(partial) failed: errno \(errno)")
                written += result
            }
            offset += count
        }
        check(fsync(fd) == 0, "fsync(\(partial)) failed: errno \(errno)")
        check(close(fd) == 0, "close(\(partial)) failed: errno \(errno)")
        check(rename(partial, self.path) == 0, "rename to \(self.path) failed: errno \(errno)")
    }

    /// Checks a delivered piece, `bytes` read at `offset`: the first word of every 4 KiB page
    /// that starts in it (pieces may have any size).
    public static func verify(_ bytes: UnsafeRawBufferPointer, at offset: Int) {
        var page = (offset + 4095) & ~4095
        while page + 8 <= offset + bytes.count {
            let word = bytes.loadUnaligned(fromByteOffset: page - offset, as: UInt64.self)
            check(word == self.word(at: page), "file read: wrong bytes at offset \(page)")
            page += 4096
        }
    }
}
