/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vipl_pingpong: round-trip latency over a VIA connection, per message
 * size, with the standard VIPL API.  The client sends a message, the server
 * echoes it, the client records the round trip.  See -h.
 */
#include <stdio.h>
#include <stdlib.h>

#include "vipl_common.h"

#define PP_DEPTH 4 /* receive descriptors per VI; one message is in flight */

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

/* Server half, critical path: receive the ping and echo it from its buffer. */
static VIP_DESCRIPTOR *
pong_echo(struct vc_ep *b, uint32_t size, uint64_t seq)
{
	VIP_DESCRIPTOR *d = vc_recv(b, b->o->timeout_ms);

	if (d == NULL)
		vc_die("server: message %llu did not arrive within %lu ms (lost?)",
		       (unsigned long long)seq, b->o->timeout_ms);
	vc_expect_len(b, d, size);
	vc_post_send(b, vc_data(d), size);
	return d;
}

/* Server half, off the critical path: check, reap the echo, repost. */
static void
pong_done(struct vc_ep *b, VIP_DESCRIPTOR *d, uint32_t size, uint64_t seq, bool check)
{
	if (check)
		vc_verify(b, vc_data(d), size, seq);
	vc_send_reap(b, true);
	vc_post_recv(b, d);
}

static void
pp_server(struct vc_ep *b)
{
	struct vc_sched s;
	uint64_t seq = 0;
	uint32_t i, j;

	vc_recv_hello(b, &s);
	for (i = 0; i < s.nsizes; i++)
		for (j = 0; j < s.warmup[i] + s.iters[i]; j++, seq++)
			pong_done(b, pong_echo(b, s.size[i], seq), s.size[i], seq, s.check);
	fprintf(stderr, "vipl_pingpong: echoed %llu messages in %u sizes\n",
		(unsigned long long)seq, s.nsizes);
}

/* Client; with b (--loopback) this thread also plays the server on b. */
static void
pp_client(struct vc_ep *a, struct vc_ep *b)
{
	const struct vc_opts *o = a->o;
	const struct vc_sched *s = &o->sched;
	VIP_DESCRIPTOR *d, *echo = NULL;
	uint64_t seq = 0, t0, t1, *ns;
	uint32_t i, j, size, warm;
	struct vc_lat lat;
	uint8_t *buf;

	vc_banner(a, VC_LAT_COLUMNS);
	for (i = 0; i < s->nsizes; i++) {
		size = s->size[i];
		warm = s->warmup[i];
		ns = malloc(sizeof(*ns) * s->iters[i]);
		if (ns == NULL)
			vc_die("out of memory");
		for (j = 0; j < warm + s->iters[i]; j++, seq++) {
			buf = vc_sbuf(a);
			if (s->check)
				vc_fill(buf, size, seq);
			t0 = vc_now_ns();
			vc_post_send(a, buf, size);
			if (b != NULL)
				echo = pong_echo(b, size, seq);
			d = vc_recv(a, o->timeout_ms);
			t1 = vc_now_ns();
			if (d == NULL)
				vc_die("client: no reply to message %llu within %lu ms (lost?)",
				       (unsigned long long)seq, o->timeout_ms);
			if (j >= warm)
				ns[j - warm] = t1 - t0;
			if (b != NULL)
				pong_done(b, echo, size, seq, s->check);
			vc_expect_len(a, d, size);
			if (s->check)
				vc_verify(a, vc_data(d), size, seq);
			vc_post_recv(a, d);
			vc_send_reap(a, true);
		}
		vc_lat_stats(ns, s->iters[i], &lat);
		vc_lat_row(o, size, s->iters[i], &lat);
		free(ns);
	}
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
		vc_ep_open(&b, &nic, "server", 2, 0, vc_recv_depth(&nic, PP_DEPTH, slot), slot);
		vc_accept(&b);
		pp_server(&b);
		vc_ep_close(&b);
	} else {
		slot = vc_max_size(&o.sched);
		slot = slot > VC_CTL_BYTES ? slot : VC_CTL_BYTES;
		if (o.role == VC_CLIENT)
			vc_resolve(&nic, o.peer, peer);
		vc_ep_open(&a, &nic, "client", 2, slot, PP_DEPTH, slot);
		if (o.role == VC_LOOPBACK) {
			vc_ep_open(&b, &nic, "server", 2, 0, PP_DEPTH, slot);
			vc_connect_pair(&b, &a);
		} else {
			vc_connect(&a, peer);
			vc_send_hello(&a, &o.sched);
		}
		pp_client(&a, o.role == VC_LOOPBACK ? &b : NULL);
		vc_ep_close(&a);
		if (o.role == VC_LOOPBACK)
			vc_ep_close(&b);
	}
	vc_nic_close(&nic);
	return 0;
}
