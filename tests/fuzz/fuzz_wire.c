/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The wire format (daemon/wire.[ch]) on frames from a hostile host.
 *
 * Input: one control byte, then the frame from its Ethernet header on.
 * Control bits: 0x1 seal the frame (both CRCs made over what it says, so
 * that the checks behind them are reached), 0x2 make it a VIA frame to our
 * MAC (EtherType 0x88B5, destination 02:00:00:00:00:00).
 *
 * The frame sits in an mbuf-like buffer of exactly its length and passes
 * the checks viad's receive path makes (daemon/dp/dp_net.c, via_net_rx_check():
 * EtherType, one segment, length, destination, via_wire_check()). One that
 * passes is then read the way dp_resp.c, dp_rel.c and cm.c read frames: every
 * accessor, the RDMA extension, the message data at frame_data(), the
 * connection payload and its discriminators.
 *
 * Properties: no memory error (a read past the frame is a heap overflow);
 * a frame that passes has a known opcode and version, payload_len within
 * the bytes received and within its opcode's limits, data_len no larger
 * than payload_len, offset + data_len <= msg_len on data frames, zero
 * reserved fields, matching CRCs; a connection payload's frame_payload is 0
 * or one a real port can have (VIA_WIRE_MIN_FRAME_PAYLOAD, which every
 * opcode's extension fits in); sealing a passing frame again changes
 * nothing.
 */
#include "fuzz_common.h"

#include <errno.h>

#include <rte_mbuf.h>

#include "wire.h"

static const struct rte_ether_addr our_mac = { .addr_bytes = { 0x02, 0, 0, 0, 0, 0 } };

/* Written by the reads below, so that the compiler keeps them. */
static volatile uint32_t sink;

static void
consume(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint32_t s = 0;
	size_t i;

	for (i = 0; i < n; i++)
		s = s * 31 + b[i];
	sink += s;
}

/* daemon/dp/dp_net.c via_net_rx_check(): whether the frame is a sound VIA frame for us. */
static bool
rx_check(const struct rte_mbuf *m)
{
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	const struct via_wire_hdr *h = (const struct via_wire_hdr *)(eth + 1);
	int rc;

	if (m->data_len < RTE_ETHER_HDR_LEN || eth->ether_type != rte_cpu_to_be_16(VIA_ETHERTYPE))
		return false;
	if (m->nb_segs != 1 || m->data_len < VIA_FRAME_HDR_LEN ||
	    !rte_is_same_ether_addr(&eth->dst_addr, &our_mac))
		return false;
	/* as on a memif port, which takes data frames without their payload
	 * CRC too (VIA_PORT_CAP_INTACT): both ways through the check */
	rc = via_wire_check(h, m->data_len - (uint32_t)VIA_FRAME_HDR_LEN, true);
	FUZZ_ASSERT(rc == 0 || rc == -EPROTO || rc == -EBADMSG);
	return rc == 0;
}

/* daemon/dp/dp_resp.c frame_data(): a received frame's message data. */
static const uint8_t *
frame_data(const struct rte_mbuf *m, const struct via_wire_hdr *h)
{
	return m->next != NULL ? rte_pktmbuf_mtod(m->next, const uint8_t *)
			       : (const uint8_t *)(h + 1) + via_wire_ops[h->opcode].ext_len;
}

/* Everything the receive path reads of a frame that passed. */
static void
read_frame(const struct rte_mbuf *m, uint32_t avail)
{
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	const struct via_wire_hdr *h = (const struct via_wire_hdr *)(eth + 1);
	const struct via_wire_op_info *op;
	uint32_t len, data;

	FUZZ_ASSERT(h->version == VIA_WIRE_VERSION);
	FUZZ_ASSERT(h->opcode > 0 && h->opcode < VIA_OP_COUNT);
	op = &via_wire_ops[h->opcode];
	FUZZ_ASSERT(op->name != NULL);
	FUZZ_ASSERT(__builtin_popcount(op->flags & (VIA_OPF_CM | VIA_OPF_DATA | VIA_OPF_XPORT)) == 1);
	FUZZ_ASSERT(h->reserved == 0);
	len = via_wire_payload_len(h);
	FUZZ_ASSERT(len <= avail);
	FUZZ_ASSERT(len >= op->payload_min && len <= op->payload_max);
	FUZZ_ASSERT(rte_be_to_cpu_32(h->hdr_crc) == via_wire_hdr_crc(h));
	FUZZ_ASSERT(rte_be_to_cpu_32(h->payload_crc) == rte_hash_crc(h + 1, len, 0xffffffff));

	sink += via_wire_flags(h) + via_wire_dst_vi(h) + via_wire_src_vi(h) +
		via_wire_conn_id(h) + via_wire_seq(h) + via_wire_msg_id(h) + via_wire_imm(h);
	data = via_wire_data_len(h);
	FUZZ_ASSERT(data <= len);
	if (op->ext_len > 0) {
		const struct via_wire_rdma *x = (const struct via_wire_rdma *)(h + 1);

		FUZZ_ASSERT(x->reserved == 0);
		sink += (uint32_t)via_wire_rdma_va(h) + via_wire_rdma_handle(h);
	}
	if (op->flags & VIA_OPF_DATA) {
		/* dp_resp.c rx_place(): placed at offset, completed at msg_len */
		FUZZ_ASSERT((uint64_t)via_wire_offset(h) + data <= via_wire_msg_len(h));
		consume(frame_data(m, h), data);
	}
	if (h->opcode == VIA_OP_CONN_REQ || h->opcode == VIA_OP_CONN_ACCEPT) {
		/* cm.c via_cm_input(): the payload as a struct via_wire_conn */
		const struct via_wire_conn *w = (const void *)(h + 1);
		uint16_t fp = rte_be_to_cpu_16(w->frame_payload);
		unsigned o;

		FUZZ_ASSERT(len == sizeof(*w));
		consume(w, sizeof(*w));
		/* a connection's frames carry this much: each must fit an
		 * opcode's extension and at least one byte of data */
		FUZZ_ASSERT(fp == 0 || fp >= VIA_WIRE_MIN_FRAME_PAYLOAD);
		for (o = 1; o < VIA_OP_COUNT; o++)
			FUZZ_ASSERT(fp == 0 || fp > via_wire_ops[o].ext_len);
		/* on_conn_req(): discriminators only up to their arrays */
		if (w->dst_disc_len <= VIA_WIRE_DISC_MAX && w->src_disc_len <= VIA_WIRE_DISC_MAX) {
			consume(w->dst_disc, w->dst_disc_len);
			consume(w->src_disc, w->src_disc_len);
		}
	}
}

/* Make both CRCs match what the frame says (bytes that are there). */
static void
seal(uint8_t *frame, size_t size)
{
	struct via_wire_hdr *h = (struct via_wire_hdr *)(frame + RTE_ETHER_HDR_LEN);
	size_t avail = size - VIA_FRAME_HDR_LEN;
	size_t len = via_wire_payload_len(h);

	h->payload_crc = rte_cpu_to_be_32(rte_hash_crc(h + 1, len < avail ? len : avail,
						       0xffffffff));
	h->hdr_crc = rte_cpu_to_be_32(via_wire_hdr_crc(h));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	uint8_t ctl = fuzz_u8(&in);
	struct rte_mbuf m;
	uint8_t *frame;

	if (in.left == 0 || in.left > UINT16_MAX)
		return 0;
	/* exactly the frame's bytes: reading past them is a heap overflow */
	frame = malloc(in.left);
	FUZZ_ASSERT(frame != NULL);
	memcpy(frame, in.p, in.left);
	if ((ctl & 0x2) && in.left >= RTE_ETHER_HDR_LEN) {
		struct rte_ether_hdr *eth = (struct rte_ether_hdr *)frame;

		eth->ether_type = rte_cpu_to_be_16(VIA_ETHERTYPE);
		rte_ether_addr_copy(&our_mac, &eth->dst_addr);
	}
	if ((ctl & 0x1) && in.left >= VIA_FRAME_HDR_LEN)
		seal(frame, in.left);

	memset(&m, 0, sizeof(m));
	m.buf_addr = frame;
	m.data_off = 0;
	m.data_len = (uint16_t)in.left;
	m.pkt_len = (uint32_t)in.left;
	m.nb_segs = 1;
	m.next = NULL;
	if (rx_check(&m)) {
		struct via_wire_hdr *h = (struct via_wire_hdr *)(frame + RTE_ETHER_HDR_LEN);
		uint32_t avail = m.data_len - (uint32_t)VIA_FRAME_HDR_LEN;
		uint16_t len = via_wire_payload_len(h);
		uint8_t *copy;

		read_frame(&m, avail);
		/* sealed again the way viad seals what it sends: the same bytes */
		copy = malloc(in.left);
		FUZZ_ASSERT(copy != NULL);
		memcpy(copy, frame, in.left);
		via_wire_seal((struct via_wire_hdr *)(copy + RTE_ETHER_HDR_LEN), len, NULL, 0);
		FUZZ_ASSERT(memcmp(copy, frame, in.left) == 0);
		/* on the port it came from (rx_check: an intact one, where an
		 * UNSUMMED data frame is sound) */
		FUZZ_ASSERT(via_wire_check((struct via_wire_hdr *)(copy + RTE_ETHER_HDR_LEN),
					   avail, true) == 0);
		free(copy);
	}
	free(frame);
	return 0;
}
