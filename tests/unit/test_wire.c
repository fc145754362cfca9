/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The VIA wire format: sizes, the opcode table, accessors, and that every
 * corruption of a frame is detected (VIA §2.5: corrupt data is never
 * delivered, at any reliability level), including single-bit flips of
 * every header and payload bit.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "test_common.h"
#include "wire.h"

static void
frame(uint8_t *buf, uint8_t op, uint16_t len)
{
	struct via_wire_hdr *h = (struct via_wire_hdr *)buf;
	uint16_t i;

	memset(buf, 0, sizeof(*h));
	h->opcode = op;
	via_wire_set_flags(h, VIA_WF_IMM);
	via_wire_set_dst_vi(h, 0x01020304);
	via_wire_set_src_vi(h, 0x05060708);
	via_wire_set_conn_id(h, 0xdeadbeef);
	via_wire_set_seq(h, 7);
	via_wire_set_msg_id(h, 9);
	via_wire_set_msg_len(h, 100000);
	via_wire_set_offset(h, 4096);
	via_wire_set_imm(h, 0xcafe);
	for (i = 0; i < len; i++)
		buf[sizeof(*h) + i] = (uint8_t)(i * 31 + 7);
	via_wire_seal(h, len, NULL, 0);
}

static void
test_layout(void)
{
	uint8_t buf[64];
	struct via_wire_hdr *h = (struct via_wire_hdr *)buf;
	unsigned op;

	CHECK_EQ(sizeof(struct via_wire_hdr), 48);
	CHECK_EQ(sizeof(struct via_wire_conn), 144);
	CHECK_EQ(VIA_FRAME_HDR_LEN, 62);
	frame(buf, VIA_OP_SEND, 0);
	/* big-endian on the wire, host order through the accessors */
	CHECK_EQ(buf[4], 0x01);
	CHECK_EQ(buf[7], 0x04);
	CHECK_EQ(via_wire_dst_vi(h), 0x01020304);
	CHECK_EQ(via_wire_conn_id(h), 0xdeadbeef);
	CHECK_EQ(via_wire_offset(h), 4096);
	CHECK_EQ(h->version, VIA_WIRE_VERSION);
	for (op = 1; op < VIA_OP_COUNT; op++) {
		const struct via_wire_op_info *o = &via_wire_ops[op];

		CHECK(o->name != NULL);
		/* exactly one of: connection manager, message data, transport */
		CHECK(__builtin_popcount(o->flags & (VIA_OPF_CM | VIA_OPF_DATA | VIA_OPF_XPORT)) == 1);
		CHECK(o->payload_min <= o->payload_max);
	}
}

static void
test_check(void)
{
	uint8_t buf[sizeof(struct via_wire_hdr) + 2048];
	struct via_wire_hdr *h = (struct via_wire_hdr *)buf;
	unsigned bit, undetected = 0;

	frame(buf, VIA_OP_SEND, 1500);
	CHECK_EQ(via_wire_check(h, 1500, false), 0);
	CHECK_EQ(via_wire_check(h, 1600, false), 0);           /* Ethernet padding */
	CHECK_EQ(via_wire_check(h, 1499, false), -EPROTO);     /* truncated */
	/* every single-bit error of header and payload is caught */
	for (bit = 0; bit < (sizeof(*h) + 1500) * 8; bit++) {
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		if (via_wire_check(h, 1500, false) == 0)
			undetected++;
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	CHECK_EQ(undetected, 0);
	CHECK_EQ(via_wire_check(h, 1500, false), 0);
	/* a sealed frame is taken on any port */
	CHECK_EQ(via_wire_check(h, 1500, true), 0);

	/* a data frame without its payload CRC (VIA_WF_UNSUMMED): taken on a
	 * port that cannot alter frames, refused as corrupt on any other */
	frame(buf, VIA_OP_SEND, 1500);
	via_wire_seal_unsummed(h, 1500);
	CHECK_EQ(h->payload_crc, 0);
	CHECK_EQ(via_wire_check(h, 1500, true), 0);
	CHECK_EQ(via_wire_check(h, 1500, false), -EBADMSG);
	/* the flag is under the header CRC: a frame that lost it is corrupt */
	h->flags ^= rte_cpu_to_be_16(VIA_WF_UNSUMMED);
	CHECK_EQ(via_wire_check(h, 1500, true), -EBADMSG);
	/* only data frames go without, and only with a zero payload_crc */
	frame(buf, VIA_OP_RDMA_READ_REQ, sizeof(struct via_wire_rdma));
	((struct via_wire_rdma *)(h + 1))->reserved = 0;
	via_wire_seal_unsummed(h, sizeof(struct via_wire_rdma));
	CHECK_EQ(via_wire_check(h, sizeof(struct via_wire_rdma), true), -EBADMSG);
	frame(buf, VIA_OP_RDMA_WRITE, 100);
	((struct via_wire_rdma *)(h + 1))->reserved = 0;
	via_wire_seal_unsummed(h, 100);
	CHECK_EQ(via_wire_check(h, 100, true), 0);
	h->payload_crc = rte_cpu_to_be_32(1);
	h->hdr_crc = rte_cpu_to_be_32(via_wire_hdr_crc(h));
	CHECK_EQ(via_wire_check(h, 100, true), -EBADMSG);

	/* well-sealed but invalid headers */
	frame(buf, VIA_OP_COUNT, 0);
	CHECK_EQ(via_wire_check(h, 0, false), -EPROTO);
	frame(buf, 0, 0);
	CHECK_EQ(via_wire_check(h, 0, false), -EPROTO);
	frame(buf, VIA_OP_CONN_REQ, 10);                 /* CM payload of the wrong size */
	CHECK_EQ(via_wire_check(h, 10, false), -EPROTO);
	frame(buf, VIA_OP_CONN_REQ, sizeof(struct via_wire_conn));
	CHECK_EQ(via_wire_check(h, sizeof(struct via_wire_conn), false), 0);
	{
		/* a frame payload no port has (found by tests/fuzz/fuzz_wire):
		 * too small for an RDMA extension; 0 means "use your own" */
		static const uint16_t fps[] = { 0, 1, 16, VIA_WIRE_MIN_FRAME_PAYLOAD - 1,
						VIA_WIRE_MIN_FRAME_PAYLOAD, 1452 };
		static const int want[] = { 0, -EPROTO, -EPROTO, -EPROTO, 0, 0 };
		struct via_wire_conn *w = (struct via_wire_conn *)(h + 1);
		unsigned i, op;

		for (op = VIA_OP_CONN_REQ; op <= VIA_OP_CONN_ACCEPT; op++) {
			for (i = 0; i < sizeof(fps) / sizeof(fps[0]); i++) {
				frame(buf, (uint8_t)op, sizeof(*w));
				w->frame_payload = rte_cpu_to_be_16(fps[i]);
				via_wire_seal(h, sizeof(*w), NULL, 0);
				CHECK_EQ(via_wire_check(h, sizeof(*w), false), want[i]);
			}
		}
	}
	frame(buf, VIA_OP_SEND, 100);
	via_wire_set_offset(h, 99950);                  /* past the message's end */
	via_wire_seal(h, 100, NULL, 0);
	CHECK_EQ(via_wire_check(h, 100, false), -EPROTO);
	frame(buf, VIA_OP_SEND, 100);
	via_wire_seal(h, 100, NULL, 0);
	h->version = 1;                                  /* seal forces the version */
	h->hdr_crc = rte_cpu_to_be_32(via_wire_hdr_crc(h));
	CHECK_EQ(via_wire_check(h, 100, false), -EPROTO);
}

/*
 * A zero-copy frame's payload is in two pieces (the RDMA extension after
 * the header, the data in the client's pages): sealed over the pieces, it
 * checks as the same frame sealed over one contiguous payload.
 */
static void
test_seal_split(void)
{
	uint8_t buf[sizeof(struct via_wire_hdr) + 2048], data[2048];
	struct via_wire_hdr *h = (struct via_wire_hdr *)buf;
	uint32_t whole_crc;
	unsigned head;

	for (head = 0; head <= 17; head++) {
		frame(buf, VIA_OP_SEND, 1500);
		whole_crc = h->payload_crc;
		memcpy(data, buf + sizeof(*h) + head, 1500 - head);
		memset(buf + sizeof(*h) + head, 0, 1500 - head);   /* not read */
		via_wire_seal(h, (uint16_t)head, data, (uint16_t)(1500 - head));
		CHECK_EQ(h->payload_crc, whole_crc);
		CHECK_EQ(via_wire_payload_len(h), 1500);
	}
}

/* Random corruption of several bytes at once, seeded. */
static void
test_random(unsigned seed)
{
	uint8_t buf[sizeof(struct via_wire_hdr) + 1024];
	struct via_wire_hdr *h = (struct via_wire_hdr *)buf;
	unsigned i, undetected = 0;

	srandom(seed);
	for (i = 0; i < 100000; i++) {
		unsigned k, n = 2 + (unsigned)random() % 6;

		frame(buf, VIA_OP_SEND, 1024);
		for (k = 0; k < n; k++)
			buf[(unsigned)random() % sizeof(buf)] ^= (uint8_t)(1 + random() % 255);
		if (via_wire_check(h, 1024, false) == 0) {
			uint8_t ref[sizeof(buf)];

			frame(ref, VIA_OP_SEND, 1024);
			if (memcmp(ref, buf, sizeof(buf)) != 0)
				undetected++;
		}
	}
	printf("random corruption: seed %u, %u of 100000 corrupt frames accepted\n", seed,
	       undetected);
	CHECK_EQ(undetected, 0);
}

int
main(int argc, char **argv)
{
	test_layout();
	test_check();
	test_seal_split();
	test_random(argc > 1 ? (unsigned)strtoul(argv[1], NULL, 0) : 20261122u);
	return test_summary("test_wire");
}
