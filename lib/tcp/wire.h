/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The tcp provider's wire format (docs/provider-tcp.md, "Wire format").
 *
 * One VI connection is one TCP stream. Everything on it is a frame: a
 * 32-byte header, then hdr.len payload bytes. The requester opens the
 * stream with HELLO; the server answers ACCEPT or REJECT (VIA §4.1); after
 * ACCEPT both ends send data frames (SEND, RDMA_WRITE, READ_REQ), numbered
 * in hdr.seq from 0 in each direction, and answers (READ_RESP, NAK) that
 * name in hdr.seq the data frame they answer. VipDisconnect sends DISC
 * last, so that the peer can tell a hang-up from a lost connection (a
 * stream that ends without it). Every multi-byte field is
 * big-endian (network order); the structs below are the bytes on the wire.
 *
 * TCP delivers in order, exactly once, or tells of the loss by closing the
 * stream: that is what Reliable Delivery asks (VIA §2.5.2), and more than
 * Unreliable does (§2.5.1), which implementers may give (§6.3.1.1: "more
 * strict ordering rules than those exposed above").
 */
#ifndef VIPL_TCP_WIRE_H
#define VIPL_TCP_WIRE_H

#include <stddef.h>
#include <stdint.h>

/** HELLO and answer bodies start with these, so a stray client is refused. */
#define TCP_WIRE_MAGIC 0x56495054u /* "VIPT" */
#define TCP_WIRE_VERSION 1u

/** Longest discriminator (VIP_NIC_ATTRIBUTES::MaxDiscriminatorLen, VIA §9.10.4: >= 16). */
#define TCP_WIRE_MAX_DISC 64

/** Frame types (hdr.type). */
enum tcp_wire_type {
	TCP_WIRE_HELLO = 1,      /**< requester -> server: struct tcp_wire_hello (VIA §9.4.4) */
	TCP_WIRE_ACCEPT = 2,     /**< server -> requester: struct tcp_wire_answer (§9.4.2) */
	TCP_WIRE_REJECT = 3,     /**< server -> requester: struct tcp_wire_answer (§9.4.3) */
	TCP_WIRE_SEND = 4,       /**< a Send's data, for the peer's next receive descriptor */
	TCP_WIRE_RDMA_WRITE = 5, /**< data for the peer's region (rdma_va, rdma_handle) */
	TCP_WIRE_READ_REQ = 6,   /**< asks arg bytes of the peer's region; no payload */
	TCP_WIRE_READ_RESP = 7,  /**< the bytes a READ_REQ asked, or arg: its error status */
	TCP_WIRE_NAK = 8,        /**< the data frame seq was refused; arg: VIP_STATUS_* bits */
	TCP_WIRE_DISC = 9,       /**< VipDisconnect: the last frame; no payload (VIA §4.2) */
};

/** hdr.flags */
#define TCP_WIRE_F_IMM 0x01 /**< hdr.imm holds immediate data (VIA §10.2 bit 2) */

/** The header of every frame. */
struct tcp_wire_hdr {
	uint8_t type;         /**< enum tcp_wire_type */
	uint8_t flags;        /**< TCP_WIRE_F_* */
	uint16_t reserved;    /**< 0 */
	uint32_t len;         /**< payload bytes after this header */
	uint32_t seq;         /**< data frames: their number; READ_RESP, NAK: the number answered */
	uint32_t imm;         /**< immediate data, with TCP_WIRE_F_IMM */
	uint64_t rdma_va;     /**< RDMA_WRITE, READ_REQ: the peer's buffer (VIA §10.3) */
	uint32_t rdma_handle; /**< RDMA_WRITE, READ_REQ: its memory handle */
	uint32_t arg;         /**< READ_REQ: bytes asked; READ_RESP, NAK: VIP_STATUS_* error | op */
};

_Static_assert(sizeof(struct tcp_wire_hdr) == 32, "frame header is 32 bytes on the wire");
_Static_assert(offsetof(struct tcp_wire_hdr, rdma_va) == 16, "rdma_va is at byte 16");
_Static_assert(offsetof(struct tcp_wire_hdr, arg) == 28, "arg is at byte 28");

/** A VI network address (VIA §9.10.8): host address, then discriminator. */
struct tcp_wire_addr {
	uint8_t host[6];                  /**< IPv4 address, TCP port: the NIC address */
	uint8_t disc_len;                 /**< discriminator bytes used */
	uint8_t reserved;                 /**< 0 */
	uint8_t disc[TCP_WIRE_MAX_DISC];  /**< the discriminator */
};

_Static_assert(sizeof(struct tcp_wire_addr) == 72, "an address is 72 bytes on the wire");

/** VI attributes that the two ends compare (VIA §4.1, §9.4.2, §9.10.5). */
struct tcp_wire_attr {
	uint32_t max_transfer; /**< MaxTransferSize */
	uint32_t qos;          /**< QoS (0: the only one offered) */
	uint16_t reliability;  /**< one VIP_SERVICE_* bit */
	uint8_t rdma_write;    /**< EnableRdmaWrite */
	uint8_t rdma_read;     /**< EnableRdmaRead */
	uint32_t reserved;     /**< 0 */
};

_Static_assert(sizeof(struct tcp_wire_attr) == 16, "attributes are 16 bytes on the wire");

/** HELLO's body: who asks, for which address, with which VI. */
struct tcp_wire_hello {
	uint32_t magic;            /**< TCP_WIRE_MAGIC */
	uint16_t version;          /**< TCP_WIRE_VERSION */
	uint16_t reserved;         /**< 0 */
	struct tcp_wire_addr src;  /**< the requester's NIC address and its local discriminator */
	struct tcp_wire_addr dst;  /**< the address it connects to (its discriminator selects) */
	struct tcp_wire_attr attr; /**< the requesting VI's attributes */
};

_Static_assert(sizeof(struct tcp_wire_hello) == 168, "HELLO's body is 168 bytes on the wire");

/** ACCEPT's and REJECT's body. */
struct tcp_wire_answer {
	uint32_t magic;            /**< TCP_WIRE_MAGIC */
	uint16_t version;          /**< TCP_WIRE_VERSION */
	uint16_t reserved;         /**< 0 */
	struct tcp_wire_attr attr; /**< ACCEPT: the accepting VI's attributes; REJECT: zeros */
};

_Static_assert(sizeof(struct tcp_wire_answer) == 24, "an answer's body is 24 bytes on the wire");

#endif /* VIPL_TCP_WIRE_H */
