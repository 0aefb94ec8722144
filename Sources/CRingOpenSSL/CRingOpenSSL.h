//===----------------------------------------------------------------------===//
// RingIO — RingTLS: the OpenSSL 3 shim (libssl-dev, pkg-config "openssl").
//
// Copyright (c) 2026 the RingIO authors. Licensed under Apache License v2.0;
// see LICENSE. SPDX-License-Identifier: Apache-2.0
//===----------------------------------------------------------------------===//

#ifndef CRINGOPENSSL_H
#define CRINGOPENSSL_H

// glibc first, so that <features.h> is processed with the macros Swift's Glibc module uses
// (the same order as the liburing shim, Sources/CLiburing/CLiburing.h).
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
// The kernel's TLS ULP (kTLS): the crypto_info structures the kernel takes in TLS_TX.
#include <linux/tls.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

// Everything below is what the Swift importer cannot see: function-like macros (over
// SSL_ctrl/SSL_CTX_ctrl/BIO_*), and constants built from them. One line each says which.

// SSL_OP_* are built with the function-like macro SSL_OP_BIT(n) (a cast and a shift).
static const uint64_t CRingOpenSSL_OP_NO_COMPRESSION = SSL_OP_NO_COMPRESSION;
static const uint64_t CRingOpenSSL_OP_NO_RENEGOTIATION = SSL_OP_NO_RENEGOTIATION;
static const uint64_t CRingOpenSSL_OP_NO_TICKET = SSL_OP_NO_TICKET;
static const uint64_t CRingOpenSSL_OP_CIPHER_SERVER_PREFERENCE = SSL_OP_CIPHER_SERVER_PREFERENCE;
static const uint64_t CRingOpenSSL_OP_ENABLE_KTLS = SSL_OP_ENABLE_KTLS;

// SSL_CTX_set_min_proto_version / _max_: macros over SSL_CTX_ctrl.
static inline int CRingOpenSSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_min_proto_version(ctx, version);
}
static inline int CRingOpenSSL_CTX_set_max_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_max_proto_version(ctx, version);
}
// SSL_CTX_set_mode: a macro over SSL_CTX_ctrl.
static inline long CRingOpenSSL_CTX_set_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_mode(ctx, mode);
}
// SSL_CTX_set_read_ahead: a macro over SSL_CTX_ctrl.
static inline void CRingOpenSSL_CTX_set_read_ahead(SSL_CTX *ctx, int yes) {
    SSL_CTX_set_read_ahead(ctx, yes);
}
// SSL_CTX_set_session_cache_mode: a macro over SSL_CTX_ctrl.
static inline long CRingOpenSSL_CTX_set_session_cache_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_session_cache_mode(ctx, mode);
}
// SSL_CTX_add1_chain_cert: a macro over SSL_CTX_ctrl.
static inline int CRingOpenSSL_CTX_add1_chain_cert(SSL_CTX *ctx, X509 *certificate) {
    return (int)SSL_CTX_add1_chain_cert(ctx, certificate);
}
// SSL_CTX_set_tlsext_servername_callback: a macro over SSL_CTX_callback_ctrl that casts the
// callback to `void (*)(void)`; this one keeps its type.
static inline int CRingOpenSSL_CTX_set_servername_callback(
    SSL_CTX *ctx, int (*callback)(SSL *ssl, int *alert, void *argument)) {
    return (int)SSL_CTX_set_tlsext_servername_callback(ctx, callback);
}
// SSL_set_tlsext_host_name: a macro over SSL_ctrl (the SNI a client sends).
static inline int CRingOpenSSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}
// BIO_set_retry_read / BIO_clear_retry_flags: macros over BIO_set_flags / BIO_clear_flags.
static inline void CRingOpenSSL_BIO_set_retry_read(BIO *bio) {
    BIO_set_retry_read(bio);
}
static inline void CRingOpenSSL_BIO_clear_retry_flags(BIO *bio) {
    BIO_clear_retry_flags(bio);
}
// XN_FLAG_RFC2253: an OR of macros that are themselves ORs of casts.
static const unsigned long CRingOpenSSL_XN_FLAG_RFC2253 = XN_FLAG_RFC2253;
// OPENSSL_free: a macro over CRYPTO_free that passes the source file and line.
static inline void CRingOpenSSL_free(void *pointer) {
    OPENSSL_free(pointer);
}

// kTLS. OpenSSL hands a BIO the kernel's crypto_info through BIO_CTRL_SET_KTLS, which its
// public headers leave out (internal/bio.h); so do the two controls around control records.
static const int CRingOpenSSL_BIO_CTRL_SET_KTLS = 72;
static const int CRingOpenSSL_BIO_CTRL_SET_KTLS_TX_SEND_CTRL_MSG = 74;
static const int CRingOpenSSL_BIO_CTRL_CLEAR_KTLS_TX_CTRL_MSG = 75;

// The size of the kernel structure that starts at `info` (a `struct tls_crypto_info` header
// followed by the cipher's keys), from its cipher type; 0 for a cipher this header does not
// know. OpenSSL's own wrapper around it is internal: only the kernel's part is read.
static inline size_t CRingOpenSSL_crypto_info_size(const void *info) {
    const struct tls_crypto_info *header = (const struct tls_crypto_info *)info;
    switch (header->cipher_type) {
    case TLS_CIPHER_AES_GCM_128: return sizeof(struct tls12_crypto_info_aes_gcm_128);
    case TLS_CIPHER_AES_GCM_256: return sizeof(struct tls12_crypto_info_aes_gcm_256);
    case TLS_CIPHER_AES_CCM_128: return sizeof(struct tls12_crypto_info_aes_ccm_128);
    case TLS_CIPHER_CHACHA20_POLY1305: return sizeof(struct tls12_crypto_info_chacha20_poly1305);
    default: return 0;
    }
}

// The control callback of a stream BIO that never hands its keys to the kernel (kTLS off, or
// unavailable for the socket): OpenSSL asks it about seventy times a handshake (flush, "is
// this kTLS?"), and here each answer is a few instructions, not a call into Swift. Flushing
// succeeds (there is no buffer under it: records go to the stream's output as written); no
// kTLS; every other command is unsupported (0), as BIO_ctrl's callers expect.
static inline long CRingOpenSSL_BIO_user_space_control(BIO *bio, int command, long argument, void *pointer) {
    (void)bio;
    (void)argument;
    (void)pointer;
    return command == BIO_CTRL_FLUSH ? 1 : 0;
}

// TLS_1_3_VERSION is built with the function-like macro TLS_VERSION_NUMBER.
static const unsigned short CRingOpenSSL_TLS_1_3_VERSION = TLS_1_3_VERSION;

// Sends `length` bytes as one TLS record of `type` through a kTLS socket: sendmsg with a
// TLS_SET_RECORD_TYPE control message, built with CMSG_* (function-like macros). Never blocks
// (MSG_DONTWAIT) and never raises SIGPIPE (MSG_NOSIGNAL). Returns what sendmsg returns; errno
// is set on failure.
static inline ssize_t CRingOpenSSL_send_record(int fd, unsigned char type, const void *bytes, size_t length) {
    char control[CMSG_SPACE(sizeof(unsigned char))];
    memset(control, 0, sizeof(control));
    struct iovec vector = { .iov_base = (void *)bytes, .iov_len = length };
    struct msghdr message;
    memset(&message, 0, sizeof(message));
    message.msg_iov = &vector;
    message.msg_iovlen = 1;
    message.msg_control = control;
    message.msg_controllen = sizeof(control);
    struct cmsghdr *header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_TLS;
    header->cmsg_type = TLS_SET_RECORD_TYPE;
    header->cmsg_len = CMSG_LEN(sizeof(unsigned char));
    *CMSG_DATA(header) = type;
    return sendmsg(fd, &message, MSG_DONTWAIT | MSG_NOSIGNAL);
}

#endif
