/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vipl_bw: bandwidth and message rate over a VIA connection, per message
 * size, with the standard VIPL API.  The client streams messages with a
 * window of outstanding sends; the server counts what arrives and reports
 * the count after each size.  On the reliable levels (or with --credits)
 * credit-based flow control (vipl_common.h) keeps the server's receive queue
 * from running empty, which would break the connection (VIA §2.5.2).
 * See -h.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "vipl_common.h"

#define BW_DRAIN_MS 1000 /* receiver idle time that ends a size */
#define BW_REPORT_WORDS 5 /* magic, phase, messages received, receive-queue-empty drops,
			   * receives re-posted so far (credit count) */
#define BW_COLUMNS \
	"    size      sent      recv   lost%       MB/s    Gbit/s       msg/s"

static const uint32_t bw_sizes[] = { 64, 1024, 4096, 16384, 65536 };

static const struct vc_app bw_app = {
	.name = "vipl_bw",
	.test = "bw",
	.id = VC_TEST_BW,
	.disc = "vipl-bw",
	.about =
		"Bandwidth and message rate.  The client keeps --window sends outstanding;\n"
		"the server pre-posts R = 2*W receives (its own --window) and reposts each as\n"
		"it completes.  On rd and rr a message that finds the receive queue empty\n"
		"breaks the connection (VIA 2.5.2), so there (and with --credits) the client\n"
		"also needs a credit per message: the server announces R and returns credits\n"
		"in small messages every R/4 reposts.  After each size the server tells the\n"
		"client how many messages arrived, once it has them all or after 1 s without\n"
		"any: on an Unreliable VI messages may be dropped (e.g. when the server's\n"
		"receive queue runs empty), so the table shows sent, received and lost.\n"
		"MB/s (1e6 bytes/s), Gbit/s and msg/s count the received messages over the\n"
		"client's sending time (first post to last send completion).  With --loopback\n"
		"the server side runs in a second thread of this process (two threads: --wait\n"
		"poll then wants two free cores besides viad's).",
	.sizes = bw_sizes,
	.nsizes = sizeof(bw_sizes) / sizeof(bw_sizes[0]),
	.iters = 100000,
	.warmup = 1000,
	.scale_bytes = 1e9,
	.window = true,
};

/*
 * Send k messages of size bytes, window = the send descriptors, each with a
 * credit when flow control is on; ns taken.
 */
static uint64_t
bw_send(struct vc_ep *e, uint32_t size, uint32_t k, bool check)
{
	uint64_t base = e->sposted, t0 = vc_now_ns();
	uint8_t *buf;

	while (e->sdone - base < k) {
		while (e->sposted - base < k && e->sposted - e->sdone < e->nsend) {
			buf = vc_sbuf(e);
			if (check)
				vc_fill(buf, size, e->sposted - base);
			vc_credit_take(e);
			vc_post_send(e, buf, size);
		}
		vc_send_reap(e, true);
		while (vc_send_reap(e, false))
			;
	}
	return vc_now_ns() - t0;
}

/* Receive up to k messages; stop after BW_DRAIN_MS without one. */
static uint32_t
bw_recv(struct vc_ep *e, uint32_t size, uint32_t k, bool check)
{
	VIP_DESCRIPTOR *d;
	uint32_t count = 0;
	uint64_t seq;

	while (count < k) {
		d = vc_recv(e, count > 0 ? BW_DRAIN_MS : e->o->timeout_ms);
		if (d == NULL) {
			if (count == 0)
				vc_die("server: no message of %u bytes within %lu ms", size,
				       e->o->timeout_ms);
			break;
		}
		vc_expect_len(e, d, size);
		if (check && size >= 8) { /* order is not guaranteed: seq from the data */
			seq = vc_seq_of(vc_data(d), size);
			if (seq >= k)
				vc_die("server: message number %llu out of range (%u sent)",
				       (unsigned long long)seq, k);
			vc_verify(e, vc_data(d), size, seq);
		}
		count++;
		vc_post_recv(e, d);
		vc_credit_return(e);
	}
	return count;
}

/* Per size: a warm-up phase, then the measured one; each ends with a report. */
static void
bw_server(struct vc_ep *e)
{
	uint32_t rep[BW_REPORT_WORDS] = { VC_MAGIC }, i, ph, k;
	unsigned long drops;
	uint64_t total = 0;
	struct vc_sched s;
	uint32_t credits;

	vc_recv_hello(e, &s);
	/* all receives are posted again: the client may fill them all */
	credits = (s.credits || e->o->credits) ? e->nrecv : 0;
	vc_send_hello_reply(e, credits);
	vc_credit_start(e, credits);
	for (i = 0; i < s.nsizes; i++)
		for (ph = 0; ph < 2; ph++) {
			k = ph ? s.iters[i] : s.warmup[i];
			if (k == 0)
				continue;
			drops = atomic_load(&e->nic->rq_drops);
			rep[1] = 2 * i + ph;
			rep[2] = bw_recv(e, s.size[i], k, s.check);
			rep[3] = (uint32_t)(atomic_load(&e->nic->rq_drops) - drops);
			rep[4] = e->cr.reposted;
			total += rep[2];
			vc_send_ctl(e, rep, BW_REPORT_WORDS);
		}
	if (e->o->role == VC_SERVER)
		fprintf(stderr, "vipl_bw: received %llu messages in %u sizes\n",
			(unsigned long long)total, s.nsizes);
}

static void
bw_row(const struct vc_ep *e, uint32_t size, uint32_t sent, const uint32_t *rep, uint64_t ns,
       uint64_t waits)
{
	const struct vc_opts *o = e->o;
	double sec = (double)ns / 1e9, bytes = (double)rep[2] * size;
	double lost = 100.0 * (double)(sent - rep[2]) / sent;

	if (!o->json) {
		printf("%8u %9u %9u %7.3f %10.2f %9.3f %11.0f\n", size, sent, rep[2], lost,
		       bytes / sec / 1e6, bytes * 8 / sec / 1e9, rep[2] / sec);
		fflush(stdout);
		return;
	}
	printf("{\"test\":\"%s\",\"size\":%u,\"iters\":%u,\"sent\":%u,\"received\":%u,"
	       "\"lost_pct\":%.3f,\"recvq_empty_drops\":%u,\"window\":%u,\"credits\":%u,"
	       "\"credit_waits\":%llu,\"seconds\":%.6f,\"MBps\":%.3f,\"Gbps\":%.4f,"
	       "\"msg_per_s\":%.1f,",
	       o->app->test, size, sent, sent, rep[2], lost, rep[3], o->window, e->cr.limit,
	       (unsigned long long)waits, sec, bytes / sec / 1e6, bytes * 8 / sec / 1e9,
	       rep[2] / sec);
	vc_json_common(o);
}

static void
bw_client(struct vc_ep *e)
{
	const struct vc_opts *o = e->o;
	const struct vc_sched *s = &o->sched;
	uint32_t rep[BW_REPORT_WORDS], i, ph, k;
	uint64_t ns, waits;

	vc_send_hello(e, s);
	vc_credit_start(e, vc_recv_hello_reply(e));
	vc_banner(e, BW_COLUMNS);
	for (i = 0; i < s->nsizes; i++)
		for (ph = 0; ph < 2; ph++) {
			k = ph ? s->iters[i] : s->warmup[i];
			if (k == 0)
				continue;
			waits = e->cr.waits;
			ns = bw_send(e, s->size[i], k, s->check);
			vc_recv_ctl(e, rep, BW_REPORT_WORDS, BW_DRAIN_MS + o->timeout_ms,
				    "message count from the server");
			if (rep[1] != 2 * i + ph || rep[2] > k)
				vc_die("client: bad report from the server (phase %u, %u messages)",
				       rep[1], rep[2]);
			vc_credit_sync(e, rep[4]);
			if (ph)
				bw_row(e, s->size[i], k, rep, ns, e->cr.waits - waits);
		}
	if (e->cr.writeoffs > 0)
		fprintf(stderr, "vipl_bw: %llu time(s) no credit came back within %u ms: the "
			"outstanding messages were deemed lost\n",
			(unsigned long long)e->cr.writeoffs, VC_CREDIT_STALL_MS);
}

static void *
server_thread(void *arg)
{
	vc_accept(arg);
	bw_server(arg);
	return NULL;
}

int
main(int argc, char **argv)
{
	struct vc_opts o;
	struct vc_nic nic;
	struct vc_ep cli, srv;
	uint32_t slot;
	uint8_t peer[6];
	pthread_t t;
	int rc;

	memset(&t, 0, sizeof(t));
	vc_parse(&o, &bw_app, argc, argv);
	vc_nic_open(&nic, &o);
	if (o.role != VC_CLIENT) {
		/* the remote server learns the sizes later: MaxTransferSize buffers */
		slot = o.role == VC_LOOPBACK ? vc_max_size(&o.sched)
		       : nic.attr.MaxTransferSize < UINT32_MAX ? (uint32_t)nic.attr.MaxTransferSize
							       : UINT32_MAX;
		slot = slot > VC_CTL_BYTES ? slot : VC_CTL_BYTES;
		vc_ep_open(&srv, &nic, "server", VC_CTL_SENDS, VC_CTL_BYTES,
			   vc_recv_depth(&nic, 2 * o.window, slot), slot);
	}
	if (o.role == VC_SERVER) {
		server_thread(&srv);
	} else {
		if (o.role == VC_CLIENT)
			vc_resolve(&nic, o.peer, peer);
		else if (!nic.attr.ThreadSafe)
			vc_die("--loopback needs a thread-safe provider");
		else if ((rc = pthread_create(&t, NULL, server_thread, &srv)) != 0)
			vc_die("pthread_create: %s", strerror(rc));
		slot = vc_max_size(&o.sched);
		vc_ep_open(&cli, &nic, "client", o.window, slot > VC_CTL_BYTES ? slot : VC_CTL_BYTES,
			   VC_CTL_RECVS, VC_CTL_BYTES);
		vc_connect(&cli, o.role == VC_CLIENT ? peer : nic.mac);
		bw_client(&cli);
		if (o.role == VC_LOOPBACK)
			pthread_join(t, NULL);
		vc_ep_close(&cli);
	}
	if (o.role != VC_CLIENT)
		vc_ep_close(&srv);
	vc_nic_close(&nic);
	return 0;
}
