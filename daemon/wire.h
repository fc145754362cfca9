/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The VIA wire format (docs/wire-format.md): Ethernet II frames of EtherType
 * 0x88B5 (IEEE 802 "local experimental EtherType 1": no registration, never
 * routed) carrying one via_wire_hdr and up to MTU - 48 bytes of payload.
 *
 * Every multi-byte field is big-endian on the wire and reached only through
 * the accessors below, which hide byte order. The header carries a CRC32C
 * of itself and one of the payload: virtual ports (memif, af_xdp, af_packet
 * over veth, loopback) have no FCS, and VIA §2.5 requires corrupt data to be
 * detected at every reliability level.
 */
#ifndef VIA_WIRE_H
#define VIA_WIRE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <rte_byteorder.h>
#include <rte_ether.h>
#include <rte_hash_crc.h>

#include "via_ethertype.h"

/* 2: the three-way handshake and request cookies (CONN_ACK, CONN_COOKIE;
 * docs/wire-format.md section 7): a version-1 viad would take CONN_ACCEPT
 * as the end of the handshake, so the two do not talk */
#define VIA_WIRE_VERSION  2

/** Opcodes; the table in wire.c says what each carries. */
enum via_wire_op {
	VIA_OP_CONN_REQ = 1,   /**< CM: connect to the VI listening on a discriminator (§4.1);
				*   imm: the server's cookie (CONN_COOKIE), 0 at first */
	VIA_OP_CONN_ACCEPT,    /**< CM: request accepted; src_vi is the acceptor's VI */
	VIA_OP_CONN_REJECT,    /**< CM: request rejected (VipConnectReject); or, to an
				*   acceptor, an accept refused (imm VIA_REJECT_ABANDONED) */
	VIA_OP_CONN_NOMATCH,   /**< CM: nobody waits on that discriminator (yet) */
	VIA_OP_DISC,           /**< CM: the peer disconnected (§4.2) */
	VIA_OP_RESET,          /**< a frame arrived for a connection that does not exist */
	VIA_OP_SEND,           /**< data: one frame of a Send message */
	VIA_OP_ACK,            /**< reliable levels: seq = next frame expected (cumulative) */
	VIA_OP_NAK,            /**< the receiver failed frame seq; imm = VIP_STATUS_* error
				*   and op bits; on a reliable level the connection breaks */
	VIA_OP_RDMA_WRITE,     /**< data: one frame of an RDMA Write, placed at rdma.va + offset */
	VIA_OP_RDMA_READ_REQ,  /**< reliable levels: read msg_len bytes at rdma.va; msg_id names it */
	VIA_OP_RDMA_READ_RESP, /**< data: one frame of the answer to READ_REQ msg_id */
	VIA_OP_CONN_ACK,       /**< CM: the requester took CONN_ACCEPT: the acceptor connects */
	VIA_OP_CONN_COOKIE,    /**< CM: a request heard, nothing kept for it: send it again
				*   with imm (a cookie for the source MAC) in imm */
	VIA_OP_COUNT,
};

/**
 * Why a CONN_REJECT refuses, in its imm (docs/wire-format.md section 7.4):
 * the consumer did, or the attributes of the two VIs cannot make a
 * connection (§9.4.2's conflicts: VipConnectPeerDone/Wait return them).
 */
enum via_wire_reject {
	VIA_REJECT_CONSUMER = 0,      /**< VipConnectReject (or an older viad) */
	VIA_REJECT_RELIABILITY,       /**< the reliability levels differ (§2.5, §4.1) */
	VIA_REJECT_MTU,               /**< a MaxTransferSize of 0: nothing to agree on */
	VIA_REJECT_QOS,               /**< the qualities of service differ */
	VIA_REJECT_ABANDONED,         /**< to an acceptor: the requester has no such
				       *   request (it gave up): the accept fails */
};

/** via_wire_hdr flags */
#define VIA_WF_IMM    0x0001  /**< imm carries immediate data (VIA §10.2 bit 2) */
#define VIA_WF_PEER   0x0002  /**< CONN_REQ of VipConnectPeerRequest */
#define VIA_WF_PROBE  0x0004  /**< ACK that asks for an ACK back: keepalive, retransmission timer */
#define VIA_WF_PLACED 0x0008  /**< ACK whose imm is the frame before which all are placed */
#define VIA_WF_REPLY  0x0010  /**< ACK that answers a PROBE */
#define VIA_WF_INTACT 0x0020  /**< CONN_REQ, CONN_ACCEPT: the sender's port cannot alter
			       *   frames (VIA_PORT_CAP_INTACT): data frames to it may
			       *   go VIA_WF_UNSUMMED if the receiver's port cannot either */
#define VIA_WF_UNSUMMED 0x0040 /**< data frame whose payload_crc was not computed (0):
				*   taken only on a port that cannot alter frames */

/** Opcode properties (wire.c table). */
#define VIA_OPF_CM   0x1     /**< handled by the connection manager (control thread) */
#define VIA_OPF_DATA 0x2     /**< a frame of a message (msg_id, offset, msg_len) */
#define VIA_OPF_XPORT 0x4    /**< transport control of the reliable levels (poll lcore) */

struct via_wire_op_info {
	const char *name;
	uint16_t flags;          /**< VIA_OPF_* */
	uint16_t payload_min;    /**< bytes of payload a valid frame carries at least */
	uint16_t payload_max;    /**< ... and at most (UINT16_MAX: up to the MTU) */
	uint16_t ext_len;        /**< an extension header at the start of the payload
				  *   (struct via_wire_rdma), before the data */
};

/** The table, indexed by opcode; NULL name for unused entries. */
extern const struct via_wire_op_info via_wire_ops[VIA_OP_COUNT];

/** The VIA header: 48 bytes, after the Ethernet header. */
struct via_wire_hdr {
	uint8_t     version;     /**< VIA_WIRE_VERSION */
	uint8_t     opcode;      /**< enum via_wire_op */
	rte_be16_t  flags;       /**< VIA_WF_* */
	rte_be32_t  dst_vi;      /**< receiver's VI id; 0 in a CONN_REQ */
	rte_be32_t  src_vi;      /**< sender's VI id */
	rte_be32_t  conn_id;     /**< connection identifier, chosen per attempt */
	rte_be32_t  seq;         /**< frame sequence on the connection */
	rte_be32_t  msg_id;      /**< message number on the connection */
	rte_be32_t  msg_len;     /**< total bytes of the message */
	rte_be32_t  offset;      /**< byte offset of this frame's payload */
	rte_be32_t  imm;         /**< immediate data (VIA_WF_IMM) */
	rte_be16_t  payload_len; /**< payload bytes in this frame */
	rte_be16_t  reserved;    /**< zero */
	rte_be32_t  payload_crc; /**< CRC32C of the payload */
	rte_be32_t  hdr_crc;     /**< CRC32C of this header with hdr_crc = 0 */
} __rte_packed;
_Static_assert(sizeof(struct via_wire_hdr) == 48, "via_wire_hdr is wire format");

/** Bytes before the payload in a frame. */
#define VIA_FRAME_HDR_LEN (RTE_ETHER_HDR_LEN + sizeof(struct via_wire_hdr))

#define VIA_WIRE_FIELD16(f)                                                            \
	static inline uint16_t via_wire_##f(const struct via_wire_hdr *h)              \
	{ return rte_be_to_cpu_16(h->f); }                                            \
	static inline void via_wire_set_##f(struct via_wire_hdr *h, uint16_t v)        \
	{ h->f = rte_cpu_to_be_16(v); }
#define VIA_WIRE_FIELD32(f)                                                            \
	static inline uint32_t via_wire_##f(const struct via_wire_hdr *h)              \
	{ return rte_be_to_cpu_32(h->f); }                                            \
	static inline void via_wire_set_##f(struct via_wire_hdr *h, uint32_t v)        \
	{ h->f = rte_cpu_to_be_32(v); }

VIA_WIRE_FIELD16(flags)
VIA_WIRE_FIELD32(dst_vi)
VIA_WIRE_FIELD32(src_vi)
VIA_WIRE_FIELD32(conn_id)
VIA_WIRE_FIELD32(seq)
VIA_WIRE_FIELD32(msg_id)
VIA_WIRE_FIELD32(msg_len)
VIA_WIRE_FIELD32(offset)
VIA_WIRE_FIELD32(imm)
VIA_WIRE_FIELD16(payload_len)

#undef VIA_WIRE_FIELD16
#undef VIA_WIRE_FIELD32

/**
 * A header without message data (the connection manager's, the
 * transport's): who from, who to, which connection; everything else 0.
 */
static inline void
via_wire_hdr_init(struct via_wire_hdr *h, uint8_t op, uint16_t flags, uint32_t dst_vi,
		  uint32_t src_vi, uint32_t conn_id)
{
	memset(h, 0, sizeof(*h));
	h->opcode = op;
	via_wire_set_flags(h, flags);
	via_wire_set_dst_vi(h, dst_vi);
	via_wire_set_src_vi(h, src_vi);
	via_wire_set_conn_id(h, conn_id);
}

/**
 * CRC32C of a header as if its hdr_crc were 0. rte_hash_crc() reads 8-byte
 * words, so the header is copied into a union with such words first: the
 * compiler may not assume the struct and the words do not alias.
 */
static inline uint32_t
via_wire_hdr_crc(const struct via_wire_hdr *h)
{
	union {
		struct via_wire_hdr hdr;
		uint64_t words[sizeof(struct via_wire_hdr) / 8];
	} u;

	memcpy(&u.hdr, h, sizeof(u.hdr));
	u.hdr.hdr_crc = 0;
	return rte_hash_crc(u.words, sizeof(u.words), 0xffffffff);
}

/**
 * Finish a header for a payload of @p len bytes: version and length, no
 * CRCs (zero). For frames that stay in viad's memory (to the NIC's own
 * address): nothing checks them, so nothing computes them.
 */
static inline void
via_wire_finish(struct via_wire_hdr *h, uint16_t len)
{
	h->version = VIA_WIRE_VERSION;
	h->reserved = 0;
	via_wire_set_payload_len(h, len);
	h->payload_crc = 0;
	h->hdr_crc = 0;
}

/**
 * Seal a header: version, length, both CRCs. Its payload is the @p head_len
 * bytes that follow it, then the @p data_len bytes at @p data: a zero-copy
 * frame's data is in another segment (CRC32C runs on over the pieces).
 */
static inline void
via_wire_seal(struct via_wire_hdr *h, uint16_t head_len, const void *data, uint16_t data_len)
{
	uint32_t crc = rte_hash_crc(h + 1, head_len, 0xffffffff);

	via_wire_finish(h, (uint16_t)(head_len + data_len));
	h->payload_crc = rte_cpu_to_be_32(rte_hash_crc(data, data_len, crc));
	h->hdr_crc = rte_cpu_to_be_32(via_wire_hdr_crc(h));
}

/**
 * Seal a header whose payload goes without its CRC (VIA_WF_UNSUMMED): on a
 * connection both of whose ports cannot alter a frame (VIA_WF_INTACT). The
 * header keeps its CRC, so the flag itself is covered.
 */
static inline void
via_wire_seal_unsummed(struct via_wire_hdr *h, uint16_t len)
{
	via_wire_set_flags(h, via_wire_flags(h) | VIA_WF_UNSUMMED);
	via_wire_finish(h, len);
	h->hdr_crc = rte_cpu_to_be_32(via_wire_hdr_crc(h));
}

/**
 * Validate a received header and payload (@p avail bytes follow the header).
 * @p intact: the port it came in on cannot alter frames (VIA_PORT_CAP_INTACT),
 * so a payload sent without its CRC (VIA_WF_UNSUMMED) is taken; elsewhere
 * such a frame is refused as corrupt.
 * @return 0, -EPROTO (version, opcode, reserved or length invalid),
 *         -EBADMSG (a CRC does not match, or VIA_WF_UNSUMMED on a port that
 *         is not @p intact: corrupt)
 */
int via_wire_check(const struct via_wire_hdr *h, uint32_t avail, bool intact);

/**
 * The RDMA extension: the first 16 bytes of the payload of RDMA_WRITE and
 * RDMA_READ_REQ frames, from the descriptor's address segment (VIA §10.3).
 * Every frame carries it, so each frame is placed on its own.
 */
struct via_wire_rdma {
	rte_be64_t va;            /**< remote virtual address of the message's byte 0 */
	rte_be32_t handle;        /**< remote memory handle */
	rte_be32_t reserved;      /**< zero */
} __rte_packed;
_Static_assert(sizeof(struct via_wire_rdma) == 16, "via_wire_rdma is wire format");

/** The RDMA extension's remote address of frame @p h (RDMA opcodes only). */
static inline uint64_t
via_wire_rdma_va(const struct via_wire_hdr *h)
{
	return rte_be_to_cpu_64(((const struct via_wire_rdma *)(h + 1))->va);
}

/** The RDMA extension's remote memory handle of frame @p h. */
static inline uint32_t
via_wire_rdma_handle(const struct via_wire_hdr *h)
{
	return rte_be_to_cpu_32(((const struct via_wire_rdma *)(h + 1))->handle);
}

/** Data bytes in frame @p h: its payload less the opcode's extension. */
static inline uint32_t
via_wire_data_len(const struct via_wire_hdr *h)
{
	return via_wire_payload_len(h) - via_wire_ops[h->opcode].ext_len;
}

/**
 * CM payload (CONN_REQ, CONN_ACCEPT): who is connecting to whom and with
 * which VI attributes (VIA §4.1: reliability and MTU must agree).
 */
#define VIA_WIRE_DISC_MAX 64
/**
 * The smallest frame_payload a peer may announce (0 aside): that of the
 * smallest port MTU viad takes, 68 (daemon/conf.c), less the VIA header.
 * Every frame of a connection then has room for its opcode's extension and
 * data; via_wire_check() refuses a connection payload below it.
 */
#define VIA_WIRE_MIN_FRAME_PAYLOAD (68 - 48)
struct via_wire_conn {
	rte_be16_t reliability;       /**< VIP_SERVICE_* bit */
	uint8_t    rdma_write;
	uint8_t    rdma_read;
	rte_be32_t max_transfer;
	rte_be32_t qos;
	uint8_t    dst_disc_len;      /**< discriminator the request targets */
	uint8_t    src_disc_len;      /**< requester's own discriminator */
	rte_be16_t frame_payload;     /**< largest payload per frame the sender's
				       *   port takes; both ends use the smaller */
	uint8_t    dst_disc[VIA_WIRE_DISC_MAX];
	uint8_t    src_disc[VIA_WIRE_DISC_MAX];
} __rte_packed;
_Static_assert(sizeof(struct via_wire_conn) == 144, "via_wire_conn is wire format");

#endif /* VIA_WIRE_H */
