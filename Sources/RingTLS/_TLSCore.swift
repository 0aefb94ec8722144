//===----------------------------------------------------------------------===//
// RingIO — RingTLS: one TLS connection's state machine, on its ring's thread.
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

import CRingOpenSSL
import RingIO
import SystemPackage

#if canImport(Glibc)
import Glibc
#endif

/// The engine of a ``TLSStream``: an OpenSSL `SSL` between the stream's operations and its
/// channel, driven by events on one ring thread.
///
///     channel reads ──> input (ropes) ──BIO read──> OpenSSL ──SSL_read──> plaintext ──> reads
///     writes ──SSL_write──> OpenSSL ──BIO write──> output buffer ──> channel writes
///
/// **Confinement.** Every OpenSSL call on this connection's `SSL` happens on `ring`'s thread:
/// the channel's handlers run there (`queue: ring`), operations from other threads reach it
/// through `ring.enqueue`, and the BIO's callbacks run inside those OpenSSL calls. OpenSSL
/// never blocks: its BIO reads from ciphertext already received (or answers "retry"), and its
/// BIO writes append to a buffer. Stored properties under "Ring thread only" are touched
/// there only; `published` is under its lock; the rest is immutable.
///
/// **Events.** Each event (ciphertext or EOF from the channel, a channel write done, an
/// operation, the handshake timer) changes state and then calls `pump`, which does every step
/// that has become possible, in order: handshake, decrypt, encrypt, close, flush, deliver,
/// read more, finish.
///
/// **Deliveries.** Handler calls are gathered while the state changes and made at the end of
/// `pump`. A handler whose queue is this ring is called right there when the event came from
/// the ring (a completion); when it came from a call of the stream's API on the ring thread,
/// the calls are enqueued on the ring instead — a handler never runs inside the call that
/// scheduled its operation — and later direct calls wait behind them, so that the calls of
/// one stream keep their order.
internal final class _TLSCore: @unchecked Sendable {
    // @unchecked: see "Confinement" above.

    /// What other threads may read: the handshake's outcome and the offload status.
    struct Published {
        var handshake: TLSStream.Handshake?
        var offload: TLSOffload
    }

    enum HandshakeState {
        case running
        case done(TLSStream.Handshake)
        case failed(TLSError)
    }

    /// How the read side ended: once its plaintext is delivered, every read ends so.
    enum ReadEnd {
        /// The peer's `close_notify`.
        case closeNotify
        case failed(TLSError)
    }

    enum CloseNotify {
        case notSent
        /// Queued in the output; sent once the channel wrote up to `at`.
        case queued(at: UInt64)
        case sent
    }

    /// Output in order: ciphertext (or, with kTLS, plaintext) for the channel, and the steps
    /// kTLS adds.
    enum Segment {
        case bytes(ByteRope)
        /// Hand the transmit keys to the kernel (a `crypto_info`), once everything before has
        /// been written.
        case enableTransmit([UInt8])
        /// A control record (kTLS: alert, handshake) of `type`.
        case control(type: UInt8, ByteRope)
        /// A file's bytes, spliced by the channel (kTLS).
        case file(_TLSWrite)
    }

    // MARK: Immutable after init
    let ring: RingLoop
    let channel: IOChannel
    let isServer: Bool
    let ssl: OpaquePointer
    /// A client's session cache key (its server name).
    let sessionKey: String?
    private let handshakeTimeout: Duration?
    /// The socket, for kTLS's system calls; read when the stream is made.
    private let socket: CInt

    // MARK: Any thread, under the lock
    let published: _TLSLock<Published>

    // MARK: Ring thread only
    //
    // `@exclusivity(unchecked)`, as on RingIO's own ring-thread state: Swift's run-time check
    // that two accesses to a class's stored property never overlap (a thread-local lookup per
    // access) was about 5,000 instructions per echo round trip here. What makes it
    // unnecessary: these properties are touched only on the ring thread, and no inout access
    // spans a call that could reach the same property again (the closures passed to
    // `_TLSBufferSlot.room` touch other properties; OpenSSL's BIO callbacks run inside calls
    // made with no access open). The suites passed with the checks on (debug builds trap on an
    // overlap) before they were turned off; a new overlapping access would not be caught.
    /// The context whose callbacks this `SSL` may call: the one it was made with…
    private let context: _SSLContextBox
    /// …and those an SNI handler switched to (none, mostly: no array is made then).
    @exclusivity(unchecked) private var adoptedContexts: [_SSLContextBox] = []
    @exclusivity(unchecked) private var handshakeState = HandshakeState.running
    /// `SSL_do_handshake` has been called (a server waits for the client's first bytes).
    @exclusivity(unchecked) private var handshakeEntered = false
    /// The handshake is done and OpenSSL encrypts the output: a write may go out at once
    /// (`writeDirectly`) when nothing else is in the way.
    @exclusivity(unchecked) private var encryptsDirectly = false
    @exclusivity(unchecked) private var handshakeWaiters: [_TLSHandshakeWaiter] = []
    @exclusivity(unchecked) private var timer: IOSourceTimer?
    /// A fatal error: the stream is unusable (after its alert, if any, is flushed). Set once,
    /// by `fail`.
    @exclusivity(unchecked) private var failure: TLSError?
    /// `failure != nil`, for the checks of every step: comparing the optional error with
    /// `nil` copied it through its value witnesses (about 100 instructions, 20 times per
    /// connection).
    @exclusivity(unchecked) private var failed = false
    @exclusivity(unchecked) private var closeRequested = false
    @exclusivity(unchecked) private var stopRequested = false
    @exclusivity(unchecked) private var writeClosed = false
    @exclusivity(unchecked) private var closeNotify = CloseNotify.notSent
    @exclusivity(unchecked) private var outputShutDown = false
    @exclusivity(unchecked) private var channelClosed = false

    // Input: ciphertext received and not yet read by OpenSSL.
    @exclusivity(unchecked) private var input: [ByteRope] = []
    @exclusivity(unchecked) private var inputHead = 0
    @exclusivity(unchecked) private var inputOffset = 0
    @exclusivity(unchecked) private var inputCount = 0
    @exclusivity(unchecked) private var inputEOF = false
    @exclusivity(unchecked) private var inputError: Errno?
    @exclusivity(unchecked) private var channelReadActive = false
    @exclusivity(unchecked) private var channelReadReceived = 0

    // Plaintext decrypted and not yet delivered, and the reads waiting for it.
    @exclusivity(unchecked) private var plaintextSlot = _TLSBufferSlot(maximum: 65_536)
    @exclusivity(unchecked) private var plaintext = ByteRope()
    @exclusivity(unchecked) private var readEnd: ReadEnd?
    @exclusivity(unchecked) private var reads = _TLSFIFO<_TLSRead>()

    // Writes: to encrypt, then waiting for the channel to write their last byte.
    @exclusivity(unchecked) private var toEncrypt = _TLSFIFO<_TLSWrite>()
    @exclusivity(unchecked) private var awaitingAck = _TLSFIFO<_TLSWrite>()
    @exclusivity(unchecked) private var outputSlot = _TLSBufferSlot(maximum: 65_536)
    @exclusivity(unchecked) private var segments = _TLSFIFO<Segment>()
    /// Output bytes made so far (ciphertext, or kTLS plaintext and control records).
    @exclusivity(unchecked) private var outputProduced: UInt64 = 0
    /// Output bytes the channel (or `sendmsg`) has taken so far.
    @exclusivity(unchecked) private var outputAcknowledged: UInt64 = 0
    @exclusivity(unchecked) private var channelWritesInFlight = 0
    @exclusivity(unchecked) private var writableSource: IOSourceWrite?

    // kTLS.
    /// The TLS ULP is attached to the socket, and OpenSSL may hand keys over.
    @exclusivity(unchecked) private var kernelEligible = false
    @exclusivity(unchecked) private var kernelCipherTypes: Set<UInt16> = []
    /// OpenSSL handed the transmit keys over: output is plaintext from then on.
    @exclusivity(unchecked) private(set) var transmitOffloaded = false
    /// The next BIO write is a control record of this type (kTLS).
    @exclusivity(unchecked) private var controlRecordType: UInt8?

    // Pumping and delivering.
    @exclusivity(unchecked) private var pumping = false
    @exclusivity(unchecked) private var pumpAgain = false
    @exclusivity(unchecked) private var inUserCall = false
    @exclusivity(unchecked) private var deliveries: [_TLSDelivery] = []
    /// Batches of deliveries enqueued on the ring and not yet run.
    @exclusivity(unchecked) private var deferredBatches = 0
    /// The error queue was checked in this step (`prepareErrorQueue`).
    @exclusivity(unchecked) private var errorQueueChecked = false

    /// Plaintext decrypted ahead of the reads, at most.
    static let plaintextLimit = 262_144
    /// Output made and not yet written by the channel, at most (more waits).
    static let outputLimit = 262_144
    /// Ciphertext asked of the channel per read operation.
    static let channelReadLength = 65_536

    // MARK: Life

    init(
        channel: IOChannel,
        ring: RingLoop,
        context: TLSContext,
        isServer: Bool,
        serverName: String?
    ) throws(TLSError) {
        let box = context.box
        if isServer && !box.hasCertificate && box.serverNameHandler == nil {
            throw TLSError(
                .invalidConfiguration,
                reason: "a server stream needs a context with a certificate chain and its key"
            )
        }
        if !isServer && box.verification == .fullVerification && serverName == nil {
            throw TLSError(
                .invalidConfiguration,
                reason: "full verification needs the server's name (or use .noHostnameVerification)"
            )
        }
        if ERR_peek_error() != 0 { ERR_clear_error() }  // a peek costs less than a clear
        guard let ssl = SSL_new(box.ctx) else {
            throw TLSError(.invalidConfiguration, reason: "SSL_new: \(_OpenSSLErrors.drain(or: "out of memory"))")
        }
        // kTLS: the socket takes the ULP now, and OpenSSL offers the keys after the handshake.
        // A ULP given no keys changes nothing on the socket, should a step below fail.
        var offload = TLSOffload.userSpace("kernel TLS is not enabled in the configuration")
        let socket = channel.fileDescriptor
        var kernelCipherTypes: Set<UInt16>? = nil
        if box.kernelTLS == .whenAvailable {
            let availability = TLSOffload.kernelAvailability
            if !availability.hasTLSModule || availability.cipherTypes.isEmpty {
                offload = .userSpace(availability.reason)
            } else if let error = _KernelTLSProbe.attachULP(socket) {
                offload = .userSpace("TCP_ULP \"tls\" on this socket: \(error)")
            } else {
                kernelCipherTypes = availability.cipherTypes
                _ = SSL_set_options(ssl, CRingOpenSSL_OP_ENABLE_KTLS)
                offload = .userSpace("the handshake has not handed the keys to the kernel (yet)")
            }
        }
        // Only a stream that may hand its keys to the kernel needs its BIO's controls in Swift.
        guard let bio = BIO_new(kernelCipherTypes == nil ? _TLSBIO.userSpaceMethod : _TLSBIO.kernelMethod) else {
            SSL_free(ssl)
            throw TLSError(.invalidConfiguration, reason: "BIO_new: \(_OpenSSLErrors.drain(or: "out of memory"))")
        }
        // One BIO both ways; the SSL owns it (one reference, taken over) and frees it.
        SSL_set_bio(ssl, bio, bio)
        do throws(TLSError) {
            if isServer {
                SSL_set_accept_state(ssl)
                let mode =
                    box.verification == .none ? SSL_VERIFY_NONE : SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT
                SSL_set_verify(ssl, mode, nil)
            } else {
                SSL_set_connect_state(ssl)
                try Self.configureClient(ssl, box: box, serverName: serverName)
            }
        } catch {
            SSL_free(ssl)
            throw error
        }

        self.ring = ring
        self.channel = channel
        self.isServer = isServer
        self.ssl = ssl
        self.sessionKey = isServer ? nil : serverName
        self.handshakeTimeout = box.handshakeTimeout
        self.socket = socket
        self.context = box

        if let kernelCipherTypes {
            self.kernelEligible = true
            self.kernelCipherTypes = kernelCipherTypes
        }
        self.published = _TLSLock(Published(handshake: nil, offload: offload))

        let unretained = Unmanaged.passUnretained(self).toOpaque()
        BIO_set_data(bio, unretained)
        SSL_set_ex_data(ssl, 0, unretained)
    }

    deinit {
        // Unhooks the BIO first: nothing may call back into a core being freed.
        if let bio = SSL_get_rbio(self.ssl) { BIO_set_data(bio, nil) }
        SSL_free(self.ssl)
    }

    /// The core an `SSL` belongs to (its ex_data slot 0), for OpenSSL's callbacks.
    static func of(_ ssl: OpaquePointer) -> _TLSCore? {
        guard let raw = SSL_get_ex_data(ssl, 0) else { return nil }
        return Unmanaged<_TLSCore>.fromOpaque(raw).takeUnretainedValue()
    }

    private static func configureClient(
        _ ssl: OpaquePointer,
        box: _SSLContextBox,
        serverName: String?
    ) throws(TLSError) {
        switch box.verification {
        case .none:
            SSL_set_verify(ssl, SSL_VERIFY_NONE, nil)
        case .noHostnameVerification, .fullVerification:
            SSL_set_verify(ssl, SSL_VERIFY_PEER, nil)
        }
        guard let name = serverName else { return }
        let isAddress = Self.isIPAddress(name)
        if box.verification == .fullVerification {
            let set: Int32
            if isAddress {
                set = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name)
            } else {
                SSL_set_hostflags(ssl, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS))
                set = SSL_set1_host(ssl, name)
            }
            if set != 1 {
                throw TLSError(
                    .invalidConfiguration,
                    reason: "the server name \"\(name)\": \(_OpenSSLErrors.drain(or: "not a host name or address"))"
                )
            }
        }
        // SNI carries host names only, never addresses (RFC 6066).
        if !isAddress, CRingOpenSSL_set_tlsext_host_name(ssl, name) != 1 {
            throw TLSError(
                .invalidConfiguration,
                reason: "the server name \"\(name)\" for SNI: \(_OpenSSLErrors.drain(or: "refused"))"
            )
        }
        if box.sessionResumption, let session = box.session(for: name) {
            _ = SSL_set_session(ssl, session)
            SSL_SESSION_free(session)
        }
    }

    private static func isIPAddress(_ name: String) -> Bool {
        var address = in6_addr()
        return inet_pton(AF_INET, name, &address) == 1 || inet_pton(AF_INET6, name, &address) == 1
    }

    /// A context an SNI handler chose: this connection holds it from now on.
    func adopt(_ box: _SSLContextBox) {
        self.adoptedContexts.append(box)
    }

    // MARK: Entry points (any thread)

    /// Runs `body` on the ring thread: at once when called there (as a call of the stream's
    /// API: its handler calls are then enqueued), else enqueued.
    func perform(_ body: @escaping @Sendable (_TLSCore) -> Void) {
        if self.ring.isCurrentThread {
            let outer = self.inUserCall
            self.inUserCall = true
            body(self)
            self.inUserCall = outer
        } else {
            self.ring.enqueue { body(self) }
        }
    }

    /// Starts the handshake (and its timer). Ring thread.
    func start() {
        self.assertOnRing()
        if let timeout = self.handshakeTimeout {
            let timer = IOSource.makeTimerSource(queue: self.ring, ring: self.ring)
            timer.schedule(after: timeout)
            // Strong: the timer is cancelled when the handshake ends (or times out), which lets
            // go of the handler. (A weak reference would give the core a side table and make
            // every retain and release of it take the slow path.)
            timer.setEventHandler { self.handshakeTimedOut() }
            timer.resume()
            self.timer = timer
        }
        self.pump()
    }

    private func assertOnRing() {
        assert(self.ring.isCurrentThread, "RingTLS: a stream's state is touched off its ring's thread")
    }

    // MARK: Operations (ring thread)

    func waitForHandshake(_ waiter: _TLSHandshakeWaiter) {
        self.assertOnRing()
        switch self.handshakeState {
        case .running:
            self.handshakeWaiters.append(waiter)
        case .done(let handshake):
            self.resolve(waiter, .success(handshake))
        case .failed(let error):
            self.resolve(waiter, .failure(error))
        }
        self.pump()
    }

    func scheduleRead(_ read: _TLSRead) {
        self.assertOnRing()
        if read.cancelRequested {
            self.end(read, .failure(.taskCancelled))
        } else if self.closeRequested {
            self.end(read, .failure(self.stopRequested ? .stopped : .closedStream))
        } else {
            self.reads.append(read)
        }
        self.pump()
    }

    /// Ends `read` with `.canceled` (its task was cancelled), unless it has ended. A read not
    /// scheduled yet is ended when it is (its continuation is touched only once it is).
    func cancelRead(_ read: _TLSRead) {
        self.assertOnRing()
        guard !read.finished else { return }
        if self.reads.remove(read) {
            self.end(read, .failure(.taskCancelled))
            self.pump()
        } else {
            read.cancelRequested = true
        }
    }

    func scheduleWrite(_ write: _TLSWrite) {
        self.assertOnRing()
        if self.closeRequested || self.writeClosed || self.failed {
            let error: TLSError =
                self.failure ?? (self.stopRequested ? .stopped : self.closeRequested ? .closedStream : .closedOutput)
            self.finish(write, error: error)
        } else if write.count == 0 {
            self.finish(write, error: nil)
        } else {
            self.toEncrypt.append(write)
        }
        self.pump()
    }

    /// Encrypts `data` and hands the records to the channel at once, when nothing is in the way
    /// — the common case of a response written on the ring's thread: the stream is
    /// established and encrypts in user space, is not closing or failed, has no write waiting
    /// to be encrypted and no output waiting to be written, and has room in its output budget.
    /// `handler` is then called by the channel write's completion: no `_TLSWrite`, no queue, no
    /// pump. Returns `false`, having done nothing, otherwise (the caller schedules the write).
    ///
    /// Order is kept: earlier writes are encrypted already (none waits), their records are in
    /// channel writes issued before this one, and the channel completes its writes in order;
    /// a completion calls the handlers of earlier writes first (`acknowledge`).
    func writeDirectly(_ data: ByteRope, queue: any IOQueue, handler: @escaping _TLSWriteHandler) -> Bool {
        self.assertOnRing()
        let count = data.count
        guard self.encryptsDirectly, !self.failed, !self.closeRequested, !self.writeClosed, !self.pumping,
            count > 0, count <= Self.directWriteLimit, self.toEncrypt.isEmpty, self.segments.isEmpty,
            self.outputProduced - self.outputAcknowledged + UInt64(count) <= UInt64(Self.outputLimit)
        else { return false }
        let outer = self.inUserCall
        self.inUserCall = true
        defer { self.inUserCall = outer }
        self.errorQueueChecked = false
        let (sealed, failed) = self.encryptReportingProgress(data, from: 0, budgeted: false)
        if failed {
            // The stream failed (`sslWrite`): the handler gets its error like any write's.
            let remaining = sealed < count ? data.subrange(sealed..<count) : nil
            self.deliveries.append(.write(queue, handler, remaining: remaining, error: self.failure ?? .closedStream))
            self.pump()
            return true
        }
        // Every record made, in order: the segments were empty before, and a write that filled
        // an output buffer had `bioWrite` move that buffer's bytes to the segments.
        var records: ByteRope
        if self.segments.isEmpty {
            records = self.outputSlot.takePending()
        } else {
            self.takeBufferedOutput()
            records = ByteRope()
            while case .bytes(let rope)? = self.segments.first {
                _ = self.segments.popFirst()
                records.append(rope)
            }
            assert(self.segments.isEmpty, "RingTLS: output other than records without kTLS")
        }
        let length = records.count
        self.channelWritesInFlight += 1
        self.channel.write(offset: 0, data: records, queue: self.ring) { [self] done, _, error in
            guard done else { return }
            self.directWriteDone(count: length, error: error, queue: queue, handler: handler)
        }
        return true
    }

    /// The most a write sends at once through `writeDirectly` (larger ones are encrypted as
    /// the output budget allows).
    static let directWriteLimit = 65_536

    /// A channel write of `writeDirectly` is done.
    private func directWriteDone(count: Int, error: Errno?, queue: any IOQueue, handler: @escaping _TLSWriteHandler) {
        self.assertOnRing()
        self.channelWritesInFlight -= 1
        if let error {
            self.outputFailed(error, .writingToSocket)
            let failure = self.failure ?? .io(error, .writingToSocket)
            self.deliveries.append(.write(queue, handler, remaining: nil, error: failure))
            self.pump()
            return
        }
        self.acknowledge(UInt64(count))
        if self.deliveries.isEmpty, self.deferredBatches == 0, queue === self.ring, !self.closeRequested,
            !self.writeClosed, self.toEncrypt.isEmpty, self.segments.isEmpty, !self.failed
        {
            // Nothing else waited for this write: its handler, and done.
            handler(true, nil, nil)
            return
        }
        self.deliveries.append(.write(queue, handler, remaining: nil, error: nil))
        self.pump()
    }

    /// `TLSStream.releaseRecordBuffers()`: OpenSSL frees its read and write buffers when no
    /// record is in them (`SSL_free_buffers` refuses otherwise, and nothing is lost).
    func releaseRecordBuffers() {
        self.assertOnRing()
        guard !self.channelClosed else { return }
        _ = SSL_free_buffers(self.ssl)
    }

    /// Half-close: after the pending writes, `close_notify` and the socket's FIN.
    func closeWrite() {
        self.assertOnRing()
        self.writeClosed = true
        self.pump()
    }

    func close(stop: Bool) {
        self.assertOnRing()
        if stop && !self.stopRequested {
            self.stopRequested = true
            self.closeRequested = true
            self.writeClosed = true
            self.abort(with: .stopped)
        } else if !self.closeRequested {
            self.closeRequested = true
            self.writeClosed = true
            if case .running = self.handshakeState {
                // Nothing to say to a peer that has not finished its handshake.
                self.abort(with: .closedStream)
            }
        }
        self.pump()
    }

    // MARK: Events (ring thread)

    private func handshakeTimedOut() {
        self.assertOnRing()
        self.timer = nil
        guard case .running = self.handshakeState else { return }
        let seconds = self.handshakeTimeout.map { "\($0)" } ?? "its time"
        self.abort(
            with: TLSError(.handshakeTimedOut, reason: "the handshake did not finish within \(seconds)")
        )
        self.pump()
    }

    private func channelDelivered(done: Bool, data: ByteRope?, error: Errno?) {
        self.assertOnRing()
        if let data, !data.isEmpty, !self.channelClosed {
            self.input.append(data)
            self.inputCount += data.count
            self.channelReadReceived += data.count
        }
        guard done else {
            if !self.channelClosed && !self.deliverDirectly() { self.pump() }
            return
        }
        self.channelReadActive = false
        if !self.channelClosed {
            if let error {
                self.inputError = error
            } else if self.channelReadReceived < Self.channelReadLength {
                self.inputEOF = true
            }
        }
        self.channelReadReceived = 0
        self.pump()
    }

    private func channelWriteDone(count: Int, remaining: ByteRope?, error: Errno?) {
        self.assertOnRing()
        self.channelWritesInFlight -= 1
        if let error {
            self.outputFailed(error, .writingToSocket)
        } else {
            self.acknowledge(UInt64(count))
        }
        self.pump()
    }

    private func acknowledge(_ count: UInt64) {
        self.outputAcknowledged += count
        while let write = self.awaitingAck.first, write.completesAt <= self.outputAcknowledged {
            _ = self.awaitingAck.popFirst()
            self.finish(write, error: write.error)
        }
    }

    // MARK: The pump

    /// Does every step that has become possible; see the type's comment.
    func pump() {
        self.assertOnRing()
        if self.pumping {
            self.pumpAgain = true
            return
        }
        self.pumping = true
        repeat {
            self.pumpAgain = false
            self.step()
        } while self.pumpAgain
        self.pumping = false
        self.runDeliveries()
    }

    private func step() {
        self.errorQueueChecked = false
        if case .running = self.handshakeState, !self.failed { self.driveHandshake() }
        if case .done = self.handshakeState, !self.failed {
            self.decrypt()
            self.encrypt()
            self.progressClose()
        }
        self.flushOutput()
        self.serveReads()
        self.readMore()
        self.finishIfDone()
    }

    /// OpenSSL's error queue (one per thread) must be empty before an SSL call, or
    /// `SSL_get_error` misreads the call's outcome; other code on the ring thread may have left
    /// entries in it. Checked once per step, before its first SSL call (a peek costs about 200
    /// instructions in OpenSSL 3.0, a clear — which walks all sixteen slots — more); every
    /// failure drains it (`error(_:duringHandshake:)`), and "want read" adds nothing to it.
    @inline(__always)
    private func prepareErrorQueue() {
        guard !self.errorQueueChecked else { return }
        self.errorQueueChecked = true
        if ERR_peek_error() != 0 { ERR_clear_error() }
    }

    private func driveHandshake() {
        // A server has nothing to do before the client's first bytes: a call then would set
        // OpenSSL's state up only to answer "want read". The first call waits for ciphertext
        // (or the end of the input): one call where there were two (about 3,000 instructions
        // a handshake).
        if self.isServer && self.inputCount == 0 && !self.inputEOF && self.inputError == nil
            && !self.handshakeEntered
        {
            return
        }
        self.handshakeEntered = true
        self.prepareErrorQueue()
        let result = SSL_do_handshake(self.ssl)
        if result == 1 {
            self.handshakeCompleted()
            return
        }
        let code = SSL_get_error(self.ssl, result)
        if code == SSL_ERROR_WANT_READ { return }
        self.fail(self.error(code, duringHandshake: true))
    }

    private func handshakeCompleted() {
        self.timer?.cancel()
        self.timer = nil
        let handshake = self.describeHandshake()
        self.handshakeState = .done(handshake)
        self.encryptsDirectly = !self.transmitOffloaded
        self.published.withLock { $0.handshake = handshake }
        let waiters = self.handshakeWaiters
        self.handshakeWaiters = []
        for waiter in waiters { self.resolve(waiter, .success(handshake)) }
    }

    private func describeHandshake() -> TLSStream.Handshake {
        var protocolPointer: UnsafePointer<UInt8>?
        var protocolLength: UInt32 = 0
        SSL_get0_alpn_selected(self.ssl, &protocolPointer, &protocolLength)
        let applicationProtocol = protocolPointer.map {
            String(decoding: UnsafeBufferPointer(start: $0, count: Int(protocolLength)), as: UTF8.self)
        }
        let serverName = SSL_get_servername(self.ssl, TLSEXT_NAMETYPE_host_name).map { String(cString: $0) }
        let context = self.adoptedContexts.last ?? self.context
        let cipher = SSL_get_current_cipher(self.ssl).flatMap { context.name(of: $0) }
        let peer = SSL_get1_peer_certificate(self.ssl).map { TLSCertificate(box: _X509Box(owning: $0)) }
        return TLSStream.Handshake(
            protocolVersion: SSL_version(self.ssl) >= TLS1_3_VERSION ? .tls1_3 : .tls1_2,
            cipherSuite: cipher ?? "",
            applicationProtocol: applicationProtocol,
            serverName: serverName,
            isResumed: SSL_session_reused(self.ssl) == 1,
            peerCertificate: peer
        )
    }

    /// Decrypts what OpenSSL can, into plaintext, until it needs more input, the read side
    /// ends, or enough is buffered ahead of the reads.
    private func decrypt() {
        guard self.readEnd == nil else { return }
        // Nothing refers to the buffer any more (the reads released what they got): it is all free.
        self.plaintextSlot.recycleIfUnused()
        while self.plaintext.count < Self.plaintextLimit {
            let inputLeft = self.inputCount > 0 || SSL_has_pending(self.ssl) != 0
            if !inputLeft && !self.inputEOF && self.inputError == nil {
                break
            }
            var count = 0
            self.prepareErrorQueue()
            if inputLeft {
                let buffer = self.plaintextSlot.room(atLeast: 1_024) { self.plaintext.append($0) }
                let space = buffer.freeSpace
                if SSL_read_ex(self.ssl, space.baseAddress, space.count, &count) == 1 {
                    buffer.commit(count)
                    continue
                }
            } else {
                // Only the input's end is left (a FIN, a reset): no plaintext can come of it,
                // so no buffer is made to learn how the input ended — most connections that
                // end without a request end this way.
                var byte: UInt8 = 0
                if SSL_read_ex(self.ssl, &byte, 1, &count) == 1 {
                    // Not expected; kept all the same, after what this loop decrypted.
                    self.plaintextSlot.room(atLeast: 1) { self.plaintext.append($0) }.append(&byte, count: 1)
                    continue
                }
            }
            let code = SSL_get_error(self.ssl, 0)
            switch code {
            case SSL_ERROR_WANT_READ:
                break
            case SSL_ERROR_ZERO_RETURN:
                self.readEnd = .closeNotify
            default:
                self.readEnd = .failed(self.error(code, duringHandshake: false))
            }
            break
        }
        let decrypted = self.plaintextSlot.takePending()
        if !decrypted.isEmpty { self.plaintext.append(decrypted) }
        if case .failed(let error) = self.readEnd, error.code != .uncleanShutdown {
            // A broken record or a fatal alert: the connection is over both ways (OpenSSL
            // queued its alert, which the flush sends). An unclean end is the read side's only.
            self.fail(error)
        }
    }

    /// Encrypts the pending writes into the output, until the output is `outputLimit` ahead
    /// of the channel.
    private func encrypt() {
        while let write = self.toEncrypt.first {
            guard self.outputProduced - self.outputAcknowledged < UInt64(Self.outputLimit) else { return }
            switch write.source {
            case .bytes(let data):
                if self.transmitOffloaded {
                    // The kernel encrypts: the rope goes to the channel as it is.
                    let rest = write.remainingBytes ?? ByteRope()
                    self.appendSegment(.bytes(rest), count: rest.count)
                    write.taken = data.count
                } else if let taken = self.encrypt(data, from: write.taken, budgeted: true) {
                    write.taken = taken
                } else {
                    return
                }
                if write.taken < data.count { return }  // the output is full: more later
            case .file:
                if !self.sendFile(write) { return }
            }
            _ = self.toEncrypt.popFirst()
            write.completesAt = self.outputProduced
            if write.completesAt <= self.outputAcknowledged {
                self.finish(write, error: write.error)
            } else {
                self.awaitingAck.append(write)
            }
        }
    }

    /// Encrypts `data` from `start` on, region by region, without flattening the rope: small
    /// regions are gathered (up to one record) so that a head and a short body make one
    /// record; larger ones are encrypted where they lie. With `budgeted`, stops once the
    /// output is `outputLimit` ahead of the channel. Returns how far `data` is encrypted, or
    /// `nil` when the stream failed.
    private func encrypt(_ data: ByteRope, from start: Int, budgeted: Bool) -> Int? {
        let (sealed, failed) = self.encryptReportingProgress(data, from: start, budgeted: budgeted)
        return failed ? nil : sealed
    }

    /// `encrypt(_:from:budgeted:)`, with how far `data` is encrypted when the stream failed.
    /// A rope of one region (a response made in one piece, a record's worth or less) goes to
    /// OpenSSL where it lies, without the gathering buffer.
    private func encryptReportingProgress(
        _ data: ByteRope,
        from start: Int,
        budgeted: Bool
    ) -> (sealed: Int, failed: Bool) {
        if start == 0, !budgeted, data.count > 0, data.count <= 16_384,
            let sealed = data.withContiguousStorageIfAvailable({
                self.sslWrite(UnsafeRawBufferPointer($0)) ? $0.count : nil
            })
        {
            return sealed.map { ($0, false) } ?? (0, true)
        }
        var state = _EncryptState(scratch: _GatherScratch.buffer, cursor: start)
        _ = data.apply { offset, region in
            self.encrypt(region: region, at: offset, state: &state, budgeted: budgeted)
        }
        if !state.failed { state.failed = !self.sealGathered(&state) }
        return (state.sealed, state.failed)
    }

    /// One region of `encrypt(_:from:budgeted:)`; `false` to stop (the output is full, or the
    /// stream failed).
    private func encrypt(
        region: UnsafeRawBufferPointer,
        at offset: Int,
        state: inout _EncryptState,
        budgeted: Bool
    ) -> Bool {
        let directThreshold = 2_048
        guard offset + region.count > state.cursor else { return true }
        var part = UnsafeRawBufferPointer(rebasing: region[(state.cursor - offset)...])
        while !part.isEmpty {
            if budgeted && self.outputProduced - self.outputAcknowledged >= UInt64(Self.outputLimit) {
                state.failed = !self.sealGathered(&state)
                return false
            }
            if part.count < directThreshold && state.gathered + part.count <= _GatherScratch.size {
                (state.scratch + state.gathered).copyMemory(from: part.baseAddress!, byteCount: part.count)
                state.gathered += part.count
                state.cursor += part.count
                return true
            }
            guard self.sealGathered(&state) else {
                state.failed = true
                return false
            }
            if part.count < directThreshold { continue }  // gathers into the emptied scratch
            // Up to four records at a time, so that the output limit is checked between.
            let piece = UnsafeRawBufferPointer(rebasing: part.prefix(65_536))
            guard self.sslWrite(piece) else {
                state.failed = true
                return false
            }
            state.cursor += piece.count
            state.sealed = state.cursor
            part = UnsafeRawBufferPointer(rebasing: part[piece.count...])
        }
        return true
    }

    /// Encrypts what is gathered in the scratch buffer, as one record.
    private func sealGathered(_ state: inout _EncryptState) -> Bool {
        guard state.gathered > 0 else { return true }
        let ok = self.sslWrite(UnsafeRawBufferPointer(start: state.scratch, count: state.gathered))
        state.gathered = 0
        if ok { state.sealed = state.cursor }
        return ok
    }

    // MARK: File sends

    /// The next step of a file send; `true` once its whole range is taken (or it failed).
    ///
    /// With the kernel encrypting, the channel splices the range from the file to the socket:
    /// the bytes never enter user space. Otherwise the file is read 64 KiB at a time through
    /// a random-access channel on this ring (never a blocking read on the ring thread), and
    /// each piece is encrypted as it arrives.
    private func sendFile(_ write: _TLSWrite) -> Bool {
        guard case .file(let descriptor, let offset, let length) = write.source else { return true }
        if write.taken == length || write.error != nil { return true }
        if self.transmitOffloaded {
            self.appendSegment(.file(write), count: length)
            write.taken = length
            return true
        }
        guard !write.reading else { return false }
        if write.fileChannel == nil {
            // A random-access channel counts offsets from the descriptor's position.
            let base = lseek(descriptor, 0, SEEK_CUR)
            guard base >= 0 else {
                write.error = .io(Errno(rawValue: errno), .openingFileToSend)
                return true
            }
            write.fileBase = Int64(base)
            write.fileChannel = IOChannel(
                kind: .randomAccess,
                fileDescriptor: descriptor,
                queue: self.ring,
                ring: self.ring
            ) { _ in }
        }
        write.reading = true
        let piece = min(Self.channelReadLength, length - write.taken)
        let start = offset + Int64(write.taken) - write.fileBase
        write.fileChannel!.read(offset: start, length: piece, queue: self.ring) { [self] done, data, error in
            self.fileDataArrived(write, done: done, data: data, error: error, expected: piece)
        }
        return false
    }

    private func fileDataArrived(_ write: _TLSWrite, done: Bool, data: ByteRope?, error: Errno?, expected: Int) {
        self.assertOnRing()
        if let data, !data.isEmpty { write.fileData.append(data) }
        guard done else { return }
        write.reading = false
        let piece = write.fileData
        write.fileData = ByteRope()
        guard !write.finished, !self.failed else { return }
        if !piece.isEmpty {
            guard let encrypted = self.encrypt(piece, from: 0, budgeted: false) else {
                self.pump()
                return
            }
            write.taken += encrypted
        }
        if let error {
            write.error = .io(error, .readingFileToSend)
        } else if piece.count < expected {
            write.error = .io(.noData, .fileEndedBeforeRange)
        }
        self.pump()
    }

    /// One `SSL_write_ex` of all of `bytes` (our BIO never refuses, so it writes all or fails).
    ///
    /// Without `prepareErrorQueue` first (a peek is about 200 instructions a record): a write
    /// that fails has failed for good — our BIO takes every byte, so there is no "want write",
    /// and renegotiation is off, so no "want read" — and entries another user of OpenSSL on
    /// this thread left in the queue could only add to the reason reported.
    private func sslWrite(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var written = 0
        if SSL_write_ex(self.ssl, bytes.baseAddress, bytes.count, &written) == 1 { return true }
        let code = SSL_get_error(self.ssl, 0)
        self.fail(self.error(code, duringHandshake: false))
        return false
    }

    /// `close_notify` once the writes are all encrypted (after `close` or `closeWrite`), and
    /// the socket's FIN after it for a half-close.
    private func progressClose() {
        if self.writeClosed, case .notSent = self.closeNotify, self.toEncrypt.isEmpty {
            _ = SSL_shutdown(self.ssl)  // 0: sent, not yet received; 1: both; < 0: not sent
            ERR_clear_error()  // a shutdown after an error leaves one; nothing reads it
            self.closeNotify = .queued(at: self.outputProduced)
        }
        if case .queued(let at) = self.closeNotify, self.outputAcknowledged >= at {
            self.closeNotify = .sent
        }
        if case .sent = self.closeNotify, !self.closeRequested, !self.outputShutDown, !self.channelClosed {
            self.outputShutDown = true
            _ = Glibc.shutdown(self.socket, CInt(SHUT_WR))
        }
    }

    // MARK: Output

    /// Appends an output segment after the buffered output. `count` is what it adds to the
    /// output's length.
    private func appendSegment(_ segment: Segment, count: Int) {
        self.takeBufferedOutput()
        if case .bytes(let rope) = segment, case .bytes(var last)? = self.segments.last {
            last.append(rope)
            self.segments.replaceLast(.bytes(last))
        } else {
            self.segments.append(segment)
        }
        self.outputProduced += UInt64(count)
    }

    /// Moves what OpenSSL wrote into the output buffer to the segments, as a rope.
    private func takeBufferedOutput() {
        let pending = self.outputSlot.takePending()
        guard !pending.isEmpty else { return }
        self.appendBytesSegment(pending)
    }

    private func appendBytesSegment(_ rope: ByteRope) {
        if case .bytes(var last)? = self.segments.last {
            last.append(rope)
            self.segments.replaceLast(.bytes(last))
        } else {
            self.segments.append(.bytes(rope))
        }
    }

    /// Sends the output segments in order: bytes to the channel at once (its writes keep their
    /// order), kTLS steps once everything before them is written.
    private func flushOutput() {
        if self.segments.isEmpty && !self.channelClosed {
            // The common case: records only, made since the last flush — to the channel as
            // they are, without going through the segments.
            let pending = self.outputSlot.takePending()
            if !pending.isEmpty { self.writeToChannel(pending) }
            return
        }
        self.takeBufferedOutput()
        while let segment = self.segments.first {
            guard !self.channelClosed else { return }
            switch segment {
            case .bytes(let rope):
                _ = self.segments.popFirst()
                self.writeToChannel(rope)
            case .enableTransmit(let info):
                guard self.channelWritesInFlight == 0 else { return }
                _ = self.segments.popFirst()
                let result = info.withUnsafeBytes {
                    setsockopt(self.socket, CInt(SOL_TLS), CInt(TLS_TX), $0.baseAddress, socklen_t($0.count))
                }
                if result != 0 {
                    let error = Errno(rawValue: errno)
                    self.fail(TLSError(.io, reason: "kernel TLS: TLS_TX refused the keys: \(error)", errno: error))
                    return
                }
            case .control(let type, let rope):
                guard self.channelWritesInFlight == 0, self.writableSource == nil else { return }
                let sent = rope.withUnsafeBytes {
                    CRingOpenSSL_send_record(self.socket, type, $0.baseAddress, $0.count)
                }
                if sent < 0 {
                    let error = Errno(rawValue: errno)
                    if error == .resourceTemporarilyUnavailable || error == .interrupted {
                        self.waitUntilWritable()
                        return
                    }
                    self.outputFailed(error, .sendingControlRecord)
                    return
                }
                _ = self.segments.popFirst()
                if sent < rope.count {
                    // The rest is another record of the same type (a handshake message may span
                    // records; an alert is never this long).
                    self.segments.prepend(.control(type: type, rope.subrange(sent..<rope.count)))
                }
                self.acknowledge(UInt64(sent))
            case .file(let write):
                guard case .file(let descriptor, let offset, let length) = write.source else { return }
                _ = self.segments.popFirst()
                self.channelWritesInFlight += 1
                self.channel.write(
                    contentsOf: descriptor,
                    offset: offset,
                    length: length,
                    queue: self.ring
                ) { [self] done, remaining, error in
                    guard done else { return }
                    self.channelWriteDone(count: length - remaining, remaining: nil, error: error)
                }
            }
        }
    }

    private func writeToChannel(_ rope: ByteRope) {
        let count = rope.count
        self.channelWritesInFlight += 1
        self.channel.write(offset: 0, data: rope, queue: self.ring) { [self] done, remaining, error in
            guard done else { return }
            self.channelWriteDone(count: count, remaining: remaining, error: error)
        }
    }

    /// A control record met a full socket: wait for room (a readiness source), then go on.
    private func waitUntilWritable() {
        let source = IOSource.makeWriteSource(fileDescriptor: self.socket, queue: self.ring, ring: self.ring)
        // Strong (see the handshake timer): the source is cancelled when it fires or when the
        // channel closes.
        source.setEventHandler { [weak source] in
            source?.cancel()
            self.writableSource = nil
            self.pump()
        }
        self.writableSource = source
        source.resume()
    }

    /// The socket refused output (EPIPE, ECONNRESET…, or ECANCELED when the channel was
    /// stopped by its owner): the stream has failed.
    private func outputFailed(_ error: Errno, _ what: _FailedAction) {
        guard !self.failed else { return }
        if error == .canceled && !self.stopRequested {
            self.fail(TLSError(.canceled, reason: "the channel under the TLS stream was stopped", errno: error))
        } else {
            self.fail(.io(error, what))
        }
    }

    // MARK: Input

    /// Keeps one channel read going while more ciphertext is useful: during the handshake, and
    /// afterwards while the read side is open and the plaintext buffered ahead is below the
    /// limit — so that a peer that sends more than the reads take is slowed down by TCP.
    private func readMore() {
        guard !self.channelReadActive, !self.channelClosed, !self.inputEOF, self.inputError == nil,
            !self.failed
        else { return }
        switch self.handshakeState {
        case .running: break
        case .failed: return
        case .done:
            guard self.readEnd == nil, self.plaintext.count < Self.plaintextLimit,
                self.inputCount < Self.channelReadLength
            else { return }
        }
        self.channelReadActive = true
        self.channel.read(offset: 0, length: Self.channelReadLength, queue: self.ring) { [self] done, data, error in
            self.channelDelivered(done: done, data: data, error: error)
        }
    }

    /// Ciphertext arrived for an established stream whose first read is a handler read on this
    /// ring — the common case of a request arriving: decrypts it and calls that handler with
    /// the plaintext now, without the pump's other steps and its delivery list. Returns `false`
    /// when the stream is in any other state (or decrypting changed it: an alert, the peer's
    /// `close_notify`, output to send, more plaintext than the read wants), and the pump is
    /// to run.
    ///
    /// The handler runs as it would at the end of the pump: from a channel completion (never
    /// inside a call of the stream's API), with no delivery waiting before it.
    private func deliverDirectly() -> Bool {
        guard self.encryptsDirectly, !self.failed, self.readEnd == nil, !self.closeRequested,
            !self.pumping, !self.inUserCall, self.deferredBatches == 0, self.deliveries.isEmpty,
            self.plaintext.isEmpty, let read = self.reads.first, case .handler(let queue, let handler) = read.target,
            queue === self.ring
        else { return false }
        self.errorQueueChecked = false
        self.decrypt()
        let count = self.plaintext.count
        guard count > 0, count < read.remaining, !self.failed, self.readEnd == nil,
            self.outputSlot.buffer?.pending ?? 0 == 0, self.segments.isEmpty
        else { return false }
        let data = self.plaintext
        self.plaintext = ByteRope()
        read.remaining -= count
        handler(false, data, nil)
        return true
    }

    /// The BIO's read: up to `count` bytes of ciphertext into `buffer`; 0 at the end of the
    /// input (EOF or an error), -1 when there is none yet (OpenSSL then says "want read").
    func bioRead(into buffer: UnsafeMutableRawPointer, count: Int) -> Int {
        if self.inputCount == 0 {
            return self.inputEOF || self.inputError != nil ? 0 : -1
        }
        var copied = 0
        while copied < count, self.inputHead < self.input.count {
            let rope = self.input[self.inputHead]
            let take = min(rope.count - self.inputOffset, count - copied)
            _ = rope.copyBytes(
                to: UnsafeMutableRawBufferPointer(start: buffer + copied, count: take),
                from: self.inputOffset..<self.inputOffset + take
            )
            copied += take
            self.inputOffset += take
            if self.inputOffset == rope.count {
                // Its receive buffers go back to the ring now.
                self.input[self.inputHead] = ByteRope()
                self.inputHead += 1
                self.inputOffset = 0
            }
        }
        if self.inputHead == self.input.count {
            self.input.removeAll(keepingCapacity: true)
            self.inputHead = 0
        }
        self.inputCount -= copied
        return copied
    }

    /// The BIO's write: OpenSSL's output (records; with kTLS, plaintext and control records).
    func bioWrite(_ bytes: UnsafeRawPointer, count: Int) {
        if let type = self.controlRecordType {
            // kTLS: this write is one control record; the socket BIO clears the mark after it.
            self.controlRecordType = nil
            self.appendSegment(
                .control(type: type, ByteRope(copying: UnsafeRawBufferPointer(start: bytes, count: count))),
                count: count
            )
            return
        }
        var done = 0
        while done < count {
            let buffer = self.outputSlot.room(atLeast: min(count - done, 1_024)) { self.appendBytesSegment($0) }
            let take = min(buffer.free, count - done)
            buffer.append(bytes + done, count: take)
            done += take
        }
        self.outputProduced += UInt64(count)
    }

    /// The BIO's controls: flush (always done: the output is ordered), and kTLS's.
    func bioControl(_ command: Int32, _ argument: Int, _ pointer: UnsafeMutableRawPointer?) -> Int {
        switch command {
        case BIO_CTRL_FLUSH:
            return 1
        case BIO_CTRL_GET_KTLS_SEND:
            return self.transmitOffloaded ? 1 : 0
        case BIO_CTRL_GET_KTLS_RECV:
            return 0
        case CRingOpenSSL_BIO_CTRL_SET_KTLS:
            guard argument != 0, let pointer else { return 0 }  // receive keys: kept in user space
            return self.offloadTransmit(cryptoInfo: pointer) ? 1 : 0
        case CRingOpenSSL_BIO_CTRL_SET_KTLS_TX_SEND_CTRL_MSG:
            self.controlRecordType = UInt8(truncatingIfNeeded: argument)
            return 0
        case CRingOpenSSL_BIO_CTRL_CLEAR_KTLS_TX_CTRL_MSG:
            self.controlRecordType = nil
            return 0
        default:
            return 0
        }
    }

    /// OpenSSL offers the transmit keys (kTLS): taken when this socket has the ULP and the
    /// kernel has the cipher. They go to the kernel once everything OpenSSL encrypted before
    /// has been written (`Segment.enableTransmit`); from now on OpenSSL writes plaintext.
    private func offloadTransmit(cryptoInfo: UnsafeMutableRawPointer) -> Bool {
        guard self.kernelEligible, !self.transmitOffloaded else { return false }
        let size = CRingOpenSSL_crypto_info_size(cryptoInfo)
        let cipherType = cryptoInfo.load(fromByteOffset: 2, as: UInt16.self)
        guard size > 0, self.kernelCipherTypes.contains(cipherType) else {
            self.published.withLock {
                $0.offload = .userSpace("the kernel has no TLS_TX for the negotiated cipher (type \(cipherType))")
            }
            return false
        }
        let info = [UInt8](UnsafeRawBufferPointer(start: cryptoInfo, count: size))
        self.appendSegment(.enableTransmit(info), count: 0)
        self.transmitOffloaded = true
        self.published.withLock {
            $0.offload = TLSOffload(transmit: .kernel, receive: .userSpace, reason: TLSOffload.receiveReason)
        }
        return true
    }

    // MARK: Delivering

    private func serveReads() {
        while let read = self.reads.first {
            if !self.plaintext.isEmpty {
                switch read.target {
                case .handler:
                    let count = min(self.plaintext.count, read.remaining)
                    let data = self.takePlaintext(count)
                    read.remaining -= count
                    if read.remaining == 0 {
                        _ = self.reads.popFirst()
                        self.end(read, .success(data))
                    } else {
                        self.deliver(read, data)
                    }
                case .next:
                    _ = self.reads.popFirst()
                    self.end(read, .success(self.takePlaintext(self.plaintext.count)))
                }
            } else if let end = self.readEnd {
                _ = self.reads.popFirst()
                switch end {
                case .closeNotify: self.end(read, .success(nil))
                case .failed(let error): self.end(read, .failure(error))
                }
            } else if let failure = self.failure {
                _ = self.reads.popFirst()
                self.end(read, .failure(failure))
            } else {
                return
            }
        }
    }

    private func takePlaintext(_ count: Int) -> ByteRope {
        if count == self.plaintext.count {
            let all = self.plaintext
            self.plaintext = ByteRope()
            return all
        }
        let head = self.plaintext.subrange(0..<count)
        self.plaintext = self.plaintext.subrange(count..<self.plaintext.count)
        return head
    }

    /// A non-final call of a handler read.
    private func deliver(_ read: _TLSRead, _ data: ByteRope) {
        guard case .handler(let queue, let handler) = read.target else { return }
        self.deliveries.append(.read(queue, handler, done: false, data: data, error: nil))
    }

    /// The final call of a read: `.success(data)` with the last data (a handler read that got
    /// its length, or a `next()`), `.success(nil)` at a clean end, or the error.
    private func end(_ read: _TLSRead, _ outcome: Result<ByteRope?, TLSError>) {
        guard !read.finished else { return }
        read.finished = true
        switch read.target {
        case .handler(let queue, let handler):
            switch outcome {
            case .success(let data?):
                self.deliveries.append(.read(queue, handler, done: true, data: data, error: nil))
            case .success(nil):
                self.deliveries.append(.read(queue, handler, done: true, data: ByteRope(), error: nil))
            case .failure(let error):
                self.deliveries.append(.read(queue, handler, done: true, data: nil, error: error))
            }
        case .next:
            read.continuation?.resume(returning: outcome)
            read.continuation = nil
        }
    }

    private func finish(_ write: _TLSWrite, error: TLSError?) {
        guard !write.finished else { return }
        write.finished = true
        write.fileChannel?.close()
        write.fileChannel = nil
        switch write.target {
        case .handler(let queue, let handler):
            self.deliveries.append(
                .write(queue, handler, remaining: error == nil ? nil : write.remainingBytes, error: error)
            )
        case .awaiting(let continuation):
            continuation.resume(returning: error.map { .failure($0) } ?? .success(()))
        case .fileSend(let queue, let handler):
            self.deliveries.append(
                .fileSend(queue, handler, remaining: error == nil ? 0 : write.count - write.taken, error: error)
            )
        }
    }

    private func resolve(_ waiter: _TLSHandshakeWaiter, _ result: Result<TLSStream.Handshake, TLSError>) {
        switch waiter {
        case .handler(let queue, let handler):
            self.deliveries.append(.handshake(queue, handler, result))
        case .awaiting(let continuation):
            continuation.resume(returning: result)
        }
    }

    /// Makes the calls gathered by the pump: see the type's comment.
    private func runDeliveries() {
        guard !self.deliveries.isEmpty else { return }
        var batch: [_TLSDelivery] = []
        swap(&batch, &self.deliveries)
        if self.inUserCall || self.deferredBatches > 0 {
            self.deferredBatches += 1
            let deferred = batch
            self.ring.enqueue { [self] in
                self.deferredBatches -= 1
                for delivery in deferred { self.dispatch(delivery) }
            }
            return
        }
        for delivery in batch { self.dispatch(delivery) }
        // The array's storage serves the next pump (a handler may have made deliveries meanwhile).
        batch.removeAll(keepingCapacity: true)
        if self.deliveries.isEmpty && self.deliveries.capacity < batch.capacity { self.deliveries = batch }
    }

    private func dispatch(_ delivery: _TLSDelivery) {
        let queue = delivery.queue
        if queue === self.ring {
            delivery.run()
        } else {
            queue._enqueue { delivery.run() }
        }
    }

    // MARK: Failing and finishing

    /// The stream cannot go on: handshake waiters and writes fail with `error`; reads get the
    /// plaintext already decrypted, then `error`. OpenSSL's alert, if it queued one, is still
    /// flushed before the channel is closed.
    private func fail(_ error: TLSError) {
        guard !self.failed else { return }
        self.failure = error
        self.failed = true
        self.timer?.cancel()
        self.timer = nil
        if case .running = self.handshakeState {
            self.handshakeState = .failed(error)
            let waiters = self.handshakeWaiters
            self.handshakeWaiters = []
            for waiter in waiters { self.resolve(waiter, .failure(error)) }
        }
        if self.readEnd == nil { self.readEnd = .failed(error) }
        while let write = self.toEncrypt.popFirst() { self.finish(write, error: error) }
        while let write = self.awaitingAck.popFirst() { self.finish(write, error: error) }
    }

    /// Fails the stream and drops what it has not sent: stop, time-out, close mid-handshake.
    private func abort(with error: TLSError) {
        self.fail(error)
        self.plaintext = ByteRope()
        self.segments.removeAll()
        self.closeChannel()
    }

    /// Closes the channel when the stream is done with it: failed (and its alert written), or
    /// closed with its `close_notify` written and no read left waiting for the peer.
    private func finishIfDone() {
        guard !self.channelClosed else { return }
        let outputIdle = self.channelWritesInFlight == 0 && self.segments.isEmpty
        if self.failed {
            // Its alert written — or not waited for once the stream is closed (a peer that
            // does not read would keep it forever).
            if outputIdle || self.closeRequested { self.closeChannel() }
            return
        }
        guard self.closeRequested, outputIdle, self.toEncrypt.isEmpty, self.awaitingAck.isEmpty else { return }
        if case .sent = self.closeNotify, self.reads.isEmpty {
            self.closeChannel()
        }
    }

    private func closeChannel() {
        guard !self.channelClosed else { return }
        self.channelClosed = true
        self.timer?.cancel()
        self.timer = nil
        self.writableSource?.cancel()
        self.writableSource = nil
        // Every write of ours has been written (or has failed): stop ends the pending read.
        self.channel.close(flags: .stop)
        let error = self.failure ?? .closedStream
        if self.readEnd == nil { self.readEnd = .failed(error) }
        while let read = self.reads.popFirst() {
            if !self.plaintext.isEmpty, case .next = read.target {
                self.end(read, .success(self.takePlaintext(self.plaintext.count)))
            } else {
                self.end(read, .failure(error))
            }
        }
        while let write = self.toEncrypt.popFirst() { self.finish(write, error: error) }
        while let write = self.awaitingAck.popFirst() { self.finish(write, error: error) }
        self.input.removeAll()
        self.inputCount = 0
    }

    // MARK: Errors

    /// The error of an OpenSSL call that failed with `SSL_get_error` `code`, with OpenSSL's
    /// error queue (emptied) as its reason.
    private func error(_ code: Int32, duringHandshake: Bool) -> TLSError {
        if let errno = self.inputError {
            _ = _OpenSSLErrors.drain(or: "")
            if errno == .canceled {
                return TLSError(.canceled, reason: "the channel under the TLS stream was stopped", errno: errno)
            }
            return .io(errno, .readingFromSocket)
        }
        let verify = SSL_get_verify_result(self.ssl)
        if duringHandshake && verify != X509_V_OK {
            let message = String(cString: X509_verify_cert_error_string(verify))
            return TLSError(
                .certificateVerificationFailed,
                reason: _OpenSSLErrors.drain(or: message),
                verificationFailure: TLSError.VerificationFailure(code: verify, message: message)
            )
        }
        let first = ERR_peek_error()
        let unexpectedEOF =
            (code == SSL_ERROR_SSL && ERR_GET_LIB(first) == ERR_LIB_SSL
                && ERR_GET_REASON(first) == SSL_R_UNEXPECTED_EOF_WHILE_READING)
            || (code == SSL_ERROR_SYSCALL && self.inputEOF)
        if unexpectedEOF {
            _ = _OpenSSLErrors.drain(or: "")
            if duringHandshake {
                return TLSError(.handshakeFailed, reason: "the peer closed the connection during the handshake")
            }
            return TLSError(.uncleanShutdown, reason: "the peer closed the connection without close_notify")
        }
        if code == SSL_ERROR_ZERO_RETURN {
            return TLSError(.handshakeFailed, reason: "the peer sent close_notify during the handshake")
        }
        let reason = _OpenSSLErrors.drain(or: "SSL_get_error \(code)")
        return TLSError(duringHandshake ? .handshakeFailed : .protocolError, reason: reason)
    }
}
