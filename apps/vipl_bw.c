/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * vipl_bw: bandwidth and message rate over a VIA connection, per message
 * size, with the standard VIPL API.  The client streams messages with a
 * window of outstanding sends; the server counts what arrives and reports
 * the count after each size.  On the reliable levels (or with --credits)
 * credit-based flow control (vipl_common.h) keeps the server's receive queue
 * from running empty, which would break the connection (VIA §2.5.2).
 * --op write / write-imm / read stream RDMA operations into or out of the
 * server's target region instead.  See -h.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vipl_common.h"

#define BW_DRAIN_MS 1000 /* receiver idle time that ends a size */
#define BW_REPORT_WORDS 6 /* magic, phase, messages received, receive-queue-empty drops,
			   * receives re-posted so far (credit count), write-imm
			   * payloads found overwritten (Unreliable) */
#define BW_COLUMNS \
	"    size      sent      recv   lost%       MB/s    Gbit/s       msg/s"
#define BW_RDMA_COLUMNS \
	"    size      sent      done   lost%       MB/s    Gbit/s       ops/s"
#define BW_TARGET_MEM (256u << 20) /* cap on the server's RDMA target region */

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
		"any (-t on rd and rr): on an Unreliable VI messages may be dropped (e.g.\n"
		"when the server's receive queue runs empty), so the table shows sent,\n"
		"received and lost.\n"
		"MB/s (1e6 bytes/s), Gbit/s and msg/s count the received messages over the\n"
		"client's sending time (first post to last send completion).  With --loopback\n"
		"the server side runs in a second thread of this process (two threads: --wait\n"
		"poll then wants two free cores besides viad's).\n"
		"--op write / read: the client keeps --window RDMA Writes (Reads) outstanding\n"
		"into (from) the server's target region, one slot per outstanding operation;\n"
		"the server only says when it is ready and, after each size's final Send of\n"
		"the client, checks the slots (write) and reports.  MB/s and ops/s count the\n"
		"operations over the client's time (first post to last completion).\n"
		"--op write-imm: RDMA Writes with immediate data, each consuming a server\n"
		"receive like a Send, its data in a slot per credit; credit flow control is\n"
		"always on for it (Unreliable: a slot reused early after credits were\n"
		"written off is counted as overwritten, not a payload error).",
	.sizes = bw_sizes,
	.nsizes = sizeof(bw_sizes) / sizeof(bw_sizes[0]),
	.iters = 100000,
	.warmup = 1000,
	.scale_bytes = 1e9,
	.window = true,
};

/* --op read: the Read that completed send descriptor idx got slot seq's data */
static void
read_check(struct vc_ep *e, uint64_t idx, uint64_t base, uint32_t size)
{
	vc_verify(e, e->sbuf + (size_t)(idx % e->nsend) * e->sslot, size,
		  (idx - base) % e->peer.slots);
}

/*
 * Post k operations of size bytes (--op), window = the send descriptors,
 * each with a credit when flow control is on (send, write-imm); operation
 * seq (from 0) uses the server's target slot seq % slots; ns taken.
 */
static uint64_t
bw_send(struct vc_ep *e, uint32_t size, uint32_t k, bool check)
{
	uint64_t base = e->sposted, t0 = vc_now_ns(), seq, idx;
	enum vc_op op = e->o->op;
	uint8_t *buf;

	while (e->sdone - base < k) {
		while (e->sposted - base < k && e->sposted - e->sdone < e->nsend) {
			buf = vc_sbuf(e);
			seq = e->sposted - base;
			if (op == VC_OP_READ) {
				if (check)
					memset(buf, 0xa5, size); /* a Read that moved nothing shows */
			} else if (check) {
				vc_fill(buf, size, seq);
			}
			if (op == VC_OP_SEND || op == VC_OP_WRITE_IMM)
				vc_credit_take(e);
			vc_post_op(e, buf, size, seq, (uint32_t)seq);
		}
		idx = e->sdone;
		if (vc_send_reap(e, true) && op == VC_OP_READ && check)
			read_check(e, idx, base, size);
		while ((idx = e->sdone, vc_send_reap(e, false)))
			if (op == VC_OP_READ && check)
				read_check(e, idx, base, size);
	}
	return vc_now_ns() - t0;
}

/*
 * With the check on and a reliable level: message seq must not arrive twice
 * (Unreliable: numbers are not tracked).
 */
static void
once(const struct vc_ep *e, uint8_t *seen, uint64_t seq, const char *what)
{
	if (seen == NULL)
		return;
	if (seen[seq / 8] & (1u << (seq % 8)))
		vc_die("%s: %s number %llu arrived twice", e->role, what, (unsigned long long)seq);
	seen[seq / 8] |= (uint8_t)(1u << (seq % 8));
}

/* Check received message @p d of a phase of k (send, write-imm), with the check on. */
static void
bw_received(struct vc_ep *e, const VIP_DESCRIPTOR *d, uint32_t size, uint32_t k, bool check,
	    uint8_t *seen, uint32_t *overwritten)
{
	uint64_t seq;

	if (e->o->op == VC_OP_WRITE_IMM) {
		/* the immediate data numbers the write; its data is in the slot */
		vc_expect_imm(e, d, d->CS.ImmediateData);
		seq = d->CS.ImmediateData;
		if (check && seq >= k)
			vc_die("server: RDMA Write number %llu out of range (%u sent)",
			       (unsigned long long)seq, k);
		if (check && e->o->rel == VIP_SERVICE_UNRELIABLE) {
			/* after credits written off (lost messages), the
			 * client may reuse a slot before it was checked */
			if (!vc_matches(vc_tslot(e, seq), size, seq))
				(*overwritten)++;
		} else if (check) {
			once(e, seen, seq, "RDMA Write");
			vc_verify(e, vc_tslot(e, seq), size, seq);
		}
		return;
	}
	vc_expect_len(e, d, size);
	if (e->o->op == VC_OP_SEND && check && size >= 8) {
		/* order is not guaranteed: seq from the data */
		seq = vc_seq_of(vc_data(d), size);
		if (seq >= k)
			vc_die("server: message number %llu out of range (%u sent)",
			       (unsigned long long)seq, k);
		once(e, seen, seq, "message");
		vc_verify(e, vc_data(d), size, seq);
	}
}

/* A bitmap of k message numbers when a reliable level promises each once, else NULL. */
static uint8_t *
bw_seen_map(const struct vc_ep *e, uint32_t k, bool check)
{
	uint8_t *seen = NULL;

	if (check && e->o->rel != VIP_SERVICE_UNRELIABLE &&
	    (seen = calloc((size_t)k / 8 + 1, 1)) == NULL)
		vc_die("out of memory");
	return seen;
}

/*
 * Receive up to k messages; stop after BW_DRAIN_MS without one (Unreliable:
 * the rest was lost), on a reliable level after -t (nothing is lost there
 * without breaking the connection, but retransmissions may pause it).
 */
static uint32_t
bw_recv(struct vc_ep *e, uint32_t size, uint32_t k, bool check, uint32_t *overwritten)
{
	VIP_ULONG drain = e->o->rel == VIP_SERVICE_UNRELIABLE ? BW_DRAIN_MS : e->o->timeout_ms;
	uint8_t *seen = bw_seen_map(e, k, check);
	VIP_DESCRIPTOR *d;
	uint32_t count = 0;

	while (count < k) {
		d = vc_recv(e, count > 0 ? drain : e->o->timeout_ms);
		if (d == NULL) {
			if (count == 0)
				vc_die("server: no message of %u bytes within %lu ms", size,
				       e->o->timeout_ms);
			break;
		}
		bw_received(e, d, size, k, check, seen, overwritten);
		count++;
		vc_post_recv(e, d);
		vc_credit_return(e);
	}
	free(seen);
	return count;
}

/*
 * --op write / read, server side of one phase of k operations: the Reads'
 * data goes into the slots first; say "ready", wait for the client's "done"
 * (a Send behind its last operation: on every level it lands after them),
 * then check what the Writes left: slot j holds the last write numbered j
 * modulo the slot count.  Returns k.
 */
static uint32_t
bw_one_sided(struct vc_ep *e, uint32_t size, uint32_t k, uint32_t phase, bool check)
{
	/* a reliable connection that breaks ends the wait; Unreliable: -t */
	VIP_ULONG ms = e->o->rel == VIP_SERVICE_UNRELIABLE ? e->o->timeout_ms : VIP_INFINITE;
	uint32_t j, n = k < e->tslots ? k : e->tslots;

	if (e->o->op == VC_OP_READ && check)
		for (j = 0; j < n; j++)
			vc_fill(vc_tslot(e, j), size, j);
	vc_send_tag(e, VC_READY_TAG, phase);
	vc_recv_tag(e, VC_DONE_TAG, phase, ms, true, "end of the client's RDMA operations");
	if (e->o->op == VC_OP_WRITE && check)
		for (j = 0; j < n; j++)
			vc_verify(e, vc_tslot(e, j), size, j + (k - 1 - j) / e->tslots * e->tslots);
	return k;
}

/* Per size: a warm-up phase, then the measured one; each ends with a report. */
static void
bw_server(struct vc_ep *e)
{
	uint32_t rep[BW_REPORT_WORDS] = { VC_MAGIC }, i, ph, k, slots, max;
	enum vc_op op;
	unsigned long drops;
	uint64_t total = 0;
	struct vc_sched s;
	uint32_t credits;

	vc_recv_hello(e, &s);
	op = e->o->op;
	if (VC_OP_RDMA(op)) {
		/* a slot per outstanding operation; per credit for write-imm,
		 * whose slots are checked before the credit returns */
		max = vc_max_size(&s);
		slots = s.window;
		if (op == VC_OP_WRITE_IMM && slots < e->nrecv)
			slots = e->nrecv;
		if ((uint64_t)slots * (max ? max : 1) > BW_TARGET_MEM)
			slots = BW_TARGET_MEM / (max ? max : 1);
		vc_target_open(e, slots, max);
	}
	/* all receives are posted again: the client may fill them all */
	credits = (op == VC_OP_SEND || op == VC_OP_WRITE_IMM) && (s.credits || e->o->credits)
			  ? e->nrecv
			  : 0;
	if (op == VC_OP_WRITE_IMM && credits > e->tslots)
		credits = e->tslots;
	vc_send_hello_reply(e, credits);
	vc_credit_start(e, credits);
	for (i = 0; i < s.nsizes; i++)
		for (ph = 0; ph < 2; ph++) {
			k = ph ? s.iters[i] : s.warmup[i];
			if (k == 0)
				continue;
			drops = atomic_load(&e->nic->rq_drops);
			rep[1] = 2 * i + ph;
			rep[5] = 0;
			rep[2] = op == VC_OP_WRITE || op == VC_OP_READ
					 ? bw_one_sided(e, s.size[i], k, rep[1], s.check)
					 : bw_recv(e, s.size[i], k, s.check, &rep[5]);
			rep[3] = (uint32_t)(atomic_load(&e->nic->rq_drops) - drops);
			rep[4] = e->cr.reposted;
			total += rep[2];
			vc_send_ctl(e, rep, BW_REPORT_WORDS);
		}
	if (e->o->role == VC_SERVER)
		fprintf(stderr, "vipl_bw: %s %llu %s in %u sizes\n",
			op == VC_OP_SEND ? "received" : "served", (unsigned long long)total,
			op == VC_OP_SEND ? "messages" : "RDMA operations", s.nsizes);
}

static void
bw_row(const struct vc_ep *e, uint32_t size, uint32_t sent, const uint32_t *rep, uint64_t ns,
       uint64_t waits)
{
	const struct vc_opts *o = e->o;
	double sec = (double)ns / 1e9, bytes = (double)rep[2] * size;
	double lost = 100.0 * (double)(sent - rep[2]) / sent;

	vc_progress(o, size, "%u sent, %u received, %.2f MB/s, %.0f msg/s", sent, rep[2],
		    bytes / sec / 1e6, rep[2] / sec);
	if (!o->json) {
		printf("%8u %9u %9u %7.3f %10.2f %9.3f %11.0f\n", size, sent, rep[2], lost,
		       bytes / sec / 1e6, bytes * 8 / sec / 1e9, rep[2] / sec);
		fflush(stdout);
		return;
	}
	printf("{\"test\":\"%s\",\"size\":%u,\"iters\":%u,\"sent\":%u,\"received\":%u,"
	       "\"lost_pct\":%.3f,\"recvq_empty_drops\":%u,\"window\":%u,\"credits\":%u,"
	       "\"credit_waits\":%llu,\"seconds\":%.6f,\"MBps\":%.3f,\"Gbps\":%.4f,"
	       "\"msg_per_s\":%.1f,\"ops_per_s\":%.1f,\"overwritten\":%u,",
	       o->app->test, size, sent, sent, rep[2], lost, rep[3], o->window, e->cr.limit,
	       (unsigned long long)waits, sec, bytes / sec / 1e6, bytes * 8 / sec / 1e9,
	       rep[2] / sec, rep[2] / sec, rep[5]);
	vc_json_common(o);
}

static void
bw_client(struct vc_ep *e)
{
	const struct vc_opts *o = e->o;
	const struct vc_sched *s = &o->sched;
	bool one_sided = o->op == VC_OP_WRITE || o->op == VC_OP_READ;
	uint32_t rep[BW_REPORT_WORDS], i, ph, k;
	uint64_t ns, waits, overwritten = 0;

	vc_send_hello(e, s);
	vc_credit_start(e, vc_recv_hello_reply(e));
	if (VC_OP_RDMA(o->op))
		vc_peer_check(e, vc_max_size(s));
	vc_banner(e, one_sided ? BW_RDMA_COLUMNS : BW_COLUMNS);
	for (i = 0; i < s->nsizes; i++)
		for (ph = 0; ph < 2; ph++) {
			k = ph ? s->iters[i] : s->warmup[i];
			if (k == 0)
				continue;
			waits = e->cr.waits;
			if (one_sided)
				vc_recv_tag(e, VC_READY_TAG, 2 * i + ph, o->timeout_ms, false,
					    "server's go for the RDMA operations");
			ns = bw_send(e, s->size[i], k, s->check);
			if (one_sided)
				vc_send_tag(e, VC_DONE_TAG, 2 * i + ph);
			vc_recv_ctl(e, rep, BW_REPORT_WORDS, BW_DRAIN_MS + o->timeout_ms,
				    "message count from the server");
			if (rep[1] != 2 * i + ph || rep[2] > k)
				vc_die("client: bad report from the server (phase %u, %u messages)",
				       rep[1], rep[2]);
			vc_credit_sync(e, rep[4]);
			overwritten += rep[5];
			if (ph)
				bw_row(e, s->size[i], k, rep, ns, e->cr.waits - waits);
		}
	if (overwritten > 0)
		fprintf(stderr, "vipl_bw: %llu RDMA Write(s) with immediate data found their slot "
			"overwritten by a later one (Unreliable: after credits were written off "
			"the client reused slots early)\n", (unsigned long long)overwritten);
	if (e->cr.writeoffs > 0)
		fprintf(stderr, "vipl_bw: %llu time(s) no credit came back within %u ms: the "
			"outstanding messages were deemed lost\n",
			(unsigned long long)e->cr.writeoffs, VC_CREDIT_STALL_MS);
}

/*
 * --one-thread: this thread drives both VIs, as vipl_pingpong --loopback
 * does. It posts the client's operations, reaps both sides and re-posts
 * the server's receives, so the message rate of one poll lcore needs two
 * CPUs (this thread and the poll lcore), not three. A message that
 * consumes a receive (send, write-imm) is posted only while a receive
 * waits for it: nothing is lost, and no credit message is needed.
 */
static void
bw_one_thread(struct vc_ep *cli, struct vc_ep *srv)
{
	const struct vc_opts *o = cli->o;
	const struct vc_sched *s = &o->sched;
	bool consumes = o->op == VC_OP_SEND || o->op == VC_OP_WRITE_IMM;
	uint32_t rep[BW_REPORT_WORDS] = { VC_MAGIC }, i, ph, k, size;
	uint64_t base, got, t0;
	uint8_t *seen, *buf;
	VIP_DESCRIPTOR *d;

	if (VC_OP_RDMA(o->op)) {
		vc_target_open(srv, o->window > srv->nrecv ? o->window : srv->nrecv,
			       vc_max_size(s));
		vc_peer_of(cli, srv);
	}
	vc_banner(cli, consumes ? BW_COLUMNS : BW_RDMA_COLUMNS);
	for (i = 0; i < s->nsizes; i++)
		for (ph = 0; ph < 2; ph++) {
			k = ph ? s->iters[i] : s->warmup[i];
			if (k == 0)
				continue;
			size = s->size[i];
			seen = consumes ? bw_seen_map(srv, k, s->check) : NULL;
			base = cli->sposted;
			got = 0;
			rep[5] = 0;
			t0 = vc_now_ns();
			while (cli->sdone - base < k || (consumes && got < k)) {
				while (cli->sposted - base < k && cli->sposted - cli->sdone < cli->nsend &&
				       (!consumes || cli->sposted - base - got < srv->nrecv)) {
					buf = vc_sbuf(cli);
					if (s->check && o->op != VC_OP_READ)
						vc_fill(buf, size, cli->sposted - base);
					vc_post_op(cli, buf, size, cli->sposted - base,
						   (uint32_t)(cli->sposted - base));
				}
				while (vc_send_reap(cli, false))
					;
				while (consumes && (d = vc_recv_wait(srv, 0, false)) != NULL) {
					bw_received(srv, d, size, k, s->check, seen, &rep[5]);
					got++;
					vc_post_recv(srv, d);
				}
			}
			free(seen);
			rep[2] = consumes ? (uint32_t)got : k;
			rep[3] = 0;
			if (ph)
				bw_row(cli, size, k, rep, vc_now_ns() - t0, 0);
		}
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
		else if (!o.one_thread && (rc = pthread_create(&t, NULL, server_thread, &srv)) != 0)
			vc_die("pthread_create: %s", strerror(rc));
		slot = vc_max_size(&o.sched);
		vc_ep_open(&cli, &nic, "client", o.window, slot > VC_CTL_BYTES ? slot : VC_CTL_BYTES,
			   VC_CTL_RECVS, VC_CTL_BYTES);
		if (o.one_thread) {
			vc_connect_pair(&srv, &cli);
			bw_one_thread(&cli, &srv);
		} else {
			vc_connect(&cli, o.role == VC_CLIENT ? peer : nic.mac);
			bw_client(&cli);
			if (o.role == VC_LOOPBACK)
				pthread_join(t, NULL);
		}
		vc_ep_close(&cli);
	}
	if (o.role != VC_CLIENT)
		vc_ep_close(&srv);
	vc_nic_close(&nic);
	return 0;
}
