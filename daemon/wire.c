/* SPDX-License-Identifier: BSD-3-Clause */
/* The opcode table and header validation of the VIA wire format. */
#include <errno.h>

#include "wire.h"

#define CONN_PAYLOAD sizeof(struct via_wire_conn)
#define RDMA_EXT     sizeof(struct via_wire_rdma)

#define OP(name_, flags_, min_, max_, ext_)                                     \
	{ .name = name_, .flags = flags_, .payload_min = min_, .payload_max = max_,   \
	  .ext_len = ext_ }

const struct via_wire_op_info via_wire_ops[VIA_OP_COUNT] = {
	[VIA_OP_CONN_REQ]       = OP("conn_req", VIA_OPF_CM, CONN_PAYLOAD, CONN_PAYLOAD, 0),
	[VIA_OP_CONN_ACCEPT]    = OP("conn_accept", VIA_OPF_CM, CONN_PAYLOAD, CONN_PAYLOAD, 0),
	[VIA_OP_CONN_REJECT]    = OP("conn_reject", VIA_OPF_CM, 0, 0, 0),
	[VIA_OP_CONN_NOMATCH]   = OP("conn_nomatch", VIA_OPF_CM, 0, 0, 0),
	[VIA_OP_DISC]           = OP("disc", VIA_OPF_CM, 0, 0, 0),
	[VIA_OP_RESET]          = OP("reset", VIA_OPF_CM, 0, 0, 0),
	[VIA_OP_SEND]           = OP("send", VIA_OPF_DATA, 0, UINT16_MAX, 0),
	[VIA_OP_ACK]            = OP("ack", VIA_OPF_XPORT, 0, 0, 0),
	[VIA_OP_NAK]            = OP("nak", VIA_OPF_XPORT, 0, 0, 0),
	[VIA_OP_RDMA_WRITE]     = OP("rdma_write", VIA_OPF_DATA, RDMA_EXT, UINT16_MAX, RDMA_EXT),
	[VIA_OP_RDMA_READ_REQ]  = OP("rdma_read_req", VIA_OPF_XPORT, RDMA_EXT, RDMA_EXT, RDMA_EXT),
	[VIA_OP_RDMA_READ_RESP] = OP("rdma_read_resp", VIA_OPF_DATA, 0, UINT16_MAX, 0),
	[VIA_OP_CONN_ACK]       = OP("conn_ack", VIA_OPF_CM, 0, 0, 0),
	[VIA_OP_CONN_COOKIE]    = OP("conn_cookie", VIA_OPF_CM, 0, 0, 0),
};

#undef OP

int
via_wire_check(const struct via_wire_hdr *h, uint32_t avail, bool intact)
{
	const struct via_wire_op_info *op;
	uint16_t len = via_wire_payload_len(h);

	if (rte_be_to_cpu_32(h->hdr_crc) != via_wire_hdr_crc(h))
		return -EBADMSG;
	if (h->version != VIA_WIRE_VERSION || h->opcode == 0 || h->opcode >= VIA_OP_COUNT ||
	    h->reserved != 0)
		return -EPROTO;
	op = &via_wire_ops[h->opcode];
	/* frames may be padded to the Ethernet minimum: avail may exceed len */
	if (len > avail || len < op->payload_min || len > op->payload_max)
		return -EPROTO;
	if (op->flags & VIA_OPF_DATA) {
		uint32_t off = via_wire_offset(h), total = via_wire_msg_len(h);
		uint32_t data = len - op->ext_len;

		if (off > total || data > total - off)
			return -EPROTO;
	}
	if (op->ext_len > 0 && ((const struct via_wire_rdma *)(h + 1))->reserved != 0)
		return -EPROTO;
	if (via_wire_flags(h) & VIA_WF_UNSUMMED) {
		/* only data frames go without, and only where nothing can
		 * alter them (docs/wire-format.md section 3) */
		if (!intact || !(op->flags & VIA_OPF_DATA) || h->payload_crc != 0)
			return -EBADMSG;
	} else if (rte_be_to_cpu_32(h->payload_crc) != rte_hash_crc(h + 1, len, 0xffffffff)) {
		return -EBADMSG;
	}
	if (h->opcode == VIA_OP_CONN_REQ || h->opcode == VIA_OP_CONN_ACCEPT) {
		/* the frames of the connection carry at most this much: one
		 * too small for an RDMA extension would make dp.c's frame size
		 * wrap (found by tests/fuzz/fuzz_wire) */
		uint16_t fp = rte_be_to_cpu_16(((const struct via_wire_conn *)(h + 1))->frame_payload);

		if (fp != 0 && fp < VIA_WIRE_MIN_FRAME_PAYLOAD)
			return -EPROTO;
	}
	return 0;
}

_Static_assert(VIA_WIRE_MIN_FRAME_PAYLOAD > RDMA_EXT, "a frame fits its extension and data");
