/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The Unreliable data path through a real viad (VIA 1.0 §2.5.1, §5, §6,
 * §9.6, §10): sends and receives on connected VIs, descriptor format,
 * protection and length errors, asynchronous errors (POST_DESC; no
 * RECVQ_EMPTY, §7.1), immediate data, completion status bits and order,
 * the Done/Wait calls and their timeouts, completion queues, gather/scatter
 * with random splits in provider and malloc'd memory, MaxTransferSize
 * messages, a long back-to-back stream, and two client processes.
 *
 * One viad with the harness defaults (the loopback NIC "via0").
 *
 * Usage: it_data PATH/TO/viad
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

/* slack allowed past a wait's timeout on a shared 2-core machine */
#define WAIT_SLACK_MS 600  /* a late wake-up on a loaded 2-core machine; never early */
#define CANARY        0xEE

static uint8_t mac_self[6];
static VIP_NIC_ATTRIBUTES nic_attrs;
static uint64_t rng;

/* ---- asynchronous errors ---------------------------------------------------- */

/* ---- memory and descriptors -------------------------------------------------- */

static VIP_DESCRIPTOR *
desc_new(struct h_mem *m, unsigned nseg)
{
	size_t size = sizeof(VIP_CONTROL_SEGMENT) +
		      (nseg < 2 ? 2 : nseg) * sizeof(VIP_DESCRIPTOR_SEGMENT);
	VIP_DESCRIPTOR *d = h_mem_get(m, size, VIP_DESCRIPTOR_ALIGNMENT);

	memset(d, 0, size);
	d->CS.SegCount = (VIP_UINT16)nseg;
	return d;
}

/* Segment @p i of @p d (DS[] is declared with 2 entries: index by bytes). */
static VIP_DATA_SEGMENT *
seg_at(VIP_DESCRIPTOR *d, unsigned i)
{
	return (VIP_DATA_SEGMENT *)((uint8_t *)d + sizeof(VIP_CONTROL_SEGMENT) +
				    (size_t)i * sizeof(VIP_DESCRIPTOR_SEGMENT));
}

static void
seg_set(VIP_DESCRIPTOR *d, unsigned i, void *addr, VIP_MEM_HANDLE mh, uint32_t len)
{
	VIP_DATA_SEGMENT *ds = seg_at(d, i);

	ds->Data.AddressBits = 0;
	ds->Data.Address = addr;
	ds->Handle = mh;
	ds->Length = len;
}

static void
fill_rand(uint8_t *p, size_t n, uint64_t *st)
{
	size_t i = 0;

	while (i < n) {
		uint64_t x = h_rand(st);
		size_t k;

		for (k = 0; k < 8 && i < n; k++, i++)
			p[i] = (uint8_t)(x >> (8 * k));
	}
}

/* A send of @p len bytes (one segment, random content) from @p m. */
static VIP_DESCRIPTOR *
send1(struct h_mem *m, uint32_t len)
{
	VIP_DESCRIPTOR *d = desc_new(m, 1);
	uint8_t *buf = h_mem_get(m, len ? len : 1, 8);

	fill_rand(buf, len, &rng);
	seg_set(d, 0, buf, m->mh, len);
	d->CS.Length = len;
	return d;
}

/* A receive of capacity @p cap (one segment, canary-filled) from @p m. */
static VIP_DESCRIPTOR *
recv1(struct h_mem *m, uint32_t cap)
{
	VIP_DESCRIPTOR *d = desc_new(m, 1);
	uint8_t *buf = h_mem_get(m, cap ? cap : 1, 8);

	memset(buf, CANARY, cap);
	seg_set(d, 0, buf, m->mh, cap);
	return d;
}

static uint8_t *
seg_buf(VIP_DESCRIPTOR *d, unsigned i)
{
	return seg_at(d, i)->Data.Address;
}

/* Wait for the next completion of @p vi's send (or receive) queue and check
 * it is @p want with Status @p status. */
static bool
expect_done(VIP_VI_HANDLE vi, bool recv, VIP_DESCRIPTOR *want, uint32_t status, const char *what)
{
	VIP_DESCRIPTOR *out = NULL;
	VIP_RETURN rc = recv ? VipRecvWait(vi, 2000, &out) : VipSendWait(vi, 2000, &out);
	bool ok = rc == VIP_SUCCESS && out == want && out->CS.Status == status;

	CHECK(ok, "%s: %s completes with Status %#x (%s, %s, Status %#x)", what,
	      recv ? "receive" : "send", status, VipDpdkReturnString(rc),
	      rc != VIP_SUCCESS ? "-" : out == want ? "that descriptor" : "ANOTHER descriptor",
	      rc == VIP_SUCCESS ? out->CS.Status : 0);
	return ok;
}

#define ST_SEND_OK (VIP_STATUS_DONE | VIP_STATUS_OP_SEND)
#define ST_RECV_OK (VIP_STATUS_DONE | VIP_STATUS_OP_RECEIVE)

/* ---- VIs ---------------------------------------------------------------------- */

static VIP_VI_HANDLE
vi_new(VIP_NIC_HANDLE nic, VIP_PROTECTION_HANDLE pt, VIP_ULONG mtu, VIP_CQ_HANDLE scq,
       VIP_CQ_HANDLE rcq)
{
	VIP_VI_ATTRIBUTES a;
	VIP_VI_HANDLE vi = NULL;
	VIP_RETURN rc;

	h_vi_attrs(&a, pt);
	if (mtu != 0)
		a.MaxTransferSize = mtu;
	rc = VipCreateVi(nic, &a, scq, rcq, &vi);
	if (rc != VIP_SUCCESS) {
		CHECK_RET(rc, VIP_SUCCESS, "create a VI");
		return NULL;
	}
	return vi;
}

/* ---- tests ------------------------------------------------------------------------ */

/* §5.1, §6.2: sends on a VI that is not Connected complete in error;
 * receives posted while Idle are used once it is. */
static void
test_unconnected(VIP_NIC_HANDLE nic, VIP_PROTECTION_HANDLE pt, struct h_mem *m)
{
	VIP_VI_HANDLE a = vi_new(nic, pt, 0, NULL, NULL), b = vi_new(nic, pt, 0, NULL, NULL);
	VIP_DESCRIPTOR *s, *r[2], *sd[2];
	unsigned i;

	h_note("sends before connecting; receives posted while Idle (§5.1, §6.2)");
	h_mem_reset(m);
	if (a == NULL || b == NULL)
		return;
	s = send1(m, 100);
	CHECK_RET(VipPostSend(a, s, m->mh), VIP_SUCCESS, "post a send on an Idle VI");
	expect_done(a, false, s, VIP_STATUS_DONE | VIP_STATUS_DESC_FLUSHED_ERROR | VIP_STATUS_OP_SEND,
		    "send on an Idle VI");
	for (i = 0; i < 2; i++) {
		r[i] = recv1(m, 1000);
		CHECK_RET(VipPostRecv(b, r[i], m->mh), VIP_SUCCESS, "post receive %u on an Idle VI",
			  i);
	}
	h_sleep_ms(50);
	{
		VIP_DESCRIPTOR *out;

		CHECK_RET(VipRecvDone(b, &out), VIP_NOT_DONE, "receives wait while Idle");
	}
	if (!h_connect(nic, a, nic, b, "unc", 5000))
		return;
	for (i = 0; i < 2; i++) {
		sd[i] = send1(m, 500 + i);
		sd[i]->CS.Control = VIP_CONTROL_IMMEDIATE;
		sd[i]->CS.ImmediateData = 1000 + i;
		VipPostSend(a, sd[i], m->mh);
	}
	for (i = 0; i < 2; i++) {
		expect_done(a, false, sd[i], ST_SEND_OK, "send after connecting");
		if (expect_done(b, true, r[i], ST_RECV_OK | VIP_STATUS_IMMEDIATE,
				"pre-posted receive")) {
			CHECK(r[i]->CS.Length == 500 + i && r[i]->CS.ImmediateData == 1000 + i &&
			      memcmp(seg_buf(r[i], 0), seg_buf(sd[i], 0), 500 + i) == 0 &&
			      seg_buf(r[i], 0)[500 + i] == CANARY,
			      "message %u landed in the receive posted while Idle", i);
		}
	}
	h_pair_drain(a, b);
	CHECK_RET(VipDestroyVi(a), VIP_SUCCESS, "destroy");
	CHECK_RET(VipDestroyVi(b), VIP_SUCCESS, "destroy");
}

/* §10.2: format errors on the send and the receive queue. */
static void
test_format(VIP_VI_HANDLE a, VIP_VI_HANDLE b, struct h_mem *m)
{
	static const struct {
		uint16_t control;
		uint32_t reserved;
		int segs_extra;
		const char *what;
	} bad[] = {
		{ 0x0010, 0, 0, "Control bit 4 (reserved)" },
		{ 0x8000, 0, 0, "Control bit 15 (reserved)" },
		{ VIP_CONTROL_OP_RESERVED, 0, 0, "operation 11b (undefined)" },
		{ VIP_CONTROL_OP_RDMAREAD, 0, 0, "RDMA Read on an Unreliable VI (§2.5.1)" },
		{ 0, 1, 0, "CS.Reserved 1" },
		{ 0, 0x80000000u, 0, "CS.Reserved bit 31" },
		{ 0, 0, 1, "SegCount = MaxSegmentsPerDesc + 1" },
	};
	VIP_DESCRIPTOR *r, *s, *out, *rb[3];
	unsigned i;

	h_note("descriptor format errors (§10.2)");
	h_mem_reset(m);
	r = recv1(m, 4096);
	VipPostRecv(b, r, m->mh);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (bad[i].segs_extra) {
			unsigned n = (unsigned)nic_attrs.MaxSegmentsPerDesc + 1, k;
			uint8_t *buf = h_mem_get(m, n, 8);

			s = desc_new(m, n);
			for (k = 0; k < n; k++)
				seg_set(s, k, buf + k, m->mh, 1);
			s->CS.Length = n;
		} else {
			s = send1(m, 64);
		}
		s->CS.Control = bad[i].control;
		s->CS.Reserved = bad[i].reserved;
		CHECK_RET(VipPostSend(a, s, m->mh), VIP_SUCCESS, "post send with %s", bad[i].what);
		/* the completed operation is the descriptor's own (§10.2) */
		expect_done(a, false, s, VIP_STATUS_DONE | VIP_STATUS_FORMAT_ERROR |
			    ((bad[i].control & VIP_CONTROL_OP_MASK) == VIP_CONTROL_OP_RDMAREAD
				     ? VIP_STATUS_OP_RDMA_READ : VIP_STATUS_OP_SEND),
			    bad[i].what);
	}
	CHECK(h_vi_state(a) == VIP_STATE_CONNECTED && h_vi_state(b) == VIP_STATE_CONNECTED,
	      "the connection survives descriptor errors (§2.5.1)");
	CHECK_RET(VipRecvDone(b, &out), VIP_NOT_DONE, "no erroneous send reached the receiver");
	s = send1(m, 64);
	s->CS.Control = VIP_CONTROL_IMMEDIATE | VIP_CONTROL_QFENCE;
	s->CS.ImmediateData = 0xf00d;
	VipPostSend(a, s, m->mh);
	expect_done(a, false, s, ST_SEND_OK, "valid send with Queue Fence and immediate data");
	if (expect_done(b, true, r, ST_RECV_OK | VIP_STATUS_IMMEDIATE, "its receive"))
		CHECK(r->CS.ImmediateData == 0xf00d && r->CS.Length == 64,
		      "the receiver's first message is the valid one");

	/* the receive queue */
	rb[0] = recv1(m, 4096);
	rb[0]->CS.Control = VIP_CONTROL_OP_RDMAWRITE;
	rb[1] = recv1(m, 4096);
	rb[1]->CS.Control = VIP_CONTROL_OP_RDMAREAD;
	rb[2] = recv1(m, 4096);
	rb[2]->CS.Reserved = 7;
	r = recv1(m, 4096);
	for (i = 0; i < 3; i++)
		VipPostRecv(b, rb[i], m->mh);
	VipPostRecv(b, r, m->mh);
	s = send1(m, 100);
	VipPostSend(a, s, m->mh);
	expect_done(a, false, s, ST_SEND_OK, "send to a receive queue with bad descriptors");
	expect_done(b, true, rb[0], VIP_STATUS_DONE | VIP_STATUS_FORMAT_ERROR | VIP_STATUS_OP_RECEIVE,
		    "RDMA Write op on the receive queue");
	expect_done(b, true, rb[1], VIP_STATUS_DONE | VIP_STATUS_FORMAT_ERROR | VIP_STATUS_OP_RECEIVE,
		    "RDMA Read op on the receive queue");
	expect_done(b, true, rb[2], VIP_STATUS_DONE | VIP_STATUS_FORMAT_ERROR | VIP_STATUS_OP_RECEIVE,
		    "CS.Reserved on the receive queue");
	if (expect_done(b, true, r, ST_RECV_OK, "the valid receive after them"))
		CHECK(r->CS.Length == 100 && memcmp(seg_buf(r, 0), seg_buf(s, 0), 100) == 0,
		      "it holds the message");
	h_err_clear();
}

/* §10.2 bit 2, §10.4: protection errors; §9.9.1: POST_DESC. */
static void
test_protection(VIP_NIC_HANDLE nic, VIP_PROTECTION_HANDLE pt, VIP_VI_HANDLE a, VIP_VI_HANDLE b,
		struct h_mem *m, struct h_mem *h, struct h_mem *o)
{
	VIP_DESCRIPTOR *r, *s, *out, *rb;
	struct h_err_event ev;
	VIP_RETURN rc;

	h_note("protection errors (§10.2 bit 2) and invalid descriptors (§9.9.1 POST_DESC)");
	h_mem_reset(m);
	h_mem_reset(h);
	h_mem_reset(o);
	r = recv1(m, 4096);
	VipPostRecv(b, r, m->mh);

	s = send1(m, 64);
	s->DS[0].Local.Handle = 0xdead;
	VipPostSend(a, s, m->mh);
	expect_done(a, false, s, VIP_STATUS_DONE | VIP_STATUS_PROTECTION_ERROR,
		    "segment with a memory handle that does not exist");
	s = send1(m, 64);
	s->DS[0].Local.Data.Address = m->base + m->len - 32;
	VipPostSend(a, s, m->mh);
	expect_done(a, false, s, VIP_STATUS_DONE | VIP_STATUS_PROTECTION_ERROR,
		    "segment running 32 bytes past the end of its region");
	s = send1(m, 64);
	s->DS[0].Local.Data.Address = m->base - 64;
	VipPostSend(a, s, m->mh);
	expect_done(a, false, s, VIP_STATUS_DONE | VIP_STATUS_PROTECTION_ERROR,
		    "segment starting before its region");
	s = send1(m, 64);
	s->DS[0].Local.Data.Address = h_mem_get(h, 64, 8);
	VipPostSend(a, s, m->mh);
	expect_done(a, false, s, VIP_STATUS_DONE | VIP_STATUS_PROTECTION_ERROR,
		    "segment in another region than its handle's");
	s = send1(m, 64);
	seg_set(s, 0, h_mem_get(o, 64, 8), o->mh, 64);
	VipPostSend(a, s, m->mh);
	expect_done(a, false, s, VIP_STATUS_DONE | VIP_STATUS_PROTECTION_ERROR,
		    "segment in a region of another protection tag");
	s = send1(m, 64);
	s->CS.SegCount = 2;
	seg_set(s, 1, m->base, m->mh, 0);
	s->DS[1].Local.Handle = 0xbad;
	VipPostSend(a, s, m->mh);
	expect_done(a, false, s, ST_SEND_OK,
		    "a zero-length segment with a bad handle is no error (§6.1.1.1)");
	if (expect_done(b, true, r, ST_RECV_OK, "only the valid send arrives"))
		CHECK(r->CS.Length == 64 && memcmp(seg_buf(r, 0), seg_buf(s, 0), 64) == 0,
		      "with its data");

	/* the receive side */
	rb = recv1(m, 4096);
	rb->DS[0].Local.Handle = 0xdead;
	r = recv1(m, 4096);
	VipPostRecv(b, rb, m->mh);
	VipPostRecv(b, r, m->mh);
	s = send1(m, 300);
	VipPostSend(a, s, m->mh);
	expect_done(a, false, s, ST_SEND_OK, "send to a receive with a bad segment");
	expect_done(b, true, rb, VIP_STATUS_DONE | VIP_STATUS_PROTECTION_ERROR | VIP_STATUS_OP_RECEIVE,
		    "receive whose segment has a bad handle");
	if (expect_done(b, true, r, ST_RECV_OK, "the next receive"))
		CHECK(r->CS.Length == 300 && memcmp(seg_buf(r, 0), seg_buf(s, 0), 300) == 0,
		      "gets the message");

	/* a descriptor whose segments run past the end of its region */
	{
		VIP_MEM_ATTRIBUTES ma;
		VIP_MEM_HANDLE sub = 0;
		uint8_t *base = m->base + m->len - 8192;

		memset(&ma, 0, sizeof(ma));
		ma.Ptag = pt;
		if (CHECK_RET(VipRegisterMem(nic, base, 4096, &ma, &sub), VIP_SUCCESS,
			      "register a 4 KiB region")) {
			s = (VIP_DESCRIPTOR *)(base + 4096 - 64);
			memset(s, 0, 4096 - (4096 - 64) + 64);
			s->CS.SegCount = 3;
			seg_set(s, 0, base, sub, 8);
			seg_set(s, 1, base, sub, 8);
			seg_set(s, 2, base, sub, 8);
			s->CS.Length = 24;
			h_err_clear();
			VipPostSend(a, s, sub);
			rc = VipSendWait(a, 2000, &out);
			CHECK(rc == VIP_SUCCESS && out == s && (out->CS.Status & VIP_STATUS_DONE) &&
			      (out->CS.Status & VIP_STATUS_ERROR_MASK),
			      "a descriptor running past the end of its region completes in error "
			      "(%s, status %#x)",
			      VipDpdkReturnString(rc), rc == VIP_SUCCESS ? out->CS.Status : 0);
			CHECK_RET(VipDeregisterMem(nic, base, sub), VIP_SUCCESS, "deregister it");
		}
	}

	/* descriptors the memory handle does not cover */
	h_err_clear();
	s = desc_new(h, 1);
	seg_set(s, 0, h_mem_get(h, 64, 8), h->mh, 64);
	s->CS.Length = 64;
	CHECK_RET(VipPostSend(a, s, m->mh), VIP_SUCCESS,
		  "post a send whose memory handle does not cover the descriptor");
	CHECK(h_err_take(VIP_ERROR_POST_DESC, a, 2000, &ev),
	      "VIP_ERROR_POST_DESC reaches the error callback");
	CHECK(ev.code == VIP_ERROR_POST_DESC && ev.desc == s &&
	      ev.resource == VIP_RESOURCE_DESCRIPTOR && ev.op == VIP_STATUS_OP_SEND,
	      "naming the descriptor %p (got %p), ResourceCode DESCRIPTOR (%d), OpCode send (%#lx)",
	      (void *)s, (void *)ev.desc, (int)ev.resource, (unsigned long)ev.op);
	rc = VipSendWait(a, 2000, &out);
	CHECK(rc == VIP_SUCCESS && out == s && (out->CS.Status & VIP_STATUS_DONE) &&
	      (out->CS.Status & VIP_STATUS_ERROR_MASK),
	      "the descriptor comes back from the send queue with an error status (%s, %#x)",
	      VipDpdkReturnString(rc), rc == VIP_SUCCESS ? out->CS.Status : 0);
	s = desc_new(o, 1);
	seg_set(s, 0, h_mem_get(o, 64, 8), o->mh, 64);
	s->CS.Length = 64;
	VipPostSend(a, s, o->mh);
	CHECK(h_err_take(VIP_ERROR_POST_DESC, a, 2000, &ev) && ev.desc == s,
	      "POST_DESC for a descriptor in a region of another protection tag");
	rc = VipSendWait(a, 2000, &out);
	CHECK(rc == VIP_SUCCESS && out == s && (out->CS.Status & VIP_STATUS_ERROR_MASK),
	      "it comes back with an error status");

	rb = desc_new(h, 1);
	seg_set(rb, 0, h_mem_get(h, 4096, 8), h->mh, 4096);
	r = recv1(m, 4096);
	VipPostRecv(b, rb, m->mh);
	VipPostRecv(b, r, m->mh);
	s = send1(m, 200);
	VipPostSend(a, s, m->mh);
	expect_done(a, false, s, ST_SEND_OK, "send to a receive queue with an invalid descriptor");
	CHECK(h_err_take(VIP_ERROR_POST_DESC, b, 2000, &ev) && ev.desc == rb &&
	      ev.op == VIP_STATUS_OP_RECEIVE,
	      "POST_DESC for the receive descriptor, OpCode receive");
	rc = VipRecvWait(b, 2000, &out);
	CHECK(rc == VIP_SUCCESS && out == rb && (out->CS.Status & VIP_STATUS_ERROR_MASK),
	      "the invalid receive comes back with an error status (%#x)",
	      rc == VIP_SUCCESS ? out->CS.Status : 0);
	if (expect_done(b, true, r, ST_RECV_OK, "the valid receive after it"))
		CHECK(r->CS.Length == 200 && memcmp(seg_buf(r, 0), seg_buf(s, 0), 200) == 0,
		      "gets the message");
	h_err_clear();
}

/* §10.2 bit 3, §6.4.1: length errors. @p a/@p b have MTU 32 KiB. */
static void
test_length(VIP_VI_HANDLE a, VIP_VI_HANDLE b, struct h_mem *m)
{
	VIP_DESCRIPTOR *r, *s, *out;
	VIP_ULONG mtu = 32768;

	h_note("length errors (§10.2 bit 3, §6.4.1)");
	h_mem_reset(m);
	r = recv1(m, 65536);
	VipPostRecv(b, r, m->mh);
	s = send1(m, 100);
	s->CS.Length = 101;
	VipPostSend(a, s, m->mh);
	expect_done(a, false, s, VIP_STATUS_DONE | VIP_STATUS_LENGTH_ERROR,
		    "CS.Length one more than the segments");
	s = send1(m, 100);
	s->CS.Length = 99;
	VipPostSend(a, s, m->mh);
	expect_done(a, false, s, VIP_STATUS_DONE | VIP_STATUS_LENGTH_ERROR,
		    "CS.Length one less than the segments");
	s = send1(m, (uint32_t)mtu + 1);
	VipPostSend(a, s, m->mh);
	expect_done(a, false, s, VIP_STATUS_DONE | VIP_STATUS_LENGTH_ERROR,
		    "MaxTransferSize + 1 bytes on a 32 KiB VI");
	CHECK_RET(VipRecvDone(b, &out), VIP_NOT_DONE, "none of them reached the receiver");
	s = send1(m, (uint32_t)mtu);
	VipPostSend(a, s, m->mh);
	expect_done(a, false, s, ST_SEND_OK, "exactly MaxTransferSize bytes");
	if (expect_done(b, true, r, ST_RECV_OK, "its receive"))
		CHECK(r->CS.Length == mtu && memcmp(seg_buf(r, 0), seg_buf(s, 0), mtu) == 0 &&
		      seg_buf(r, 0)[mtu] == CANARY,
		      "received intact");

	/* receive descriptors too small */
	r = recv1(m, 100);
	VipPostRecv(b, r, m->mh);
	s = send1(m, 200);
	VipPostSend(a, s, m->mh);
	expect_done(a, false, s, ST_SEND_OK, "send of 200 bytes");
	if (expect_done(b, true, r, VIP_STATUS_DONE | VIP_STATUS_LENGTH_ERROR | VIP_STATUS_OP_RECEIVE,
			"into a 100-byte receive"))
		CHECK(r->CS.Length == 0, "Length 0 on the overrun (§6.4.1) (got %u)", r->CS.Length);
	r = recv1(m, 3000);
	VipPostRecv(b, r, m->mh);
	s = send1(m, 30000);
	VipPostSend(a, s, m->mh);
	expect_done(a, false, s, ST_SEND_OK, "send of 30000 bytes (several frames)");
	if (expect_done(b, true, r, VIP_STATUS_DONE | VIP_STATUS_LENGTH_ERROR | VIP_STATUS_OP_RECEIVE,
			"into a 3000-byte receive"))
		CHECK(r->CS.Length == 0, "Length 0 (got %u)", r->CS.Length);
	r = recv1(m, 30000);
	VipPostRecv(b, r, m->mh);
	CHECK_RET(VipRecvWait(b, 100, &out), VIP_TIMEOUT,
		  "the rest of the overrun message does not complete the next receive");
	s = send1(m, 30000);
	VipPostSend(a, s, m->mh);
	expect_done(a, false, s, ST_SEND_OK, "next send of 30000 bytes");
	if (expect_done(b, true, r, ST_RECV_OK, "into a receive of exactly 30000 bytes"))
		CHECK(r->CS.Length == 30000 && memcmp(seg_buf(r, 0), seg_buf(s, 0), 30000) == 0,
		      "received intact");
	r = desc_new(m, 0);
	VipPostRecv(b, r, m->mh);
	s = send1(m, 1);
	VipPostSend(a, s, m->mh);
	expect_done(a, false, s, ST_SEND_OK, "send of 1 byte");
	expect_done(b, true, r, VIP_STATUS_DONE | VIP_STATUS_LENGTH_ERROR | VIP_STATUS_OP_RECEIVE,
		    "into a receive without segments");
	h_err_clear();
}

/*
 * No receive descriptor: the message is lost. §7.1: on an Unreliable VI the
 * asynchronous error mechanism "is only invoked in the case of a
 * catastrophic hardware error", so no VIP_ERROR_RECVQ_EMPTY (§9.9.1); the
 * reliable levels raise it (integration_rel).
 */
static void
test_recvq_empty(VIP_VI_HANDLE a, VIP_VI_HANDLE b, struct h_mem *m)
{
	VIP_DESCRIPTOR *r, *s, *out;

	h_note("no receive posted: the message is dropped, no asynchronous error (§2.5.1, §7.1)");
	h_mem_reset(m);
	h_err_clear();
	s = send1(m, 100);
	VipPostSend(a, s, m->mh);
	expect_done(a, false, s, ST_SEND_OK, "send while the receiver has no receive posted");
	s = send1(m, 20000);
	VipPostSend(a, s, m->mh);
	expect_done(a, false, s, ST_SEND_OK, "a multi-frame send, still no receive");
	h_sleep_ms(200);
	CHECK(h_err_count(VIP_ERROR_RECVQ_EMPTY, NULL) == 0,
	      "no VIP_ERROR_RECVQ_EMPTY on an Unreliable VI (§7.1; %u)",
	      h_err_count(VIP_ERROR_RECVQ_EMPTY, NULL));
	CHECK(h_vi_state(b) == VIP_STATE_CONNECTED, "the receiver stays Connected");
	r = recv1(m, 30000);
	VipPostRecv(b, r, m->mh);
	CHECK_RET(VipRecvWait(b, 200, &out), VIP_TIMEOUT,
		  "a dropped message is not delivered to a receive posted later");
	s = send1(m, 777);
	VipPostSend(a, s, m->mh);
	expect_done(a, false, s, ST_SEND_OK, "send once a receive is posted");
	if (expect_done(b, true, r, ST_RECV_OK, "it arrives"))
		CHECK(r->CS.Length == 777 && memcmp(seg_buf(r, 0), seg_buf(s, 0), 777) == 0,
		      "the new message, intact");
	h_err_clear();
}

/* §10.2: immediate data, status op bits, zero-length messages. */
static void
test_immediate(VIP_VI_HANDLE a, VIP_VI_HANDLE b, struct h_mem *m)
{
	VIP_DESCRIPTOR *r, *s;

	h_note("immediate data, completion op codes, zero-length messages");
	h_mem_reset(m);
	r = recv1(m, 1000);
	r->CS.ImmediateData = 0x11111111;
	VipPostRecv(b, r, m->mh);
	s = send1(m, 10);
	s->CS.Control = VIP_CONTROL_IMMEDIATE;
	s->CS.ImmediateData = 0xdeadbeef;
	VipPostSend(a, s, m->mh);
	if (expect_done(a, false, s, ST_SEND_OK, "send with immediate data"))
		CHECK(s->CS.Length == 10, "send completion Length 10 (got %u)", s->CS.Length);
	if (expect_done(b, true, r, ST_RECV_OK | VIP_STATUS_IMMEDIATE,
			"receive: Done|OP_RECEIVE|IMMEDIATE"))
		CHECK(r->CS.ImmediateData == 0xdeadbeef && r->CS.Length == 10,
		      "ImmediateData %#x, Length %u", r->CS.ImmediateData, r->CS.Length);
	r = recv1(m, 1000);
	r->CS.Control = VIP_CONTROL_IMMEDIATE; /* ignored on a receive (§10.2) */
	r->CS.Length = 0xffffffffu;            /* undefined on a receive (§10.2) */
	VipPostRecv(b, r, m->mh);
	s = send1(m, 20);
	VipPostSend(a, s, m->mh);
	expect_done(a, false, s, ST_SEND_OK, "send to a receive with the Immediate bit set");
	if (expect_done(b, true, r, ST_RECV_OK,
			"a receive with Control Immediate and a garbage Length is valid"))
		CHECK(r->CS.Length == 20, "Length 20 (got %u)", r->CS.Length);
	r = recv1(m, 1000);
	VipPostRecv(b, r, m->mh);
	s = send1(m, 10);
	s->CS.ImmediateData = 0x12345678; /* without the Control bit: not sent */
	VipPostSend(a, s, m->mh);
	expect_done(a, false, s, ST_SEND_OK, "send without immediate data");
	expect_done(b, true, r, ST_RECV_OK, "receive without the IMMEDIATE status bit");

	r = recv1(m, 1000);
	VipPostRecv(b, r, m->mh);
	s = desc_new(m, 0);
	s->CS.Control = VIP_CONTROL_IMMEDIATE;
	s->CS.ImmediateData = 42;
	VipPostSend(a, s, m->mh);
	expect_done(a, false, s, ST_SEND_OK, "immediate data only: SegCount 0, Length 0");
	if (expect_done(b, true, r, ST_RECV_OK | VIP_STATUS_IMMEDIATE, "its receive"))
		CHECK(r->CS.Length == 0 && r->CS.ImmediateData == 42 &&
		      seg_buf(r, 0)[0] == CANARY,
		      "Length 0, ImmediateData 42, buffer untouched");
	r = desc_new(m, 0);
	VipPostRecv(b, r, m->mh);
	s = desc_new(m, 3);
	seg_set(s, 0, NULL, 0, 0);
	seg_set(s, 1, m->base, m->mh, 0);
	seg_set(s, 2, NULL, 0xffff, 0);
	VipPostSend(a, s, m->mh);
	expect_done(a, false, s, ST_SEND_OK, "empty message of three zero-length segments");
	if (expect_done(b, true, r, ST_RECV_OK, "into a receive without segments"))
		CHECK(r->CS.Length == 0, "Length 0");
}

struct delayed_send {
	VIP_VI_HANDLE vi;
	VIP_DESCRIPTOR *d;
	VIP_MEM_HANDLE mh;
	unsigned ms;
	uint64_t posted;
};

static void *
delayed_send_main(void *arg)
{
	struct delayed_send *x = arg;

	h_sleep_ms(x->ms);
	x->posted = h_now_ms();
	VipPostSend(x->vi, x->d, x->mh);
	return NULL;
}

/* §9.6.2-9.6.6: Done and Wait. */
static void
test_waits(VIP_VI_HANDLE a, VIP_VI_HANDLE b, struct h_mem *m)
{
	VIP_DESCRIPTOR *r, *s, *out;
	struct delayed_send x;
	pthread_t t;
	uint64_t t0, el;
	VIP_RETURN rc;

	h_note("VipSendDone/RecvDone/SendWait/RecvWait");
	h_mem_reset(m);
	CHECK_RET(VipSendDone(a, &out), VIP_NOT_DONE, "SendDone on an empty send queue");
	CHECK_RET(VipRecvDone(b, &out), VIP_NOT_DONE, "RecvDone on an empty receive queue");
	CHECK_RET(VipRecvDone(b, NULL), VIP_INVALID_PARAMETER, "RecvDone NULL out pointer");
	CHECK_RET(VipRecvWait(NULL, 10, &out), VIP_INVALID_PARAMETER, "RecvWait NULL VI");
	t0 = h_now_ms();
	rc = VipRecvWait(b, 0, &out);
	el = h_now_ms() - t0;
	CHECK(rc == VIP_TIMEOUT && el < 50, "RecvWait Timeout 0 on an empty queue: %s in %llu ms",
	      VipDpdkReturnString(rc), (unsigned long long)el);
	t0 = h_now_ms();
	rc = VipRecvWait(b, 200, &out);
	el = h_now_ms() - t0;
	CHECK_RET(rc, VIP_TIMEOUT, "RecvWait 200 ms on an empty queue");
	CHECK(el >= 200 && el <= 200 + WAIT_SLACK_MS, "it returns after 200 ms (%llu ms)",
	      (unsigned long long)el);
	t0 = h_now_ms();
	rc = VipSendWait(a, 250, &out);
	el = h_now_ms() - t0;
	CHECK_RET(rc, VIP_TIMEOUT, "SendWait 250 ms on an empty queue");
	CHECK(el >= 250 && el <= 250 + WAIT_SLACK_MS, "it returns after 250 ms (%llu ms)",
	      (unsigned long long)el);
	r = recv1(m, 1000);
	VipPostRecv(b, r, m->mh);
	CHECK_RET(VipRecvDone(b, &out), VIP_NOT_DONE, "RecvDone: the head is posted, not complete");
	t0 = h_now_ms();
	rc = VipRecvWait(b, 300, &out);
	el = h_now_ms() - t0;
	CHECK_RET(rc, VIP_TIMEOUT, "RecvWait 300 ms on a pending receive");
	CHECK(el >= 300 && el <= 300 + WAIT_SLACK_MS, "it returns after 300 ms (%llu ms)",
	      (unsigned long long)el);
	s = send1(m, 64);
	x.vi = a;
	x.d = s;
	x.mh = m->mh;
	x.ms = 150;
	x.posted = 0;
	if (pthread_create(&t, NULL, delayed_send_main, &x) == 0) {
		uint64_t now;

		t0 = h_now_ms();
		rc = VipRecvWait(b, 5000, &out);
		now = h_now_ms();
		el = now - t0;
		pthread_join(t, NULL);
		CHECK(rc == VIP_SUCCESS && out == r && el >= 140 && now - x.posted < 500,
		      "a blocked RecvWait wakes up for a send posted 150 ms later (%s after %llu "
		      "ms, %llu ms after the post)",
		      VipDpdkReturnString(rc), (unsigned long long)el,
		      (unsigned long long)(now - x.posted));
		expect_done(a, false, s, ST_SEND_OK, "the delayed send");
	}
	r = recv1(m, 1000);
	VipPostRecv(b, r, m->mh);
	s = send1(m, 64);
	VipPostSend(a, s, m->mh);
	t0 = h_now_ms();
	do {
		rc = VipRecvDone(b, &out);
	} while (rc == VIP_NOT_DONE && h_now_ms() - t0 < 2000);
	CHECK(rc == VIP_SUCCESS && out == r && out->CS.Status == ST_RECV_OK,
	      "polling RecvDone sees the completion");
	do {
		rc = VipSendDone(a, &out);
	} while (rc == VIP_NOT_DONE && h_now_ms() - t0 < 2000);
	CHECK(rc == VIP_SUCCESS && out == s, "polling SendDone sees the completion");
}

/* §6.3.1.1: FIFO completion, errors in between. */
static void
test_fifo(VIP_VI_HANDLE a, VIP_VI_HANDLE b, struct h_mem *m)
{
	enum { N = 48 };
	VIP_DESCRIPTOR *r[N], *s[N], *out;
	uint32_t len[N];
	bool bad[N];
	unsigned i, k, sends_ok = 0, recvs_ok = 0, nb_good = 0;
	VIP_RETURN rc;

	h_note("FIFO completion per queue (§6.3.1.1), errors interleaved");
	h_mem_reset(m);
	for (i = 0; i < N; i++) {
		r[i] = recv1(m, 20000);
		VipPostRecv(b, r[i], m->mh);
	}
	for (i = 0; i < N; i++) {
		len[i] = (uint32_t)(h_rand(&rng) % 20000);
		bad[i] = i % 5 == 3;
		s[i] = send1(m, len[i]);
		s[i]->CS.Control = VIP_CONTROL_IMMEDIATE;
		s[i]->CS.ImmediateData = i;
		if (bad[i])
			s[i]->CS.Length++;
		VipPostSend(a, s[i], m->mh);
	}
	for (i = 0; i < N; i++) {
		rc = VipSendWait(a, 2000, &out);
		if (rc == VIP_SUCCESS && out == s[i] &&
		    out->CS.Status == (bad[i] ? VIP_STATUS_DONE | VIP_STATUS_LENGTH_ERROR
					      : ST_SEND_OK))
			sends_ok++;
	}
	CHECK(sends_ok == N, "%u sends dequeued in posting order with their own status (%u right)",
	      N, sends_ok);
	for (i = 0, k = 0; i < N; i++) {
		if (bad[i])
			continue;
		nb_good++;
		rc = VipRecvWait(b, 2000, &out);
		if (rc == VIP_SUCCESS && out == r[k] &&
		    out->CS.Status == (ST_RECV_OK | VIP_STATUS_IMMEDIATE) &&
		    out->CS.ImmediateData == i && out->CS.Length == len[i] &&
		    memcmp(seg_buf(out, 0), seg_buf(s[i], 0), len[i]) == 0)
			recvs_ok++;
		k++;
	}
	CHECK(recvs_ok == nb_good,
	      "the %u valid messages fill the receives in order (%u right)", nb_good, recvs_ok);
	/* drain the unused receives */
	h_vi_drain(b);
}

/* §9.6.7, §9.6.8: completion queues. */
static void
test_cq(VIP_NIC_HANDLE nic, VIP_PROTECTION_HANDLE pt, struct h_mem *m)
{
	VIP_CQ_HANDLE cq = NULL;
	VIP_VI_HANDLE c, d, e, f, vh;
	VIP_DESCRIPTOR *r[3], *s[3], *out;
	VIP_BOOLEAN rq;
	uint64_t t0, el;
	VIP_RETURN rc;
	unsigned i, ok;

	h_note("completion queues");
	h_mem_reset(m);
	if (VipCreateCQ(nic, 64, &cq) != VIP_SUCCESS) {
		CHECK(0, "create a CQ");
		return;
	}
	c = vi_new(nic, pt, 0, cq, cq);
	d = vi_new(nic, pt, 0, NULL, NULL);
	if (c == NULL || d == NULL || !h_connect(nic, c, nic, d, "cq", 5000))
		return;
	CHECK_RET(VipSendWait(c, 10, &out), VIP_ERROR_RESOURCE,
		  "SendWait on a send queue with a CQ");
	CHECK_RET(VipRecvWait(c, 10, &out), VIP_ERROR_RESOURCE,
		  "RecvWait on a receive queue with a CQ");
	CHECK_RET(VipCQDone(cq, &vh, &rq), VIP_NOT_DONE, "CQDone on an empty CQ");
	t0 = h_now_ms();
	rc = VipCQWait(cq, 200, &vh, &rq);
	el = h_now_ms() - t0;
	CHECK_RET(rc, VIP_TIMEOUT, "CQWait 200 ms on an empty CQ");
	CHECK(el >= 200 && el <= 200 + WAIT_SLACK_MS, "after 200 ms (%llu ms)",
	      (unsigned long long)el);
	for (i = 0; i < 3; i++) {
		r[i] = recv1(m, 5000);
		VipPostRecv(c, r[i], m->mh);
	}
	for (i = 0; i < 3; i++) {
		s[i] = send1(m, 1000 * (i + 1));
		VipPostSend(d, s[i], m->mh);
	}
	for (i = 0, ok = 0; i < 3; i++) {
		expect_done(d, false, s[i], ST_SEND_OK, "send to the CQ VI");
		rc = VipCQWait(cq, 2000, &vh, &rq);
		if (rc == VIP_SUCCESS && vh == c && rq == VIP_TRUE &&
		    VipRecvDone(c, &out) == VIP_SUCCESS && out == r[i] &&
		    out->CS.Status == ST_RECV_OK && out->CS.Length == 1000 * (i + 1) &&
		    memcmp(seg_buf(out, 0), seg_buf(s[i], 0), 1000 * (i + 1)) == 0)
			ok++;
	}
	CHECK(ok == 3, "3 receives: CQWait gives (VI, RecvQueue TRUE), RecvDone dequeues (%u/3)",
	      ok);
	CHECK_RET(VipRecvDone(c, &out), VIP_NOT_DONE, "nothing more on the receive queue");
	for (i = 0; i < 2; i++) {
		r[i] = recv1(m, 5000);
		VipPostRecv(d, r[i], m->mh);
		s[i] = send1(m, 100);
		VipPostSend(c, s[i], m->mh);
	}
	s[2] = send1(m, 100);
	s[2]->CS.Control = 0x0100;
	VipPostSend(c, s[2], m->mh);
	for (i = 0, ok = 0; i < 3; i++) {
		rc = VipCQWait(cq, 2000, &vh, &rq);
		if (rc == VIP_SUCCESS && vh == c && rq == VIP_FALSE &&
		    VipSendDone(c, &out) == VIP_SUCCESS && out == s[i] &&
		    out->CS.Status ==
			    (i < 2 ? ST_SEND_OK : VIP_STATUS_DONE | VIP_STATUS_FORMAT_ERROR))
			ok++;
	}
	CHECK(ok == 3,
	      "3 sends (one malformed): CQWait gives (VI, RecvQueue FALSE), SendDone dequeues "
	      "(%u/3)",
	      ok);
	for (i = 0; i < 2; i++)
		expect_done(d, true, r[i], ST_RECV_OK, "the peer receives");
	/* flushed descriptors are completions too */
	r[0] = recv1(m, 100);
	r[1] = recv1(m, 100);
	VipPostRecv(c, r[0], m->mh);
	VipPostRecv(c, r[1], m->mh);
	VipDisconnect(c);
	for (i = 0, ok = 0; i < 2; i++) {
		rc = VipCQWait(cq, 2000, &vh, &rq);
		if (rc == VIP_SUCCESS && vh == c && rq == VIP_TRUE &&
		    VipRecvDone(c, &out) == VIP_SUCCESS && out == r[i] &&
		    (out->CS.Status & VIP_STATUS_DESC_FLUSHED_ERROR))
			ok++;
	}
	CHECK(ok == 2, "flushed receives reach the CQ too (%u/2)", ok);
	CHECK_RET(VipCQDone(cq, &vh, &rq), VIP_NOT_DONE, "the CQ is empty");
	CHECK_RET(VipDestroyCQ(cq), VIP_ERROR_RESOURCE, "DestroyCQ with a VI attached");
	h_pair_drain(c, d);

	/* receive queue only */
	e = vi_new(nic, pt, 0, NULL, cq);
	f = vi_new(nic, pt, 0, NULL, NULL);
	if (e != NULL && f != NULL && h_connect(nic, e, nic, f, "cq2", 5000)) {
		CHECK_RET(VipRecvWait(e, 10, &out), VIP_ERROR_RESOURCE,
			  "RecvWait on the CQ-bound receive queue");
		r[0] = recv1(m, 100);
		VipPostRecv(f, r[0], m->mh);
		s[0] = send1(m, 50);
		VipPostSend(e, s[0], m->mh);
		expect_done(e, false, s[0], ST_SEND_OK,
			    "SendWait works on the send queue without a CQ");
		expect_done(f, true, r[0], ST_RECV_OK, "peer");
		CHECK_RET(VipCQDone(cq, &vh, &rq), VIP_NOT_DONE,
			  "the send of a VI whose send queue has no CQ makes no entry");
		r[0] = recv1(m, 100);
		VipPostRecv(e, r[0], m->mh);
		s[0] = send1(m, 60);
		VipPostSend(f, s[0], m->mh);
		rc = VipCQWait(cq, 2000, &vh, &rq);
		CHECK(rc == VIP_SUCCESS && vh == e && rq == VIP_TRUE &&
		      VipRecvDone(e, &out) == VIP_SUCCESS && out == r[0] && out->CS.Length == 60,
		      "the receive of the receive-CQ VI");
		expect_done(f, false, s[0], ST_SEND_OK, "peer send");
		h_pair_drain(e, f);
	}
	VipDestroyVi(c);
	VipDestroyVi(d);
	VipDestroyVi(e);
	VipDestroyVi(f);
	CHECK_RET(VipDestroyCQ(cq), VIP_SUCCESS, "destroy the CQ");
}

/* §9.3.2: a VI with descriptors on its queues cannot be destroyed. */
static void
test_destroy_busy(VIP_NIC_HANDLE nic, VIP_PROTECTION_HANDLE pt, struct h_mem *m)
{
	VIP_VI_HANDLE v = vi_new(nic, pt, 0, NULL, NULL);
	VIP_DESCRIPTOR *r, *s, *out;

	h_note("VipDestroyVi with descriptors posted");
	h_mem_reset(m);
	if (v == NULL)
		return;
	r = recv1(m, 100);
	VipPostRecv(v, r, m->mh);
	CHECK_RET(VipDestroyVi(v), VIP_ERROR_RESOURCE, "a receive is posted");
	s = send1(m, 10);
	VipPostSend(v, s, m->mh);
	h_sleep_ms(50);
	VipDisconnect(v);
	CHECK_RET(VipDestroyVi(v), VIP_ERROR_RESOURCE,
		  "both completed (flushed) but not dequeued");
	CHECK_RET(VipRecvDone(v, &out), VIP_SUCCESS, "dequeue the receive");
	CHECK_RET(VipDestroyVi(v), VIP_ERROR_RESOURCE, "the send is still not dequeued");
	CHECK_RET(VipSendDone(v, &out), VIP_SUCCESS, "dequeue the send");
	CHECK_RET(VipDestroyVi(v), VIP_SUCCESS, "destroy once both queues are empty");
}

/*
 * §9.9.1 VI Overrun: more descriptors than MaxDescriptorsPerQueue, on an
 * Idle VI: §5.1 keeps the error until the consumer tries to connect it.
 */
static void
test_overrun(VIP_NIC_HANDLE nic, VIP_PROTECTION_HANDLE pt, struct h_mem *m)
{
	VIP_VI_HANDLE v = vi_new(nic, pt, 0, NULL, NULL);
	unsigned max = (unsigned)nic_attrs.MaxDescriptorsPerQueue, i, ok = 0, flushed = 0;
	VIP_DESCRIPTOR *d, *out;
	struct h_err_event ev;
	union h_net_addr l, r;
	VIP_VI_ATTRIBUTES ra;
	VIP_RETURN rc;

	h_note("VI Overrun: %u receives posted on an Idle VI, then one more", max);
	h_mem_reset(m);
	if (v == NULL)
		return;
	h_err_clear();
	for (i = 0; i < max; i++) {
		d = desc_new(m, 0);
		ok += VipPostRecv(v, d, m->mh) == VIP_SUCCESS;
	}
	CHECK(ok == max, "MaxDescriptorsPerQueue (%u) receives can be posted (%u)", max, ok);
	d = desc_new(m, 0);
	rc = VipPostRecv(v, d, m->mh);
	h_note("posting descriptor %u returned %s", max + 1, VipDpdkReturnString(rc));
	CHECK(!h_err_take(VIP_ERROR_VI_OVERRUN, v, 300, &ev),
	      "one descriptor too many on an Idle VI: VIP_ERROR_VI_OVERRUN is kept (§5.1)");
	rc = VipConnectRequest(v, h_addr(&l, mac_self, "overrun-c"),
			       h_addr(&r, mac_self, "overrun-nobody"), 50, &ra);
	h_note("a connect attempt: %s", VipDpdkReturnString(rc));
	CHECK(h_err_take(VIP_ERROR_VI_OVERRUN, v, 1000, &ev),
	      "VIP_ERROR_VI_OVERRUN reaches the error callback at the connect attempt "
	      "(§5.1, §9.9.1, vipl.h VipErrorCallback)");
	VipDisconnect(v);
	while (VipRecvDone(v, &out) == VIP_SUCCESS)
		flushed++;
	CHECK(flushed == max || flushed == max + 1, "Disconnect flushes them all (%u)", flushed);
	CHECK_RET(VipDestroyVi(v), VIP_SUCCESS, "destroy");
	h_err_clear();
}

struct bg_request {
	VIP_VI_HANDLE vi;
	VIP_RETURN rc;
};

static void *
bg_request_main(void *arg)
{
	struct bg_request *x = arg;
	union h_net_addr l, r;
	VIP_VI_ATTRIBUTES ra;

	x->rc = VipConnectRequest(x->vi, h_addr(&l, mac_self, "pend-c"),
				  h_addr(&r, mac_self, "pend-nobody"), 800, &ra);
	return NULL;
}

/* §5.2: sends in Pending Connect complete in error. */
static void
test_pending_send(VIP_NIC_HANDLE nic, VIP_PROTECTION_HANDLE pt, struct h_mem *m)
{
	VIP_VI_HANDLE v = vi_new(nic, pt, 0, NULL, NULL);
	struct bg_request x = { v, VIP_SUCCESS };
	VIP_DESCRIPTOR *s, *r, *out;
	pthread_t t;

	h_note("a send posted in Pending Connect (§5.2)");
	h_mem_reset(m);
	if (v == NULL || pthread_create(&t, NULL, bg_request_main, &x) != 0)
		return;
	CHECK(h_state_wait(v, VIP_STATE_CONNECT_PENDING, 500) == VIP_STATE_CONNECT_PENDING,
	      "the VI is Pending Connect");
	r = recv1(m, 100);
	VipPostRecv(v, r, m->mh);
	s = send1(m, 100);
	VipPostSend(v, s, m->mh);
	expect_done(v, false, s, VIP_STATUS_DONE | VIP_STATUS_DESC_FLUSHED_ERROR,
		    "send posted in Pending Connect");
	CHECK_RET(VipRecvDone(v, &out), VIP_NOT_DONE,
		  "a receive posted in Pending Connect waits (§5.2)");
	pthread_join(t, NULL);
	VipDisconnect(v);
	CHECK(VipRecvDone(v, &out) == VIP_SUCCESS && out == r &&
	      (out->CS.Status & VIP_STATUS_DESC_FLUSHED_ERROR),
	      "and is flushed by Disconnect");
	CHECK_RET(VipDestroyVi(v), VIP_SUCCESS, "destroy");
}

/* Random split of @p total into @p n lengths (some 0). */
static void
split(uint32_t total, unsigned n, uint32_t *out)
{
	unsigned i;
	uint32_t left = total;

	for (i = 0; i + 1 < n; i++) {
		uint64_t x = h_rand(&rng);

		if (x % 7 == 0)
			out[i] = 0;
		else
			out[i] = left ? (uint32_t)((x >> 8) % (left + 1)) : 0;
		left -= out[i];
	}
	out[n - 1] = left;
}

/*
 * One message: @p size bytes in @p ns send segments, received into @p nr
 * segments of total capacity size + @p extra; descriptors and buffers in
 * @p ms (send) and @p mr (receive), each segment's region picked at random
 * between the two of @p pool. Checks content, canaries, Length and
 * immediate data. @return true if all was right.
 */
static bool
one_message(VIP_VI_HANDLE a, VIP_VI_HANDLE b, struct h_mem *pool[2], uint32_t size, unsigned ns,
	    unsigned nr, uint32_t extra, unsigned idx)
{
	uint32_t *sl = calloc(ns, sizeof(*sl)), *rl = calloc(nr, sizeof(*rl));
	uint8_t *msg = malloc(size ? size : 1), **rb = calloc(nr, sizeof(*rb));
	struct h_mem *ms = pool[h_rand(&rng) & 1], *mr = pool[h_rand(&rng) & 1];
	VIP_DESCRIPTOR *s, *r, *out;
	bool imm = h_rand(&rng) & 1, ok = true;
	uint32_t off, imm_val = (uint32_t)h_rand(&rng);
	unsigned i;
	VIP_RETURN rc;

	if (sl == NULL || rl == NULL || msg == NULL || rb == NULL) {
		free(sl);
		free(rl);
		free(msg);
		free(rb);
		return false;
	}
	h_mem_reset(pool[0]);
	h_mem_reset(pool[1]);
	fill_rand(msg, size, &rng);
	split(size, ns, sl);
	split(size + extra, nr, rl);

	r = desc_new(mr, nr);
	for (i = 0; i < nr; i++) {
		struct h_mem *sm = pool[h_rand(&rng) & 1];
		uint8_t *p = (uint8_t *)h_mem_get(sm, rl[i] + 2 + 64, 1) + h_rand(&rng) % 64;

		memset(p, CANARY, rl[i] + 2);
		rb[i] = p + 1;
		seg_set(r, i, rb[i], sm->mh, rl[i]);
		if (rl[i] == 0 && (h_rand(&rng) & 1))
			seg_set(r, i, NULL, 0xbadbad, 0);
	}
	s = desc_new(ms, ns);
	for (i = 0, off = 0; i < ns; i++) {
		struct h_mem *sm = pool[h_rand(&rng) & 1];
		uint8_t *p = (uint8_t *)h_mem_get(sm, sl[i] + 64, 1) + h_rand(&rng) % 64;

		memcpy(p, msg + off, sl[i]);
		seg_set(s, i, p, sm->mh, sl[i]);
		if (sl[i] == 0 && (h_rand(&rng) & 1))
			seg_set(s, i, NULL, 0xbadbad, 0);
		off += sl[i];
	}
	s->CS.Length = size;
	if (imm) {
		s->CS.Control = VIP_CONTROL_IMMEDIATE;
		s->CS.ImmediateData = imm_val;
	}
	if (VipPostRecv(b, r, mr->mh) != VIP_SUCCESS || VipPostSend(a, s, ms->mh) != VIP_SUCCESS)
		ok = false;
	rc = VipSendWait(a, 3000, &out);
	if (rc != VIP_SUCCESS || out != s || out->CS.Status != ST_SEND_OK ||
	    out->CS.Length != size) {
		h_note("message %u (%u bytes, %u/%u segments): send %s, status %#x, length %u",
		       idx, size, ns, nr, VipDpdkReturnString(rc),
		       rc == VIP_SUCCESS ? out->CS.Status : 0, rc == VIP_SUCCESS ? out->CS.Length : 0);
		ok = false;
	}
	rc = VipRecvWait(b, 3000, &out);
	if (rc != VIP_SUCCESS || out != r ||
	    out->CS.Status != (ST_RECV_OK | (imm ? VIP_STATUS_IMMEDIATE : 0)) ||
	    out->CS.Length != size || (imm && out->CS.ImmediateData != imm_val)) {
		h_note("message %u (%u bytes, %u/%u segments, imm %d): receive %s, status %#x, "
		       "length %u",
		       idx, size, ns, nr, imm, VipDpdkReturnString(rc),
		       rc == VIP_SUCCESS ? out->CS.Status : 0, rc == VIP_SUCCESS ? out->CS.Length : 0);
		ok = false;
	} else {
		/* scatter: the message in order, the rest of the capacity and the
		 * guard bytes untouched */
		for (i = 0, off = 0; i < nr; i++) {
			uint32_t in_msg = off >= size ? 0 : size - off < rl[i] ? size - off : rl[i];
			uint32_t k;

			if (memcmp(rb[i], msg + off, in_msg) != 0) {
				h_note("message %u: data of receive segment %u differs", idx, i);
				ok = false;
			}
			for (k = in_msg; k < rl[i]; k++) {
				if (rb[i][k] != CANARY) {
					h_note("message %u: receive segment %u written past the "
					       "message (byte %u)", idx, i, k);
					ok = false;
					break;
				}
			}
			if (rb[i][-1] != CANARY || rb[i][rl[i]] != CANARY) {
				h_note("message %u: guard byte of receive segment %u overwritten",
				       idx, i);
				ok = false;
			}
			off += rl[i];
		}
	}
	if (!ok) {
		/* resynchronise: flush whatever is left */
		VIP_DESCRIPTOR *x;

		h_sleep_ms(50);
		while (VipSendDone(a, &x) == VIP_SUCCESS || VipRecvDone(b, &x) == VIP_SUCCESS)
			;
	}
	free(sl);
	free(rl);
	free(msg);
	free(rb);
	return ok;
}

/* Gather/scatter with random splits, sizes up to MaxTransferSize. */
static void
test_random(VIP_VI_HANDLE a, VIP_VI_HANDLE b, struct h_mem *pm, struct h_mem *hm, uint32_t mtu)
{
	struct h_mem *both[2] = { pm, hm }, *only_p[2] = { pm, pm }, *only_h[2] = { hm, hm };
	unsigned i, good = 0, n = 150, maxseg = (unsigned)nic_attrs.MaxSegmentsPerDesc;
	uint64_t t0 = h_now_ms();

	h_note("gather/scatter: %u random messages of 0..%u bytes", n, mtu);
	CHECK(one_message(a, b, only_p, 0, 1, 1, 0, 9000), "empty message, provider memory");
	CHECK(one_message(a, b, only_h, 0, 4, 3, 17, 9001), "empty message, malloc'd memory");
	CHECK(one_message(a, b, only_p, mtu, 1, 1, 0, 9002),
	      "MaxTransferSize (%u) message, one segment each, provider memory", mtu);
	CHECK(one_message(a, b, only_h, mtu, 1, 1, 0, 9003),
	      "MaxTransferSize message, one segment each, malloc'd memory");
	CHECK(one_message(a, b, both, mtu, 13, 7, 0, 9004),
	      "MaxTransferSize message, 13 gather / 7 scatter segments, mixed memory");
	CHECK(one_message(a, b, both, mtu, maxseg, 5, 100, 9005),
	      "MaxTransferSize message gathered from MaxSegmentsPerDesc (%u) segments", maxseg);
	CHECK(one_message(a, b, both, 5000, 3, maxseg, 0, 9006),
	      "message scattered into MaxSegmentsPerDesc segments");
	CHECK(one_message(a, b, only_h, 1, 1, 1, 0, 9007), "1-byte message");
	for (i = 0; i < n; i++) {
		uint64_t x = h_rand(&rng);
		uint32_t size;
		unsigned ns = 1 + (unsigned)(h_rand(&rng) % 8), nr = 1 + (unsigned)(h_rand(&rng) % 8);
		uint32_t extra = (h_rand(&rng) & 1) ? 0 : (uint32_t)(h_rand(&rng) % 2000);

		switch (x % 8) {
		case 0:
			size = 0;
			break;
		case 1:
			size = mtu;
			break;
		case 2:
			size = (uint32_t)(h_rand(&rng) % 64);
			break;
		default:
			size = (uint32_t)(h_rand(&rng) % (mtu + 1));
			break;
		}
		if (size + extra > mtu + 2000)
			extra = 0;
		good += one_message(a, b, both, size, ns, nr, extra, i);
	}
	CHECK(good == n, "%u random messages with random gather/scatter arrive intact (%u right, "
			 "%llu ms)",
	      n, good, (unsigned long long)(h_now_ms() - t0));
}

struct stream_result {
	unsigned recvd, in_order, content, sent, sdone, stalled;
	uint64_t bytes, ms;
};

/*
 * @p n messages of 0..@p maxsz bytes from @p a to @p b, with @p w receives
 * posted ahead: a message is sent only once its receive is posted, so
 * none may be dropped for want of one. Checks order, exactly-once and
 * content into @p res; no CHECK (runs in threads too).
 */
static void
stream_run(VIP_VI_HANDLE a, VIP_VI_HANDLE b, struct h_mem *m, unsigned n, unsigned w,
	   uint32_t maxsz, uint64_t seed, struct stream_result *res)
{
	VIP_DESCRIPTOR **rd = calloc(w, sizeof(*rd)), **sd = calloc(w, sizeof(*sd)), *out;
	uint8_t **rbuf = calloc(w, sizeof(*rbuf)), **sbuf = calloc(w, sizeof(*sbuf));
	uint32_t *len = calloc(w, sizeof(*len));
	unsigned sent = 0, recvd = 0, sdone = 0, in_order = 0, content = 0, i;
	uint64_t t0, bytes = 0, st = seed;
	VIP_RETURN rc;

	memset(res, 0, sizeof(*res));
	if (rd == NULL || sd == NULL || rbuf == NULL || sbuf == NULL || len == NULL) {
		res->stalled = 1;
		goto out;
	}
	h_mem_reset(m);
	for (i = 0; i < w; i++) {
		rd[i] = desc_new(m, 1);
		sd[i] = desc_new(m, 1);
		rbuf[i] = h_mem_get(m, maxsz, 64);
		sbuf[i] = h_mem_get(m, maxsz, 64);
		seg_set(rd[i], 0, rbuf[i], m->mh, maxsz);
		if (i < n)
			VipPostRecv(b, rd[i], m->mh);
	}
	t0 = h_now_ms();
	while (recvd < n) {
		/* a send only when the receive for it is posted */
		while (sent < n && sent < recvd + w && sent < sdone + w) {
			unsigned k = sent % w;
			uint32_t sz = (uint32_t)(h_rand(&st) % (maxsz + 1)), j;

			if (sent % 100 == 7)
				sz = 0;
			else if (sent % 100 == 8)
				sz = maxsz;
			len[k] = sz;
			for (j = 0; j + 4 <= sz; j += 4) {
				uint32_t v = (uint32_t)seed + sent * 2654435761u + j;

				memcpy(sbuf[k] + j, &v, 4);
			}
			for (; j < sz; j++)
				sbuf[k][j] = (uint8_t)(sent + j);
			memset(sd[k], 0, sizeof(VIP_DESCRIPTOR));
			sd[k]->CS.SegCount = 1;
			sd[k]->CS.Control = VIP_CONTROL_IMMEDIATE;
			sd[k]->CS.ImmediateData = sent;
			sd[k]->CS.Length = sz;
			seg_set(sd[k], 0, sbuf[k], m->mh, sz);
			if (VipPostSend(a, sd[k], m->mh) != VIP_SUCCESS) {
				h_note("stream: VipPostSend of message %u failed", sent);
				res->stalled = 1;
				break;
			}
			sent++;
		}
		while (VipSendDone(a, &out) == VIP_SUCCESS) {
			if (out != sd[sdone % w] || out->CS.Status != ST_SEND_OK)
				h_note("stream: send %u: status %#x", sdone, out->CS.Status);
			sdone++;
		}
		rc = VipRecvWait(b, 2000, &out);
		if (rc != VIP_SUCCESS) {
			h_note("stream stalled after %u messages: %s", recvd, VipDpdkReturnString(rc));
			res->stalled = 1;
			break;
		}
		i = recvd % w;
		if (out == rd[i] && out->CS.Status == (ST_RECV_OK | VIP_STATUS_IMMEDIATE) &&
		    out->CS.ImmediateData == recvd) {
			uint32_t sz = out->CS.Length, j;
			bool same = sz == len[recvd % w];

			in_order++;
			for (j = 0; same && j + 4 <= sz; j += 4) {
				uint32_t v = (uint32_t)seed + recvd * 2654435761u + j;

				same = memcmp(rbuf[i] + j, &v, 4) == 0;
			}
			for (; same && j < sz; j++)
				same = rbuf[i][j] == (uint8_t)(recvd + j);
			content += same;
			bytes += sz;
		} else if (recvd - in_order < 5) {
			h_note("stream: message %u: status %#x, immediate %u, length %u", recvd,
			       out->CS.Status, out->CS.ImmediateData, out->CS.Length);
		}
		recvd++;
		/* repost for message recvd - 1 + w */
		memset(rd[i], 0, sizeof(VIP_DESCRIPTOR));
		rd[i]->CS.SegCount = 1;
		seg_set(rd[i], 0, rbuf[i], m->mh, maxsz);
		if (recvd + w - 1 < n)
			VipPostRecv(b, rd[i], m->mh);
	}
	while (sdone < sent && VipSendWait(a, 2000, &out) == VIP_SUCCESS)
		sdone++;
	res->recvd = recvd;
	res->in_order = in_order;
	res->content = content;
	res->sent = sent;
	res->sdone = sdone;
	res->bytes = bytes;
	res->ms = h_now_ms() - t0;
	if (res->stalled)
		h_vi_drain(b);
out:
	free(rd);
	free(sd);
	free(rbuf);
	free(sbuf);
	free(len);
}

/* Many messages back to back, a window of posted receives. */
static void
test_stream(VIP_NIC_HANDLE nic, VIP_VI_HANDLE a, VIP_VI_HANDLE b, struct h_mem *m)
{
	enum { N = 2000, W = 64, MAXSZ = 12000 };
	struct stream_result r;
	VIP_DPDK_COUNTERS c0, c1;

	h_note("%u messages of 0..%u bytes back to back, %u receives posted ahead", N, MAXSZ, W);
	h_err_clear();
	h_counters(nic, &c0);
	stream_run(a, b, m, N, W, MAXSZ, h_rand(&rng), &r);
	h_note("%u messages, %" PRIu64 " bytes in %" PRIu64 " ms", r.recvd, r.bytes, r.ms);
	CHECK(r.recvd == N && r.in_order == N,
	      "all %u messages arrive exactly once and in order (%u received, %u in place)", N,
	      r.recvd, r.in_order);
	CHECK(r.content == N, "with their content (%u right)", r.content);
	CHECK(r.sdone == r.sent && r.sent == N, "all sends completed (%u of %u)", r.sdone, r.sent);
	CHECK(h_err_count(VIP_ERROR_RECVQ_EMPTY, NULL) == 0, "no RECVQ_EMPTY during the stream");
	h_counters(nic, &c1);
	CHECK(c1.FramesDropped == c0.FramesDropped,
	      "viad dropped no frame on the loopback NIC (%" PRIu64 " dropped)",
	      c1.FramesDropped - c0.FramesDropped);

	h_note("the same with %u receives posted ahead and messages up to %u bytes", 256,
	       (unsigned)nic_attrs.MaxTransferSize);
	h_counters(nic, &c0);
	stream_run(a, b, m, 600, 256, (uint32_t)nic_attrs.MaxTransferSize, h_rand(&rng), &r);
	h_counters(nic, &c1);
	h_note("%u messages, %" PRIu64 " bytes in %" PRIu64 " ms", r.recvd, r.bytes, r.ms);
	CHECK(r.recvd == 600 && r.in_order == 600 && r.content == 600 && !r.stalled,
	      "600 messages up to MaxTransferSize, window 256: all arrive, in order, intact "
	      "(%u received, %u in place, %u intact)",
	      r.recvd, r.in_order, r.content);
	CHECK(c1.FramesDropped == c0.FramesDropped,
	      "no frame dropped (%" PRIu64 " dropped)", c1.FramesDropped - c0.FramesDropped);
}

struct pair_job {
	VIP_VI_HANDLE a, b;
	struct h_mem m;
	uint64_t seed;
	struct stream_result r;
};

static void *
pair_job_main(void *arg)
{
	struct pair_job *j = arg;

	stream_run(j->a, j->b, &j->m, 500, 32, 16384, j->seed, &j->r);
	return NULL;
}

/* Several connections at once, each driven by its own thread. */
static void
test_concurrent(VIP_NIC_HANDLE nic, VIP_PROTECTION_HANDLE pt, struct h_mem *hm, struct h_mem *pm)
{
	enum { P = 4 };
	struct pair_job jobs[P];
	pthread_t t[P];
	unsigned i, good = 0;
	bool started[P];

	h_note("%u connections streaming at once from %u threads", P, P);
	memset(jobs, 0, sizeof(jobs));
	for (i = 0; i < P; i++) {
		struct h_mem *m = i & 1 ? pm : hm;
		char tag[16];

		started[i] = false;
		jobs[i].a = vi_new(nic, pt, 0, NULL, NULL);
		jobs[i].b = vi_new(nic, pt, 0, NULL, NULL);
		jobs[i].m.name = m->name;
		jobs[i].m.mh = m->mh;
		jobs[i].m.len = m->len / P;
		jobs[i].m.base = m->base + (size_t)i * jobs[i].m.len;
		jobs[i].seed = h_rand(&rng);
		snprintf(tag, sizeof(tag), "conc%u", i);
		if (jobs[i].a == NULL || jobs[i].b == NULL ||
		    !h_connect(nic, jobs[i].a, nic, jobs[i].b, tag, 5000))
			continue;
	}
	for (i = 0; i < P; i++)
		started[i] = pthread_create(&t[i], NULL, pair_job_main, &jobs[i]) == 0;
	for (i = 0; i < P; i++) {
		if (!started[i])
			continue;
		pthread_join(t[i], NULL);
		if (jobs[i].r.recvd == 500 && jobs[i].r.in_order == 500 && jobs[i].r.content == 500)
			good++;
		else
			h_note("connection %u: %u received, %u in place, %u intact", i,
			       jobs[i].r.recvd, jobs[i].r.in_order, jobs[i].r.content);
	}
	CHECK(good == P, "each of %u concurrent streams delivers its 500 messages in order, "
			 "intact (%u right)",
	      P, good);
	for (i = 0; i < P; i++) {
		h_pair_drain(jobs[i].a, jobs[i].b);
		VipDestroyVi(jobs[i].a);
		VipDestroyVi(jobs[i].b);
	}
}

/* Disconnect with many sends queued: every descriptor comes back once, in
 * order, the completed ones first, then the flushed ones (§4.2, §6.3.1.1). */
static void
test_disconnect_busy(VIP_NIC_HANDLE nic, VIP_VI_HANDLE a, VIP_VI_HANDLE b, struct h_mem *m)
{
	enum { N = 400 };
	uint32_t mtu = (uint32_t)nic_attrs.MaxTransferSize;
	VIP_DESCRIPTOR *rd[N], *sd[N], *out;
	unsigned i, s_ok = 0, s_fl = 0, s_bad = 0, r_ok = 0, r_fl = 0, r_bad = 0;
	bool s_prefix = true, r_prefix = true;
	uint8_t *rbuf, *sbuf;
	struct h_err_event ev;

	h_note("Disconnect while %u sends of %u bytes are queued", N, mtu);
	h_mem_reset(m);
	h_err_clear();
	rbuf = h_mem_get(m, mtu, 64);
	sbuf = h_mem_get(m, mtu, 64);
	for (i = 0; i < N; i++) {
		rd[i] = desc_new(m, 1);
		seg_set(rd[i], 0, rbuf, m->mh, mtu);
		VipPostRecv(b, rd[i], m->mh);
	}
	for (i = 0; i < N; i++) {
		sd[i] = desc_new(m, 1);
		seg_set(sd[i], 0, sbuf, m->mh, mtu);
		sd[i]->CS.Length = mtu;
		VipPostSend(a, sd[i], m->mh);
	}
	CHECK_RET(VipDisconnect(a), VIP_SUCCESS, "disconnect the sender at once");
	for (i = 0; i < N; i++) {
		if (VipSendWait(a, 2000, &out) != VIP_SUCCESS || out != sd[i]) {
			s_bad++;
			continue;
		}
		if (out->CS.Status == ST_SEND_OK) {
			s_ok++;
			s_prefix &= s_fl == 0;
		} else if (out->CS.Status == (VIP_STATUS_DONE | VIP_STATUS_DESC_FLUSHED_ERROR)) {
			s_fl++;
		} else {
			s_bad++;
		}
	}
	h_note("sender: %u sent, %u flushed, %u wrong", s_ok, s_fl, s_bad);
	CHECK(s_bad == 0 && s_ok + s_fl == N,
	      "every send comes back once, in order, sent or DESC_FLUSHED (%u wrong)", s_bad);
	CHECK(s_prefix, "the flushed sends all come after the sent ones");
	CHECK_RET(VipSendDone(a, &out), VIP_NOT_DONE, "the send queue is empty");
	CHECK(h_err_take(VIP_ERROR_CONN_LOST, b, 2000, &ev), "the receiver loses the connection");
	for (i = 0; i < N; i++) {
		if (VipRecvWait(b, 2000, &out) != VIP_SUCCESS || out != rd[i]) {
			r_bad++;
			continue;
		}
		if (out->CS.Status == ST_RECV_OK && out->CS.Length == mtu) {
			r_ok++;
			r_prefix &= r_fl == 0;
		} else if (out->CS.Status & VIP_STATUS_DESC_FLUSHED_ERROR) {
			r_fl++;
		} else {
			r_bad++;
		}
	}
	h_note("receiver: %u received, %u flushed, %u wrong", r_ok, r_fl, r_bad);
	CHECK(r_bad == 0 && r_ok + r_fl == N,
	      "every receive comes back once, in order, received or DESC_FLUSHED (%u wrong)",
	      r_bad);
	CHECK(r_prefix, "the flushed receives all come after the received ones");
	CHECK(r_ok <= s_ok, "no more received (%u) than sent (%u)", r_ok, s_ok);
	h_pair_drain(a, b);
	h_connect(nic, a, nic, b, "p64-again", 5000);
}

/* Every receive posted at once, MaxTransferSize messages as fast as they go. */
static void
test_flood(VIP_NIC_HANDLE nic, VIP_VI_HANDLE a, VIP_VI_HANDLE b, struct h_mem *m)
{
	unsigned n = 1000, i, got = 0, in_order = 0, sdone = 0, last = 0;
	bool first = true;
	uint32_t mtu = (uint32_t)nic_attrs.MaxTransferSize;
	VIP_DESCRIPTOR **rd = calloc(n, sizeof(*rd)), **sd = calloc(n, sizeof(*sd)), *out;
	uint8_t *rbuf, *sbuf;
	VIP_DPDK_COUNTERS c0, c1;
	uint64_t t0;

	h_note("flood: %u receives posted, then %u sends of %u bytes at once", n, n, mtu);
	if (rd == NULL || sd == NULL)
		return;
	h_mem_reset(m);
	h_err_clear();
	rbuf = h_mem_get(m, mtu, 64);
	sbuf = h_mem_get(m, mtu, 64);
	fill_rand(sbuf, mtu, &rng);
	for (i = 0; i < n; i++) {
		rd[i] = desc_new(m, 1);
		seg_set(rd[i], 0, rbuf, m->mh, mtu);
		VipPostRecv(b, rd[i], m->mh);
	}
	h_counters(nic, &c0);
	t0 = h_now_ms();
	for (i = 0; i < n; i++) {
		sd[i] = desc_new(m, 1);
		seg_set(sd[i], 0, sbuf, m->mh, mtu);
		sd[i]->CS.Length = mtu;
		sd[i]->CS.Control = VIP_CONTROL_IMMEDIATE;
		sd[i]->CS.ImmediateData = i;
		VipPostSend(a, sd[i], m->mh);
	}
	for (i = 0; i < n; i++) {
		if (VipSendWait(a, 2000, &out) == VIP_SUCCESS && out->CS.Status == ST_SEND_OK)
			sdone++;
	}
	for (;;) {
		if (VipRecvWait(b, 300, &out) != VIP_SUCCESS)
			break;
		if (out->CS.Status == (ST_RECV_OK | VIP_STATUS_IMMEDIATE) && out->CS.Length == mtu) {
			got++;
			/* no reordering, no duplicate: strictly increasing */
			in_order += first || out->CS.ImmediateData > last;
			last = out->CS.ImmediateData;
			first = false;
		}
	}
	h_counters(nic, &c1);
	h_note("flood: %u of %u delivered in %llu ms; viad counted %" PRIu64 " frames sent, %" PRIu64
	       " received, %" PRIu64 " dropped",
	       got, n, (unsigned long long)(h_now_ms() - t0), c1.FramesTx - c0.FramesTx,
	       c1.FramesRx - c0.FramesRx, c1.FramesDropped - c0.FramesDropped);
	CHECK(sdone == n, "all %u sends complete", n);
	CHECK(in_order == got, "what arrives arrives once and in order (%u of %u)", in_order, got);
	CHECK(got == n,
	      "loopback: every one of %u back-to-back MaxTransferSize messages arrives (%u)", n,
	      got);
	CHECK(memcmp(rbuf, sbuf, mtu) == 0 || got == 0, "the last one is intact");
	h_vi_drain(b);
	free(rd);
	free(sd);
}

/* ---- two processes ----------------------------------------------------------- */

#define FORK_MSGS  600
#define FORK_BATCH 32
#define FORK_MAX   20000

static uint32_t
fork_len(unsigned i)
{
	return (i * 7919u) % (FORK_MAX + 1);
}

static uint8_t
fork_byte(unsigned i, uint32_t j)
{
	return (uint8_t)(i * 31u + j * 7u + (j >> 8));
}

struct child_ctx {
	VIP_NIC_HANDLE nic;
	VIP_PROTECTION_HANDLE pt;
	struct h_mem m;
	VIP_VI_HANDLE vi;
};

static bool
child_open(struct child_ctx *c, bool heap)
{
	VIP_MEM_ATTRIBUTES ma;
	VIP_NIC_ATTRIBUTES na;

	memset(c, 0, sizeof(*c));
	if (!CHECK(VipOpenNic("via0", &c->nic) == VIP_SUCCESS && VipQueryNic(c->nic, &na) == VIP_SUCCESS &&
		   VipCreatePtag(c->nic, &c->pt) == VIP_SUCCESS,
		   "open via0"))
		return false;
	memcpy(mac_self, na.LocalNicAddress, 6);
	VipErrorCallback(c->nic, NULL, h_err_handler);
	c->m.name = heap ? "child heap" : "child provider";
	c->m.len = 4u << 20;
	if (heap) {
		c->m.base = aligned_alloc(4096, c->m.len);
		if (c->m.base == NULL)
			return false;
	} else if (h_alloc(c->nic, c->m.len, (void **)&c->m.base) != VIP_SUCCESS) {
		return CHECK(0, "provider memory");
	}
	memset(&ma, 0, sizeof(ma));
	ma.Ptag = c->pt;
	if (!CHECK(VipRegisterMem(c->nic, c->m.base, c->m.len, &ma, &c->m.mh) == VIP_SUCCESS,
		   "register %s memory", c->m.name))
		return false;
	c->vi = vi_new(c->nic, c->pt, 0, NULL, NULL);
	return c->vi != NULL;
}

static void
child_server(void)
{
	struct child_ctx c;
	VIP_DESCRIPTOR *rd[FORK_BATCH], *ack, *out;
	uint8_t *rbuf[FORK_BATCH];
	union h_net_addr l, r;
	VIP_VI_ATTRIBUTES ra;
	VIP_CONN_HANDLE conn;
	struct h_err_event ev;
	unsigned i, got = 0, right = 0, batch;

	if (!child_open(&c, true))
		return;
	for (i = 0; i < FORK_BATCH; i++) {
		rd[i] = desc_new(&c.m, 1);
		rbuf[i] = h_mem_get(&c.m, FORK_MAX, 64);
		seg_set(rd[i], 0, rbuf[i], c.m.mh, FORK_MAX);
		VipPostRecv(c.vi, rd[i], c.m.mh);
	}
	ack = desc_new(&c.m, 0);
	if (!CHECK_RET(VipConnectWait(c.nic, h_addr(&l, mac_self, "fork-srv"), 10000, &r.a, &ra,
				      &conn),
		       VIP_SUCCESS, "wait for the other process") ||
	    !CHECK_RET(VipConnectAccept(conn, c.vi), VIP_SUCCESS, "accept it"))
		return;
	for (batch = 0; got < FORK_MSGS; batch++) {
		for (i = 0; i < FORK_BATCH && got < FORK_MSGS; i++, got++) {
			uint32_t n = fork_len(got), j;
			bool ok;

			if (VipRecvWait(c.vi, 5000, &out) != VIP_SUCCESS) {
				CHECK(0, "message %u arrives", got);
				return;
			}
			ok = out == rd[i] && out->CS.Status == (ST_RECV_OK | VIP_STATUS_IMMEDIATE) &&
			     out->CS.ImmediateData == got && out->CS.Length == n;
			for (j = 0; ok && j < n; j++)
				ok = rbuf[i][j] == fork_byte(got, j);
			right += ok;
			memset(rd[i], 0, sizeof(VIP_DESCRIPTOR));
			rd[i]->CS.SegCount = 1;
			seg_set(rd[i], 0, rbuf[i], c.m.mh, FORK_MAX);
			VipPostRecv(c.vi, rd[i], c.m.mh);
		}
		/* all receives are posted again: let the client go on */
		memset(ack, 0, sizeof(*ack));
		ack->CS.Control = VIP_CONTROL_IMMEDIATE;
		ack->CS.ImmediateData = batch;
		VipPostSend(c.vi, ack, c.m.mh);
		VipSendWait(c.vi, 2000, &out);
	}
	CHECK(right == FORK_MSGS, "%u messages from the other process, in order and intact (%u)",
	      FORK_MSGS, right);
	CHECK(h_err_take(VIP_ERROR_CONN_LOST, c.vi, 5000, &ev),
	      "CONN_LOST when the other process disconnects");
	CHECK(h_vi_state(c.vi) == VIP_STATE_ERROR, "Error state");
	CHECK_RET(VipDisconnect(c.vi), VIP_SUCCESS, "disconnect");
	for (i = 0; i < FORK_BATCH; i++)
		VipRecvDone(c.vi, &out);
	CHECK_RET(VipDestroyVi(c.vi), VIP_SUCCESS, "destroy the VI");
	CHECK_RET(VipCloseNic(c.nic), VIP_SUCCESS, "close");
}

static void
child_client(void)
{
	struct child_ctx c;
	VIP_DESCRIPTOR *sd[FORK_BATCH], *ack, *out;
	uint8_t *sbuf[FORK_BATCH];
	union h_net_addr l, r;
	VIP_VI_ATTRIBUTES ra;
	unsigned i, sent = 0, batch, acks = 0;
	VIP_RETURN rc = VIP_TIMEOUT;
	uint64_t t0 = h_now_ms();

	if (!child_open(&c, false))
		return;
	for (i = 0; i < FORK_BATCH; i++) {
		sd[i] = desc_new(&c.m, 1);
		sbuf[i] = h_mem_get(&c.m, FORK_MAX, 64);
	}
	ack = desc_new(&c.m, 0);
	VipPostRecv(c.vi, ack, c.m.mh);
	/* the server may not be waiting yet */
	while (h_now_ms() - t0 < 10000) {
		rc = VipConnectRequest(c.vi, h_addr(&l, mac_self, "fork-cli"),
				       h_addr(&r, mac_self, "fork-srv"), 1000, &ra);
		if (rc != VIP_NO_MATCH && rc != VIP_TIMEOUT)
			break;
	}
	if (!CHECK_RET(rc, VIP_SUCCESS, "connect to the other process"))
		return;
	for (batch = 0; sent < FORK_MSGS; batch++) {
		for (i = 0; i < FORK_BATCH && sent < FORK_MSGS; i++, sent++) {
			uint32_t n = fork_len(sent), j;

			for (j = 0; j < n; j++)
				sbuf[i][j] = fork_byte(sent, j);
			memset(sd[i], 0, sizeof(VIP_DESCRIPTOR));
			sd[i]->CS.SegCount = 1;
			sd[i]->CS.Control = VIP_CONTROL_IMMEDIATE;
			sd[i]->CS.ImmediateData = sent;
			sd[i]->CS.Length = n;
			seg_set(sd[i], 0, sbuf[i], c.m.mh, n);
			VipPostSend(c.vi, sd[i], c.m.mh);
		}
		while (i-- > 0) {
			if (VipSendWait(c.vi, 2000, &out) != VIP_SUCCESS ||
			    out->CS.Status != ST_SEND_OK) {
				CHECK(0, "send of batch %u completes", batch);
				return;
			}
		}
		rc = VipRecvWait(c.vi, 5000, &out);
		if (rc != VIP_SUCCESS || out->CS.ImmediateData != batch) {
			CHECK(0, "ack of batch %u (%s)", batch, VipDpdkReturnString(rc));
			return;
		}
		acks++;
		memset(ack, 0, sizeof(*ack));
		VipPostRecv(c.vi, ack, c.m.mh);
	}
	CHECK(acks == (FORK_MSGS + FORK_BATCH - 1) / FORK_BATCH, "%u batches acknowledged", acks);
	CHECK_RET(VipDisconnect(c.vi), VIP_SUCCESS, "disconnect");
	VipRecvDone(c.vi, &out);
	CHECK_RET(VipDestroyVi(c.vi), VIP_SUCCESS, "destroy the VI");
	CHECK_RET(VipCloseNic(c.nic), VIP_SUCCESS, "close");
}

static pid_t
fork_child(const char *name, void (*fn)(void))
{
	pid_t parent = getpid(), pid = fork();

	if (pid < 0) {
		CHECK(0, "fork %s", name);
		return -1;
	}
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		/* the harness's watchdog would kill the viads: not ours */
		signal(SIGALRM, SIG_DFL);
		alarm(50);
		h_set_child(name);
		rng = 0x5eed ^ (uint64_t)getpid();
		fn();
		_exit(h_failures() == 0 ? 0 : 1);
	}
	return pid;
}

/* Before this process opens a NIC: the children must not inherit one. */
static void
test_two_processes(void)
{
	pid_t srv, cli;
	uint64_t t0 = h_now_ms();
	int st_s = -1, st_c = -1;

	h_note("two processes (fork) connected through one viad, %u messages", FORK_MSGS);
	srv = fork_child("server", child_server);
	cli = fork_child("client", child_client);
	while ((srv > 0 || cli > 0) && h_now_ms() - t0 < 55000) {
		int st;
		pid_t p = waitpid(-1, &st, WNOHANG);

		if (p == srv) {
			st_s = st;
			srv = 0;
		} else if (p == cli) {
			st_c = st;
			cli = 0;
		} else if (p <= 0) {
			h_sleep_ms(20);
		}
	}
	if (srv > 0) {
		kill(srv, SIGKILL);
		waitpid(srv, NULL, 0);
	}
	if (cli > 0) {
		kill(cli, SIGKILL);
		waitpid(cli, NULL, 0);
	}
	CHECK(st_s != -1 && WIFEXITED(st_s) && WEXITSTATUS(st_s) == 0,
	      "the server process passed its checks (status %#x)", st_s);
	CHECK(st_c != -1 && WIFEXITED(st_c) && WEXITSTATUS(st_c) == 0,
	      "the client process passed its checks (status %#x)", st_c);
	h_note("two processes took %llu ms", (unsigned long long)(h_now_ms() - t0));
}

int
main(int argc, char **argv)
{
	struct viad_proc v;
	VIP_NIC_HANDLE nic = NULL;
	VIP_PROTECTION_HANDLE pt = NULL, pt2 = NULL;
	struct h_mem pm = { .name = "provider" }, hm = { .name = "heap" }, om = { .name = "other" };
	VIP_MEM_ATTRIBUTES ma;
	VIP_VI_HANDLE a32, b32, a64, b64;
	uint32_t mtu;
	uint64_t t0;

	h_init(argc, argv, 110);
	rng = h_seed();
	if (viad_start(&v, "data", NULL) != 0)
		return h_finish();
	t0 = h_now_ms();
	test_two_processes();

	if (VipOpenNic("via0", &nic) != VIP_SUCCESS || VipQueryNic(nic, &nic_attrs) != VIP_SUCCESS ||
	    VipCreatePtag(nic, &pt) != VIP_SUCCESS || VipCreatePtag(nic, &pt2) != VIP_SUCCESS) {
		CHECK(0, "open via0");
		viad_stop(&v);
		return h_finish();
	}
	memcpy(mac_self, nic_attrs.LocalNicAddress, 6);
	mtu = (uint32_t)nic_attrs.MaxTransferSize;
	h_note("via0: MaxTransferSize %u, MaxSegmentsPerDesc %lu, NativeMTU %lu", mtu,
	       (unsigned long)nic_attrs.MaxSegmentsPerDesc, (unsigned long)nic_attrs.NativeMTU);
	CHECK_RET(VipErrorCallback(nic, NULL, h_err_handler), VIP_SUCCESS, "register an error callback");
	memset(&ma, 0, sizeof(ma));
	ma.Ptag = pt;
	pm.len = 16u << 20;
	hm.len = 40u << 20;
	om.len = 1u << 20;
	hm.base = aligned_alloc(4096, hm.len);
	om.base = aligned_alloc(4096, om.len);
	if (h_alloc(nic, pm.len, (void **)&pm.base) != VIP_SUCCESS || hm.base == NULL ||
	    om.base == NULL || VipRegisterMem(nic, pm.base, pm.len, &ma, &pm.mh) != VIP_SUCCESS ||
	    VipRegisterMem(nic, hm.base, hm.len, &ma, &hm.mh) != VIP_SUCCESS) {
		CHECK(0, "provider and heap memory");
		return h_finish();
	}
	ma.Ptag = pt2;
	if (VipRegisterMem(nic, om.base, om.len, &ma, &om.mh) != VIP_SUCCESS) {
		CHECK(0, "memory of a second protection tag");
		return h_finish();
	}

	test_unconnected(nic, pt, &pm);
	test_pending_send(nic, pt, &pm);
	test_overrun(nic, pt, &pm);
	a32 = vi_new(nic, pt, 32768, NULL, NULL);
	b32 = vi_new(nic, pt, 32768, NULL, NULL);
	if (a32 != NULL && b32 != NULL && h_connect(nic, a32, nic, b32, "p32", 5000)) {
		test_format(a32, b32, &pm);
		test_protection(nic, pt, a32, b32, &pm, &hm, &om);
		test_length(a32, b32, &hm);
		test_recvq_empty(a32, b32, &pm);
		test_immediate(a32, b32, &hm);
		test_waits(a32, b32, &pm);
		test_fifo(a32, b32, &pm);
		h_pair_drain(a32, b32);
	}
	test_cq(nic, pt, &pm);
	test_destroy_busy(nic, pt, &pm);
	a64 = vi_new(nic, pt, mtu, NULL, NULL);
	b64 = vi_new(nic, pt, mtu, NULL, NULL);
	if (a64 != NULL && b64 != NULL && h_connect(nic, a64, nic, b64, "p64", 5000)) {
		VIP_DESCRIPTOR *s, *out;

		h_mem_reset(&pm);
		s = send1(&pm, mtu + 1);
		VipPostSend(a64, s, pm.mh);
		expect_done(a64, false, s, VIP_STATUS_DONE | VIP_STATUS_LENGTH_ERROR,
			    "NIC MaxTransferSize + 1 bytes");
		CHECK_RET(VipRecvDone(b64, &out), VIP_NOT_DONE, "nothing sent");
		test_random(a64, b64, &pm, &hm, mtu);
		test_stream(nic, a64, b64, &hm);
		test_disconnect_busy(nic, a64, b64, &hm);
		test_flood(nic, a64, b64, &hm);
		h_pair_drain(a64, b64);
	}
	test_concurrent(nic, pt, &hm, &pm);
	CHECK_RET(VipDestroyVi(a32), VIP_SUCCESS, "destroy a32");
	CHECK_RET(VipDestroyVi(b32), VIP_SUCCESS, "destroy b32");
	CHECK_RET(VipDestroyVi(a64), VIP_SUCCESS, "destroy a64");
	CHECK_RET(VipDestroyVi(b64), VIP_SUCCESS, "destroy b64");
	CHECK_RET(VipDeregisterMem(nic, pm.base, pm.mh), VIP_SUCCESS, "deregister");
	CHECK_RET(VipDeregisterMem(nic, hm.base, hm.mh), VIP_SUCCESS, "deregister");
	CHECK_RET(VipDeregisterMem(nic, om.base, om.mh), VIP_SUCCESS, "deregister");
	CHECK_RET(h_free(nic, pm.base), VIP_SUCCESS, "free provider memory");
	CHECK_RET(VipCloseNic(nic), VIP_SUCCESS, "close");
	free(hm.base);
	free(om.base);
	h_note("tests took %llu ms", (unsigned long long)(h_now_ms() - t0));
	CHECK(viad_alive(&v), "viad is still running");
	viad_stop(&v);
	return h_finish();
}
