//===----------------------------------------------------------------------===//
// RingIO — RingTLS tests: certificates made at test time, peer processes, sockets.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import Dispatch
import RingIO
import RingIOTestSupport
import RingTLS
import Synchronization
import SystemPackage
import Testing

#if canImport(Glibc)
import Glibc
#endif

// MARK: - Capabilities

/// Why no ring can be set up here, if none can: the suites then skip.
let ringSetUpError: RingSetupError? = _RingIOTesting.ringSetUpError()
let ringIsAvailable = ringSetUpError == nil
let ringUnavailableReason: Comment = "no RingIO loop can be set up here: \(ringSetUpError.map { "\($0)" } ?? "")"

/// Whether an executable named `name` is on `PATH`.
func toolExists(_ name: String) -> Bool {
    guard let path = getenv("PATH") else { return false }
    return String(cString: path).split(separator: ":").contains { access("\($0)/\(name)", X_OK) == 0 }
}

/// The suites need the `openssl` command to make their certificates.
let opensslExists = toolExists("openssl")

extension Trait where Self == ConditionTrait {
    /// Skips a suite where the openssl command, which makes the tests' certificates, is missing.
    /// Skips a test where the command `tool`, its peer, is not installed.
    static func installed(_ tool: String) -> Self {
        .enabled(if: toolExists(tool), "\(tool) is not installed")
    }

    static var opensslAvailable: Self {
        .enabled(if: opensslExists, "the tests make their certificates with the openssl command")
    }
}

// MARK: - Certificates

/// A small PKI made with the `openssl` command when the tests first need it, in a temporary
/// directory removed at exit: no private key is committed. EC P-256 keys, valid for two days.
///
/// - `ca`: the trusted CA; `server`: "localhost", 127.0.0.1 and ::1, signed by `ca`;
///   `other`: "other.example", signed by `ca`; `client`: a client certificate signed by `ca`;
///   `rogueCA` and `rogue`: "localhost", signed by a CA nobody trusts.
final class TestPKI: Sendable {
    let directory: String

    var caCertificate: String { "\(self.directory)/ca.pem" }
    var serverCertificate: String { "\(self.directory)/server.pem" }
    var serverKey: String { "\(self.directory)/server.key" }
    var otherCertificate: String { "\(self.directory)/other.pem" }
    var otherKey: String { "\(self.directory)/other.key" }
    var clientCertificate: String { "\(self.directory)/client.pem" }
    var clientKey: String { "\(self.directory)/client.key" }
    var rogueCertificate: String { "\(self.directory)/rogue.pem" }
    var rogueKey: String { "\(self.directory)/rogue.key" }

    static let shared: TestPKI = {
        do {
            return try TestPKI()
        } catch {
            fatalError("making the test certificates failed: \(error)")
        }
    }()

    private init() throws {
        var template = Array("/tmp/ringtls-pki-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw Errno(rawValue: errno) }
        self.directory = String(cString: made)
        _pkiDirectory.withLock { $0 = self.directory }
        atexit { _pkiDirectory.withLock { directory in if let directory { removeTree(directory) } } }

        try self.makeCA("ca", subject: "/CN=RingTLS Test CA")
        try self.makeLeaf("server", ca: "ca", subject: "/CN=localhost", names: "DNS:localhost,IP:127.0.0.1,IP:::1")
        try self.makeLeaf("other", ca: "ca", subject: "/CN=other.example", names: "DNS:other.example")
        try self.makeLeaf("client", ca: "ca", subject: "/CN=RingTLS Test Client", names: "DNS:client.example")
        try self.makeCA("rogueCA", subject: "/CN=Nobody Trusts This CA")
        try self.makeLeaf("rogue", ca: "rogueCA", subject: "/CN=localhost", names: "DNS:localhost,IP:127.0.0.1")
    }

    private func openssl(_ arguments: [String]) throws {
        let result = runTool("openssl", arguments, seconds: 30)
        guard result.status == 0 else {
            throw TestFailure("openssl \(arguments.joined(separator: " ")): \(result)")
        }
    }

    private func makeCA(_ name: String, subject: String) throws {
        try self.openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", "\(self.directory)/\(name).key", "-out", "\(self.directory)/\(name).pem",
            "-days", "2", "-subj", subject,
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        ])
    }

    private func makeLeaf(_ name: String, ca: String, subject: String, names: String) throws {
        let base = "\(self.directory)/\(name)"
        try self.openssl([
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", "\(base).key", "-out", "\(base).csr", "-subj", subject,
        ])
        let extensions = "\(base).ext"
        let text =
            "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"
            + "extendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=\(names)\n"
        guard writeFile(extensions, Array(text.utf8)) else { throw TestFailure("cannot write \(extensions)") }
        try self.openssl([
            "x509", "-req", "-in", "\(base).csr", "-CA", "\(self.directory)/\(ca).pem",
            "-CAkey", "\(self.directory)/\(ca).key", "-CAcreateserial", "-out", "\(base).pem",
            "-days", "2", "-extfile", extensions,
        ])
    }

    /// How long the tests' handshakes may take unless a test says otherwise: long, since the
    /// suites run in parallel and under sanitizers on two shared cores, where 1,000 handshakes
    /// queue behind each other for many seconds. The time-out tests set their own.
    static let handshakeTimeout: Duration = .seconds(120)

    /// A server context for `localhost` (or another leaf).
    func serverContext(
        leaf: String = "server",
        alpn: [String] = [],
        configure: (inout TLSConfiguration) -> Void = { _ in },
        serverNameHandler: (@Sendable (String) -> TLSContext?)? = nil
    ) throws -> TLSContext {
        var configuration = try TLSConfiguration.makeServerConfiguration(
            certificateChainFile: FilePath("\(self.directory)/\(leaf).pem"),
            privateKeyFile: FilePath("\(self.directory)/\(leaf).key")
        )
        configuration.applicationProtocols = alpn
        configuration.handshakeTimeout = Self.handshakeTimeout
        configure(&configuration)
        return try TLSContext(configuration: configuration, serverNameHandler: serverNameHandler)
    }

    /// A client context that trusts the test CA.
    func clientContext(
        alpn: [String] = [],
        configure: (inout TLSConfiguration) -> Void = { _ in }
    ) throws -> TLSContext {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.trustRoots = .certificates(try TLSCertificate.chain(fromPEMFile: FilePath(self.caCertificate)))
        configuration.applicationProtocols = alpn
        configuration.handshakeTimeout = Self.handshakeTimeout
        configure(&configuration)
        return try TLSContext(configuration: configuration)
    }
}

/// The PKI's directory, for the exit handler (which can capture nothing).
private let _pkiDirectory = _Lock<String?>(nil)

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Writes `bytes` to a new file at `path` (mode 0600).
func writeFile(_ path: String, _ bytes: [UInt8]) -> Bool {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    return bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == bytes.count
}

/// Removes a directory of plain files (the PKI's).
func removeTree(_ path: String) {
    guard let directory = opendir(path) else { return }
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        if name != "." && name != ".." { unlink("\(path)/\(name)") }
    }
    closedir(directory)
    rmdir(path)
}

// MARK: - Processes

/// What a tool run by ``runTool(_:_:stdin:seconds:)`` left behind.
struct ToolResult: CustomStringConvertible {
    var status: CInt?
    var timedOut = false
    var output: [UInt8] = []
    var errors: [UInt8] = []

    var text: String { String(decoding: self.output, as: UTF8.self) }
    var errorText: String { String(decoding: self.errors, as: UTF8.self) }

    var description: String {
        let status = self.timedOut ? "killed at its deadline" : self.status.map { "exit \($0)" } ?? "killed by a signal"
        return "\(status)\n--- stdout:\n\(self.text.suffix(3_000))\n--- stderr:\n\(self.errorText.suffix(3_000))"
    }
}

/// A child process with its standard input, output and error on pipes; its outputs are
/// collected by threads of their own. Killed (by its pid) when dropped while running.
final class ChildProcess: @unchecked Sendable {
    // @unchecked: `pid` is immutable; `state` is under its lock.
    let pid: pid_t
    private let state = _Lock<(output: [UInt8], errors: [UInt8], closed: Int, status: CInt?)>(([], [], 0, nil))
    private let stdinFD: CInt

    /// Starts `name` (looked up on `PATH`) with `arguments`; `stdin` is written to its input
    /// and the input closed (unless `keepStdinOpen`).
    init(_ name: String, _ arguments: [String], stdin: [UInt8] = [], keepStdinOpen: Bool = false) throws {
        var input: [CInt] = [-1, -1]
        var output: [CInt] = [-1, -1]
        var errors: [CInt] = [-1, -1]
        // Close-on-exec from the start (pipe2), so that a process another test spawns meanwhile
        // (an exit test's child) inherits none of our ends.
        guard pipe2Function(&input, O_CLOEXEC) == 0, pipe2Function(&output, O_CLOEXEC) == 0,
            pipe2Function(&errors, O_CLOEXEC) == 0
        else { throw Errno(rawValue: errno) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, input[0], 0)
        posix_spawn_file_actions_adddup2(&actions, output[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errors[1], 2)
        let argv = ([name] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawnp(&pid, name, &actions, nil, argv, environ)
        close(input[0])
        close(output[1])
        close(errors[1])
        guard spawned == 0 else {
            close(input[1])
            close(output[0])
            close(errors[0])
            throw TestFailure("posix_spawnp \(name): error \(spawned)")
        }
        self.pid = pid
        self.stdinFD = input[1]
        self.collect(output[0], errors: false)
        self.collect(errors[0], errors: true)
        if !stdin.isEmpty || !keepStdinOpen {
            let fd = input[1]
            startThread {
                stdin.withUnsafeBytes { bytes in
                    var offset = 0
                    while offset < bytes.count {
                        let written = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                        if written <= 0 { break }
                        offset += written
                    }
                }
                if !keepStdinOpen { close(fd) }
            }
        }
    }

    deinit {
        if self.state.withLock({ $0.status }) == nil {
            kill(self.pid, SIGKILL)
            var status: CInt = 0
            waitpid(self.pid, &status, 0)
        }
    }

    private func collect(_ fd: CInt, errors: Bool) {
        startThread { [self] in
            var buffer = [UInt8](repeating: 0, count: 16_384)
            while true {
                let count = read(fd, &buffer, buffer.count)
                if count < 0 && errno == EINTR { continue }
                if count <= 0 { break }
                self.state.withLock { state in
                    if errors { state.errors += buffer[..<count] } else { state.output += buffer[..<count] }
                }
            }
            close(fd)
            self.state.withLock { $0.closed += 1 }
        }
    }

    var output: String { String(decoding: self.state.withLock { $0.output }, as: UTF8.self) }
    var errors: String { String(decoding: self.state.withLock { $0.errors }, as: UTF8.self) }

    /// Waits (polling, bounded) until the output or error has a line containing `text`, and
    /// returns that line; `nil` at the deadline.
    func waitForLine(containing text: String, seconds: Double = 20) -> String? {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1_000))
        while ContinuousClock.now < deadline {
            let all = self.output + "\n" + self.errors
            if let line = all.split(separator: "\n").first(where: { $0.contains(text) }) { return String(line) }
            usleep(10_000)
        }
        return nil
    }

    /// Waits (bounded) for the process to exit and its outputs to close; kills it at the
    /// deadline.
    func wait(seconds: Double = 20) -> ToolResult {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1_000))
        var result = ToolResult()
        var status: CInt = 0
        while ContinuousClock.now < deadline {
            if waitpid(self.pid, &status, WNOHANG) == self.pid {
                result.status = status & 0x7f == 0 ? (status >> 8) & 0xff : nil
                self.state.withLock { $0.status = status }
                while ContinuousClock.now < deadline && self.state.withLock({ $0.closed }) < 2 { usleep(2_000) }
                let (output, errors) = self.state.withLock { ($0.output, $0.errors) }
                result.output = output
                result.errors = errors
                return result
            }
            usleep(5_000)
        }
        result.timedOut = true
        kill(self.pid, SIGKILL)
        waitpid(self.pid, &status, 0)
        self.state.withLock { $0.status = status }
        let (output, errors) = self.state.withLock { ($0.output, $0.errors) }
        result.output = output
        result.errors = errors
        return result
    }

    /// Writes `bytes` to its standard input (kept open).
    func send(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { write(self.stdinFD, $0.baseAddress, $0.count) }
    }

    func closeStdin() {
        close(self.stdinFD)
    }
}

/// glibc's `pipe2`, which the Glibc module hides without _GNU_SOURCE.
private let pipe2Function = unsafeBitCast(
    dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pipe2"),
    to: (@convention(c) (UnsafeMutablePointer<CInt>, CInt) -> CInt).self
)

/// Runs `name` with `arguments` and `stdin`, and collects its outputs (bounded).
func runTool(_ name: String, _ arguments: [String], stdin: [UInt8] = [], seconds: Double = 20) -> ToolResult {
    do {
        return try ChildProcess(name, arguments, stdin: stdin).wait(seconds: seconds)
    } catch {
        return ToolResult(status: nil, errors: Array("\(error)".utf8))
    }
}

/// Runs `python3 -c script arguments…`.
func runPython(_ script: String, _ arguments: [String], seconds: Double = 30) -> ToolResult {
    runTool("python3", ["-c", script] + arguments, seconds: seconds)
}

// MARK: - Sockets

/// A TLS client on a new connection to 127.0.0.1:`port` (``connectLoopback(port:host:)``), on
/// `ring`, checking the server's certificate against `serverName`.
func tlsClient(
    port: UInt16,
    ring: RingLoop,
    context: TLSContext,
    serverName: String = "localhost"
) throws -> TLSStream {
    try TLSStream(clientOn: try connectLoopback(port: port), ring: ring, context: context, serverName: serverName)
}

/// A TCP socket connected to 127.0.0.1:`port` with a blocking `connect`, close-on-exec,
/// TCP_NODELAY: for the tests that need a raw socket of their own (a peer that sends garbage,
/// stops mid-handshake, or is wrapped by ``tlsClient(port:ring:context:serverName:)``, which
/// may be called on the ring's own thread). TLSConnectTests dial with `IOConnection.connect`.
func connectLoopback(port: UInt16, host: String = "127.0.0.1") throws -> CInt {
    let fd = socket(AF_INET, CInt(SOCK_STREAM.rawValue) | CInt(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw Errno(rawValue: errno) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr(host)
    address.sin_port = port.bigEndian
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard connected == 0 else {
        let error = Errno(rawValue: errno)
        close(fd)
        throw error
    }
    var one: CInt = 1
    _ = setsockopt(fd, CInt(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<CInt>.size))
    return fd
}

/// Writes all of `bytes` to `fd`, blocking.
func writeAll(_ fd: CInt, _ bytes: [UInt8]) -> Bool {
    var offset = 0
    while offset < bytes.count {
        let written = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, CInt(MSG_NOSIGNAL)) }
        if written <= 0 { return false }
        offset += written
    }
    return true
}

/// Reads until EOF (or an error, or the receive time-out).
func readToEnd(_ fd: CInt) -> [UInt8] {
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let count = read(fd, &buffer, buffer.count)
        if count < 0 && errno == EINTR { continue }
        if count <= 0 { return bytes }
        bytes += buffer[..<count]
    }
}

/// How many descriptors this process has open.
func openDescriptorCount() -> Int {
    guard let directory = opendir("/proc/self/fd") else { return -1 }
    defer { closedir(directory) }
    var count = 0
    while readdir(directory) != nil { count += 1 }
    return count - 3  // ".", ".." and the directory's own descriptor
}

/// `count` bytes of a pattern that does not repeat at short distances.
func pattern(_ count: Int, seed: Int = 0) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: ($0 &+ seed) &* 31 &+ ($0 >> 8) &+ 7) }
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

// MARK: - Waiting on events

/// A value that one thread sets and another waits for (bounded).
final class Pending<Value: Sendable>: Sendable {
    private let state = _Lock<Value?>(nil)
    private let semaphore = DispatchSemaphore(value: 0)

    func set(_ value: Value) {
        let first = self.state.withLock { state -> Bool in
            guard state == nil else { return false }
            state = value
            return true
        }
        if first { self.semaphore.signal() }
    }

    /// The value, once set; `nil` after `seconds`.
    func wait(seconds: Double = 20) -> Value? {
        guard RingIOTestSupport.wait(self.semaphore, seconds: seconds) else { return nil }
        self.semaphore.signal()  // later waiters see it too
        return self.state.withLock { $0 }
    }

    var value: Value? { self.state.withLock { $0 } }
}

/// Bytes gathered from handler calls on any thread.
final class Collected: Sendable {
    private let bytes = _Lock<[UInt8]>([])

    func append(_ rope: ByteRope) {
        self.bytes.withLock { $0 += Array(rope) }
    }

    var all: [UInt8] { self.bytes.withLock { $0 } }
    var count: Int { self.bytes.withLock { $0.count } }
}

/// Runs `body` in a task that prefers `executor`, and waits for it (bounded); `nil` on
/// time-out (the task is then cancelled).
func runAsync<T: Sendable>(
    seconds: Double = 30,
    on ring: RingLoop,
    _ body: @escaping @Sendable () async throws -> T
) -> Result<T, any Error>? {
    let outcome = Pending<Result<T, any Error>>()
    let task = Task(executorPreference: ring.taskExecutor) {
        do {
            outcome.set(.success(try await body()))
        } catch {
            outcome.set(.failure(error))
        }
    }
    guard let result = outcome.wait(seconds: seconds) else {
        task.cancel()
        return nil
    }
    return result
}
