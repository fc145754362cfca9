/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vipl_pingpong: round-trip latency over a VIA connection, per message
 * size, with the standard VIPL API.  The client sends a message, the server
 * echoes it, the client records the round trip.  See -h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vipl_common.h"

#define PP_DEPTH 4  /* receive descriptors per VI; one message is in flight */
#define PP_TSLOTS 2 /* RDMA target slots: message seq lands in slot seq % 2 */

static const uint32_t pp_sizes[] = { 0, 64, 1024, 4096, 16384, 65536 };

static const struct vc_app pp_app = {
	.name = "vipl_pingpong",
	.test = "pingpong",
	.id = VC_TEST_PINGPONG,
	.disc = "vipl-pp",
	.about =
		"Round-trip latency.  The client sends SIZE bytes and waits for the server to\n"
		"echo them (a receive is always pre-posted); every round trip is timed and the\n"
		"table shows their distribution per size; one-way latency is about p50/2.\n"
		"--op write-imm: the client RDMA-writes SIZE bytes with immediate data into\n"
		"the server's buffer (consuming a server receive) and the server answers with\n"
		"an RDMA Write with immediate data into the client's buffer.  --op write: no\n"
		"immediate data, no receive: each side polls the last byte of its buffer for\n"
		"the message's sequence tag, then writes back (sizes >= 1).  --op read: the\n"
		"client RDMA-reads SIZE bytes from the server's buffer and times the Read's\n"
		"completion, one-sided (the server does nothing); shown as the RTT.\n"
		"With --loopback ONE thread serves both VIs, alternating: post the ping on the\n"
		"client VI, receive and echo it on the server VI, receive the echo on the\n"
		"client VI.  That needs no second application core, which suits machines with\n"
		"few cores (viad's polling core still moves the data).  On an Unreliable VI a\n"
		"lost message ends the run after -t ms.",
	.sizes = pp_sizes,
	.nsizes = sizeof(pp_sizes) / sizeof(pp_sizes[0]),
	.iters = 10000,
	.warmup = 1000,
	.scale_bytes = 5e8,
};

/* Size of message seq in the schedule (0 past its end). */
static uint32_t
size_of(const struct vc_sched *s, uint64_t seq)
{
	uint32_t i;

	for (i = 0; i < s->nsizes; i++) {
		if (seq < (uint64_t)s->warmup[i] + s->iters[i])
			return s->size[i];
		seq -= (uint64_t)s->warmup[i] + s->iters[i];
	}
	return 0;
}

/*
 * --op write: message seq arrived in the target slot seq % 2; once checked,
 * clear the byte that will carry the tag of message seq + 2 in that slot
 * (of another size it could hold a stale byte equal to that tag).  The peer
 * writes seq + 2 only after this side answered seq + 1: no race.
 */
static void
untag(struct vc_ep *e, const struct vc_sched *s, uint64_t seq)
{
	uint32_t next = size_of(s, seq + PP_TSLOTS);

	if (next > 0)
		__atomic_store_n(vc_tslot(e, seq) + next - 1, 0, __ATOMIC_RELAXED);
}

/* Server half, before message seq: its answer's payload (RDMA ops) */
static void
pong_prep(struct vc_ep *b, uint32_t size, uint64_t seq, bool check)
{
	if (b->o->op == VC_OP_WRITE)
		vc_fill_tagged(vc_sbuf(b), size, seq, check);
	else if (b->o->op == VC_OP_WRITE_IMM && check)
		vc_fill(vc_sbuf(b), size, seq);
}

/*
 * Server half, critical path: receive the ping and answer it.  Send: echo
 * it from its receive buffer; write-imm: a receive completes, answer from
 * the send slot; write: poll the target slot's last byte, answer from the
 * send slot.  Returns the receive descriptor (NULL for write).
 */
static VIP_DESCRIPTOR *
pong_echo(struct vc_ep *b, uint32_t size, uint64_t seq)
{
	VIP_DESCRIPTOR *d = NULL;

	if (b->o->op == VC_OP_WRITE) {
		if (!vc_wait_byte(vc_tslot(b, seq) + size - 1, vc_tag(seq), b->o->timeout_ms))
			vc_die("server: RDMA Write %llu did not land within %lu ms (lost?)",
			       (unsigned long long)seq, b->o->timeout_ms);
		vc_post_op(b, vc_sbuf(b), size, seq, 0);
		return NULL;
	}
	d = vc_recv(b, b->o->timeout_ms);
	if (d == NULL)
		vc_die("server: message %llu did not arrive within %lu ms (lost?)",
		       (unsigned long long)seq, b->o->timeout_ms);
	if (b->o->op == VC_OP_WRITE_IMM) {
		vc_expect_imm(b, d, (uint32_t)seq);
		vc_post_op(b, vc_sbuf(b), size, seq, (uint32_t)seq);
	} else {
		vc_expect_len(b, d, size);
		vc_post_send(b, vc_data(d), size);
	}
	return d;
}

/* Server half, off the critical path: check, reap the answer, repost. */
static void
pong_done(struct vc_ep *b, const struct vc_sched *s, VIP_DESCRIPTOR *d, uint32_t size,
	  uint64_t seq)
{
	switch (b->o->op) {
	case VC_OP_WRITE:
		if (s->check)
			vc_verify_wait(b, vc_tslot(b, seq), size - 1, seq, b->o->timeout_ms);
		untag(b, s, seq);
		break;
	case VC_OP_WRITE_IMM:
		if (s->check)
			vc_verify(b, vc_tslot(b, seq), size, seq);
		break;
	default:
		if (s->check)
			vc_verify(b, vc_data(d), size, seq);
	}
	vc_send_reap(b, true);
	if (d != NULL)
		vc_post_recv(b, d);
}

/* --op read: the server's slot 0, read by every Read of size index i */
static void
read_prep(struct vc_ep *b, uint32_t size, uint32_t i, bool check)
{
	if (check)
		vc_fill(vc_tslot(b, 0), size, i);
}

static void
pp_server(struct vc_ep *b)
{
	VIP_ULONG phase_ms = b->o->rel == VIP_SERVICE_UNRELIABLE ? b->o->timeout_ms : VIP_INFINITE;
	struct vc_sched s;
	uint64_t seq = 0;
	uint32_t i, j;

	vc_recv_hello(b, &s);
	if (VC_OP_RDMA(b->o->op))
		vc_target_open(b, PP_TSLOTS, vc_max_size(&s));
	vc_send_hello_reply(b, 0);
	if (b->o->op != VC_OP_SEND && b->o->op != VC_OP_READ)
		vc_peer_check(b, vc_max_size(&s));
	for (i = 0; i < s.nsizes; i++) {
		if (b->o->op == VC_OP_READ) {
			/* one-sided: nothing to do until the client is through */
			read_prep(b, s.size[i], i, s.check);
			vc_send_tag(b, VC_READY_TAG, i);
			vc_recv_tag(b, VC_DONE_TAG, i, phase_ms, true, "end of the reads");
			seq += s.warmup[i] + s.iters[i];
			continue;
		}
		for (j = 0; j < s.warmup[i] + s.iters[i]; j++, seq++) {
			pong_prep(b, s.size[i], seq, s.check);
			pong_done(b, &s, pong_echo(b, s.size[i], seq), s.size[i], seq);
		}
	}
	fprintf(stderr, "vipl_pingpong: %s %llu messages in %u sizes\n",
		b->o->op == VC_OP_READ ? "served reads of" : "answered",
		(unsigned long long)seq, s.nsizes);
}

/*
 * --reg-each: the ping's own buffer (allocated once, never registered
 * before the first ping), registered for the message and deregistered once
 * it is sent, inside the timed round trip (issue 29).
 */
static uint8_t *reg_buf;

static VIP_MEM_HANDLE
reg_each_begin(struct vc_ep *a, uint32_t size)
{
	VIP_MEM_ATTRIBUTES ma = { .Ptag = a->nic->ptag };
	VIP_MEM_HANDLE mh = a->buf_mh;

	if (size > 0)
		VC_OK(VipRegisterMem, a->nic->h, reg_buf, size, &ma, &a->buf_mh);
	return mh;
}

static void
reg_each_end(struct vc_ep *a, uint32_t size, VIP_MEM_HANDLE mh)
{
	vc_send_reap(a, true);
	if (size > 0)
		VC_OK(VipDeregisterMem, a->nic->h, reg_buf, a->buf_mh);
	a->buf_mh = mh;
}

/* Client, one round trip of message seq; returns its ns. */
static uint64_t
ping(struct vc_ep *a, struct vc_ep *b, uint32_t i, uint64_t seq)
{
	const struct vc_opts *o = a->o;
	const struct vc_sched *s = &o->sched;
	uint32_t size = s->size[i];
	VIP_DESCRIPTOR *d = NULL, *echo = NULL;
	uint8_t *buf = o->reg_each ? reg_buf : vc_sbuf(a);
	VIP_MEM_HANDLE kept = 0;
	uint64_t t0, t1;

	switch (o->op) {
	case VC_OP_SEND:
	case VC_OP_WRITE_IMM:
		if (s->check)
			vc_fill(buf, size, seq);
		if (b != NULL)
			pong_prep(b, size, seq, s->check);
		t0 = vc_now_ns();
		if (o->reg_each)
			kept = reg_each_begin(a, size);
		vc_post_op(a, buf, size, seq, (uint32_t)seq);
		if (b != NULL)
			echo = pong_echo(b, size, seq);
		if (o->reg_each)
			reg_each_end(a, size, kept);
		d = vc_recv(a, o->timeout_ms);
		t1 = vc_now_ns();
		if (d == NULL)
			vc_die("client: no reply to message %llu within %lu ms (lost?)",
			       (unsigned long long)seq, o->timeout_ms);
		if (b != NULL)
			pong_done(b, s, echo, size, seq);
		if (o->op == VC_OP_SEND) {
			vc_expect_len(a, d, size);
			if (s->check)
				vc_verify(a, vc_data(d), size, seq);
		} else {
			vc_expect_imm(a, d, (uint32_t)seq);
			if (s->check)
				vc_verify(a, vc_tslot(a, seq), size, seq);
		}
		vc_post_recv(a, d);
		vc_send_reap(a, true);
		break;
	case VC_OP_WRITE:
		vc_fill_tagged(buf, size, seq, s->check);
		if (b != NULL)
			pong_prep(b, size, seq, s->check);
		t0 = vc_now_ns();
		vc_post_op(a, buf, size, seq, 0);
		if (b != NULL)
			pong_echo(b, size, seq);
		if (!vc_wait_byte(vc_tslot(a, seq) + size - 1, vc_tag(seq), o->timeout_ms))
			vc_die("client: no reply to RDMA Write %llu within %lu ms (lost?)",
			       (unsigned long long)seq, o->timeout_ms);
		t1 = vc_now_ns();
		if (b != NULL)
			pong_done(b, s, NULL, size, seq);
		if (s->check)
			vc_verify_wait(a, vc_tslot(a, seq), size - 1, seq, o->timeout_ms);
		untag(a, s, seq);
		vc_send_reap(a, true);
		break;
	case VC_OP_READ:
	default:
		if (s->check)
			memset(buf, 0xa5, size); /* a Read that moved nothing shows */
		t0 = vc_now_ns();
		vc_post_op(a, buf, size, 0, 0);
		vc_send_reap(a, true);
		t1 = vc_now_ns();
		if (s->check)
			vc_verify(a, buf, size, i);
		break;
	}
	return t1 - t0;
}

/* Client; with b (--loopback) this thread also plays the server on b. */
static void
pp_client(struct vc_ep *a, struct vc_ep *b)
{
	const struct vc_opts *o = a->o;
	const struct vc_sched *s = &o->sched;
	uint64_t seq = 0, t, *ns;
	uint32_t i, j, warm;
	struct vc_lat lat;

	vc_banner(a, VC_LAT_COLUMNS);
	if (o->reg_each && (reg_buf = malloc(vc_max_size(s) + 1)) == NULL)
		vc_die("out of memory");
	for (i = 0; i < s->nsizes; i++) {
		warm = s->warmup[i];
		ns = malloc(sizeof(*ns) * s->iters[i]);
		if (ns == NULL)
			vc_die("out of memory");
		if (o->op == VC_OP_READ) {
			if (b != NULL)
				read_prep(b, s->size[i], i, s->check);
			else
				vc_recv_tag(a, VC_READY_TAG, i, o->timeout_ms, false,
					    "server's go for the reads");
		}
		for (j = 0; j < warm + s->iters[i]; j++, seq++) {
			t = ping(a, b, i, seq);
			if (j >= warm)
				ns[j - warm] = t;
		}
		if (o->op == VC_OP_READ && b == NULL)
			vc_send_tag(a, VC_DONE_TAG, i);
		vc_lat_stats(ns, s->iters[i], &lat);
		vc_lat_row(o, s->size[i], s->iters[i], &lat);
		free(ns);
	}
	free(reg_buf);
}

int
main(int argc, char **argv)
{
	struct vc_opts o;
	struct vc_nic nic;
	struct vc_ep a, b;
	uint32_t slot;
	uint8_t peer[6];

	vc_parse(&o, &pp_app, argc, argv);
	vc_nic_open(&nic, &o);
	if (o.role == VC_SERVER) {
		/* sizes come with the client's hello: buffers of MaxTransferSize */
		slot = (uint32_t)(nic.attr.MaxTransferSize < UINT32_MAX ? nic.attr.MaxTransferSize
									: UINT32_MAX);
		/* its send slots carry the RDMA ops' answers */
		vc_ep_open(&b, &nic, "server", 2, slot, vc_recv_depth(&nic, PP_DEPTH, slot), slot);
		vc_accept(&b);
		pp_server(&b);
		vc_ep_close(&b);
	} else {
		slot = vc_max_size(&o.sched);
		slot = slot > VC_CTL_BYTES ? slot : VC_CTL_BYTES;
		if (o.role == VC_CLIENT)
			vc_resolve(&nic, o.peer, peer);
		vc_ep_open(&a, &nic, "client", 2, slot, PP_DEPTH, slot);
		/* the server's writes land in the client's target region */
		if (o.op == VC_OP_WRITE || o.op == VC_OP_WRITE_IMM)
			vc_target_open(&a, PP_TSLOTS, vc_max_size(&o.sched));
		if (o.role == VC_LOOPBACK) {
			vc_ep_open(&b, &nic, "server", 2, slot, PP_DEPTH, slot);
			if (VC_OP_RDMA(o.op))
				vc_target_open(&b, PP_TSLOTS, vc_max_size(&o.sched));
			vc_peer_of(&a, &b);
			vc_peer_of(&b, &a);
			vc_connect_pair(&b, &a);
		} else {
			vc_connect(&a, peer);
			vc_send_hello(&a, &o.sched);
			vc_recv_hello_reply(&a);
		}
		if (VC_OP_RDMA(o.op))
			vc_peer_check(&a, vc_max_size(&o.sched));
		pp_client(&a, o.role == VC_LOOPBACK ? &b : NULL);
		vc_ep_close(&a);
		if (o.role == VC_LOOPBACK)
			vc_ep_close(&b);
	}
	vc_nic_close(&nic);
	return 0;
}
