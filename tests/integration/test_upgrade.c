/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * viad upgraded under running clients (issue 32; docs/design.md section 18).
 *
 * Two viads, A (memif server) and B (memif client), carry at once:
 *   rd    Reliable Delivery sends A -> B, received by a thread blocked in
 *         VipRecvWait, messages of 1 B to 8000 B (up to six frames: some
 *         are half received when the data path stops);
 *   rr    Reliable Reception sends B -> A, received by a thread blocked in
 *         VipCQWait;
 *   rdma  a Reliable Reception VI of A RDMA-writes a fresh pattern into B's
 *         memory and RDMA-reads it back;
 *   idle  a Reliable Delivery connection that carries nothing (its
 *         keepalive crosses the blackouts);
 *   wait  a VipConnectWait on B, issued before the first upgrade and
 *         answered by a VipConnectRequest of A after the third.
 * Each message carries its number and a pattern of it: the receiver takes
 * every message exactly once, in order, intact. Credits keep every sender
 * within the receives posted (VIA breaks a reliable connection on a
 * message that finds none).
 *
 * Then `viactl upgrade` hands viad over to its own binary ten times, A and
 * B in turn (A as memif server: B's port finds the new server by itself),
 * once more by SIGUSR2, and once to viad_image_next, whose image version
 * moved on: it must refuse the image and hand it back, and the old viad
 * resumes (`viactl upgrade` says "rolled back"). After each, every stream
 * must move again. At the end: no connection broke (no CONN_LOST, every
 * VI Connected), no completion failed, every message was taken once and
 * intact, and viad shuts down cleanly. The blackouts are printed as
 * figures (RESULT lines): viad's own (data path stopped to restarted) and
 * the clients' (the longest pause between two completions of a stream
 * around each upgrade), p50 and max; docs/performance.md has them.
 *
 * Usage: it_upgrade PATH/TO/viad PATH/TO/viactl PATH/TO/viad_image_next
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

#define UPGRADES 10
#define DEPTH 32               /* receives posted per stream */
#define MSG_MAX 8000
#define STALL_MS 20000         /* a stream that waits this long is broken */
#define RESUME_MS 15000        /* every stream moves again within this after an upgrade */
#define RESUME_MSGS 20         /* ... by this many completions */

static const char *viactl_path, *next_path;

/* One client: a NIC of one viad, a tag, provider memory. */
struct client {
	VIP_NIC_HANDLE nic;
	VIP_PROTECTION_HANDLE pt;
	struct h_mem m;
};

/* A stream of messages or RDMA round trips between two VIs. */
struct stream {
	const char *name;
	bool rdma;
	bool via_cq;               /* the receiver waits in VipCQWait, else VipRecvWait */
	struct client *sc, *rc;    /* sender's and receiver's clients */
	VIP_VI_HANDLE s, r;
	VIP_CQ_HANDLE cq;
	pthread_t st, rt;
	/* credits: receives posted less messages sent and not yet taken */
	int credits;
	uint64_t sent, received;
	uint64_t errors;           /* completions in error, or data not as sent */
	char error[160];           /* the first one */
	bool stop;
	bool done;                 /* the sender is finished */
	uint64_t last_ns;          /* the last completion */
	uint64_t gap_ns;           /* the longest pause since it was last read */
	VIP_DESCRIPTOR *rdesc[DEPTH], *sdesc[DEPTH];
	uint8_t *rbuf[DEPTH], *sbuf[DEPTH];
	/* rdma: B's region it writes and reads */
	uint8_t *target;
	VIP_MEM_HANDLE target_mh;
};

static void
fail(struct stream *x, const char *fmt, ...)
{
	va_list ap;

	if (__atomic_fetch_add(&x->errors, 1, __ATOMIC_RELAXED) == 0) {
		va_start(ap, fmt);
		vsnprintf(x->error, sizeof(x->error), fmt, ap);
		va_end(ap);
	}
	__atomic_store_n(&x->stop, true, __ATOMIC_RELEASE);
}

/* A completion came: the pause since the last one counts. */
static void
progress(struct stream *x)
{
	uint64_t now = h_now_ns(), last = __atomic_exchange_n(&x->last_ns, now, __ATOMIC_RELAXED);

	if (last != 0 && now - last > __atomic_load_n(&x->gap_ns, __ATOMIC_RELAXED))
		__atomic_store_n(&x->gap_ns, now - last, __ATOMIC_RELAXED);
}

/* Message @p seq's length and bytes: its number first, then a pattern of it. */
static uint32_t
msg_len(uint64_t seq)
{
	static const uint32_t lens[] = { 8, 100, 1452, 1453, 4000, MSG_MAX, 64, 2905 };

	return lens[seq % (sizeof(lens) / sizeof(lens[0]))];
}

static void
msg_fill(uint8_t *b, uint64_t seq, uint32_t len)
{
	uint32_t i;

	memcpy(b, &seq, sizeof(seq));
	for (i = sizeof(seq); i < len; i++)
		b[i] = (uint8_t)(seq * 31 + i);
}

static bool
msg_ok(const uint8_t *b, uint64_t seq, uint32_t len)
{
	uint64_t got;
	uint32_t i;

	memcpy(&got, b, sizeof(got));
	if (got != seq)
		return false;
	for (i = sizeof(seq); i < len; i++) {
		if (b[i] != (uint8_t)(seq * 31 + i))
			return false;
	}
	return true;
}

static bool
desc_ok(struct stream *x, const VIP_DESCRIPTOR *d, const char *what)
{
	if ((d->CS.Status & (VIP_STATUS_DONE | VIP_STATUS_ERROR_MASK)) == VIP_STATUS_DONE)
		return true;
	fail(x, "%s: a %s completed with Status %#x", x->name, what, d->CS.Status);
	return false;
}

/* ---- send / receive streams ------------------------------------------------------- */

static void *
sender(void *arg)
{
	struct stream *x = arg;
	uint64_t seq, done = 0;
	VIP_DESCRIPTOR *d;

	for (seq = 0; !__atomic_load_n(&x->stop, __ATOMIC_ACQUIRE); seq++) {
		unsigned k = seq % DEPTH;
		uint64_t until = h_now_ms() + STALL_MS;
		uint32_t len = msg_len(seq);

		/* the receiver has a receive posted for it */
		while (__atomic_load_n(&x->credits, __ATOMIC_ACQUIRE) == 0 &&
		       !__atomic_load_n(&x->stop, __ATOMIC_ACQUIRE)) {
			if (h_now_ms() > until) {
				fail(x, "%s: no credit for %u ms at message %llu", x->name, STALL_MS,
				     (unsigned long long)seq);
				break;
			}
			usleep(50);
		}
		if (__atomic_load_n(&x->stop, __ATOMIC_ACQUIRE))
			break;
		/* the send of this slot DEPTH messages ago is done */
		while (seq - done >= DEPTH) {
			if (VipSendWait(x->s, STALL_MS, &d) != VIP_SUCCESS) {
				fail(x, "%s: a send did not complete in %u ms", x->name, STALL_MS);
				goto out;
			}
			if (!desc_ok(x, d, "send"))
				goto out;
			done++;
		}
		msg_fill(x->sbuf[k], seq, len);
		x->sdesc[k] = h_desc1(x->sdesc[k], x->sbuf[k], x->sc->m.mh, len, true);
		__atomic_sub_fetch(&x->credits, 1, __ATOMIC_ACQ_REL);
		if (VipPostSend(x->s, x->sdesc[k], x->sc->m.mh) != VIP_SUCCESS) {
			fail(x, "%s: VipPostSend failed at message %llu", x->name,
			     (unsigned long long)seq);
			break;
		}
		__atomic_store_n(&x->sent, seq + 1, __ATOMIC_RELEASE);
	}
	while (done < __atomic_load_n(&x->sent, __ATOMIC_ACQUIRE) && x->errors == 0) {
		if (VipSendWait(x->s, STALL_MS, &d) != VIP_SUCCESS || !desc_ok(x, d, "send"))
			break;
		done++;
	}
out:
	__atomic_store_n(&x->done, true, __ATOMIC_RELEASE);
	return NULL;
}

/* The next receive completion of the stream, by its kind of wait. */
static VIP_DESCRIPTOR *
recv_next(struct stream *x)
{
	VIP_DESCRIPTOR *d = NULL;
	VIP_VI_HANDLE vi;
	VIP_BOOLEAN is_recv;

	if (!x->via_cq)
		return VipRecvWait(x->r, STALL_MS, &d) == VIP_SUCCESS ? d : NULL;
	if (VipCQWait(x->cq, STALL_MS, &vi, &is_recv) != VIP_SUCCESS || vi != x->r || !is_recv)
		return NULL;
	return VipRecvDone(x->r, &d) == VIP_SUCCESS ? d : NULL;
}

static void *
receiver(void *arg)
{
	struct stream *x = arg;
	uint64_t seq;

	for (seq = 0;; seq++) {
		unsigned k = seq % DEPTH;
		VIP_DESCRIPTOR *d;

		/* all that was sent is taken: done */
		if (__atomic_load_n(&x->done, __ATOMIC_ACQUIRE) &&
		    seq == __atomic_load_n(&x->sent, __ATOMIC_ACQUIRE))
			break;
		if (x->errors != 0)
			break;
		d = recv_next(x);
		if (d == NULL) {
			if (__atomic_load_n(&x->done, __ATOMIC_ACQUIRE) &&
			    seq == __atomic_load_n(&x->sent, __ATOMIC_ACQUIRE))
				break;
			fail(x, "%s: message %llu did not come in %u ms", x->name,
			     (unsigned long long)seq, STALL_MS);
			break;
		}
		if (d != x->rdesc[k]) {
			fail(x, "%s: message %llu completed another receive", x->name,
			     (unsigned long long)seq);
			break;
		}
		if (!desc_ok(x, d, "receive"))
			break;
		if (d->CS.Length != msg_len(seq) || !msg_ok(x->rbuf[k], seq, d->CS.Length)) {
			uint64_t got;

			memcpy(&got, x->rbuf[k], sizeof(got));
			fail(x, "%s: message %llu: %u bytes, number %llu: not as sent (lost, "
			     "duplicated or damaged)", x->name, (unsigned long long)seq,
			     d->CS.Length, (unsigned long long)got);
			break;
		}
		progress(x);
		__atomic_store_n(&x->received, seq + 1, __ATOMIC_RELEASE);
		h_desc1(d, x->rbuf[k], x->rc->m.mh, MSG_MAX, false);
		if (VipPostRecv(x->r, d, x->rc->m.mh) != VIP_SUCCESS) {
			fail(x, "%s: VipPostRecv failed", x->name);
			break;
		}
		__atomic_add_fetch(&x->credits, 1, __ATOMIC_ACQ_REL);
	}
	return NULL;
}

/* ---- the RDMA stream ------------------------------------------------------------- */

static void *
rdma_loop(void *arg)
{
	struct stream *x = arg;
	uint8_t *out = x->sbuf[0], *back = x->sbuf[1];
	uint64_t k;

	for (k = 0; !__atomic_load_n(&x->stop, __ATOMIC_ACQUIRE); k++) {
		uint32_t len = msg_len(k), op;

		msg_fill(out, k, len);
		memset(back, 0, len);
		for (op = 0; op < 2; op++) {
			VIP_DESCRIPTOR *d = x->sdesc[op], *got = NULL;

			memset(d, 0, sizeof(*d));
			d->CS.Control = op == 0 ? VIP_CONTROL_OP_RDMAWRITE : VIP_CONTROL_OP_RDMAREAD;
			d->CS.SegCount = 2;
			d->CS.Length = len;
			d->DS[0].Remote.Data.Address = x->target;
			d->DS[0].Remote.Handle = x->target_mh;
			d->DS[1].Local.Data.Address = op == 0 ? out : back;
			d->DS[1].Local.Handle = x->sc->m.mh;
			d->DS[1].Local.Length = len;
			if (VipPostSend(x->s, d, x->sc->m.mh) != VIP_SUCCESS) {
				fail(x, "rdma: VipPostSend failed");
				goto out;
			}
			if (VipSendWait(x->s, STALL_MS, &got) != VIP_SUCCESS || got != d) {
				fail(x, "rdma: an RDMA %s did not complete in %u ms",
				     op == 0 ? "Write" : "Read", STALL_MS);
				goto out;
			}
			if (!desc_ok(x, d, op == 0 ? "RDMA Write" : "RDMA Read"))
				goto out;
		}
		if (!msg_ok(back, k, len)) {
			fail(x, "rdma: round trip %llu read back other bytes than it wrote",
			     (unsigned long long)k);
			break;
		}
		progress(x);
		__atomic_store_n(&x->received, k + 1, __ATOMIC_RELEASE);
	}
out:
	__atomic_store_n(&x->done, true, __ATOMIC_RELEASE);
	return NULL;
}

/* ---- set-up -------------------------------------------------------------------------- */

static bool
client_open(struct client *c, const struct viad_proc *v, const char *name)
{
	VIP_MEM_ATTRIBUTES ma = { .EnableRdmaWrite = VIP_TRUE, .EnableRdmaRead = VIP_TRUE };

	memset(c, 0, sizeof(*c));
	viad_use(v);
	if (!CHECK_RET(VipOpenNic("via0", &c->nic), VIP_SUCCESS, "%s: open via0", name))
		return false;
	VipErrorCallback(c->nic, NULL, h_err_handler);
	CHECK_RET(VipCreatePtag(c->nic, &c->pt), VIP_SUCCESS, "%s: a tag", name);
	ma.Ptag = c->pt;
	return h_mem_open(&c->m, c->nic, &ma, name, 8u << 20, !h_heap_mem());
}

static VIP_VI_HANDLE
vi_new(struct client *c, VIP_RELIABILITY_LEVEL level, VIP_CQ_HANDLE recv_cq)
{
	VIP_VI_ATTRIBUTES va;
	VIP_VI_HANDLE vi = NULL;

	h_vi_attrs(&va, c->pt);
	va.ReliabilityLevel = level;
	va.EnableRdmaWrite = VIP_TRUE;
	va.EnableRdmaRead = level != VIP_SERVICE_UNRELIABLE;
	CHECK_RET(h_create_vi(c->nic, &va, NULL, recv_cq, &vi), VIP_SUCCESS, "a VI");
	return vi;
}

/* Buffers and descriptors of @p x, its receives posted, connected. */
static bool
stream_open(struct stream *x, const char *name, VIP_RELIABILITY_LEVEL level, struct client *sc,
	    struct client *rc, bool via_cq, bool rdma)
{
	unsigned k;

	memset(x, 0, sizeof(*x));
	x->name = name;
	x->rdma = rdma;
	x->via_cq = via_cq;
	x->sc = sc;
	x->rc = rc;
	if (via_cq)
		CHECK_RET(VipCreateCQ(rc->nic, 2 * DEPTH, &x->cq), VIP_SUCCESS, "%s: a CQ", name);
	x->s = vi_new(sc, level, NULL);
	x->r = vi_new(rc, level, x->cq);
	for (k = 0; k < DEPTH; k++) {
		x->sdesc[k] = h_mem_get(&sc->m, 128, VIP_DESCRIPTOR_ALIGNMENT);
		x->sbuf[k] = h_mem_get(&sc->m, MSG_MAX, 64);
		x->rdesc[k] = h_mem_get(&rc->m, 128, VIP_DESCRIPTOR_ALIGNMENT);
		x->rbuf[k] = h_mem_get(&rc->m, MSG_MAX, 64);
	}
	if (rdma) {
		x->target = h_mem_get(&rc->m, MSG_MAX, 64);
		x->target_mh = rc->m.mh;
	} else {
		for (k = 0; k < DEPTH; k++) {
			h_desc1(x->rdesc[k], x->rbuf[k], rc->m.mh, MSG_MAX, false);
			if (!CHECK_RET(VipPostRecv(x->r, x->rdesc[k], rc->m.mh), VIP_SUCCESS,
				       "%s: post a receive", name))
				return false;
		}
		x->credits = DEPTH;
	}
	return h_connect(sc->nic, x->s, rc->nic, x->r, name, 10000);
}

static void
stream_start(struct stream *x)
{
	if (x->rdma) {
		pthread_create(&x->st, NULL, rdma_loop, x);
		return;
	}
	pthread_create(&x->rt, NULL, receiver, x);
	pthread_create(&x->st, NULL, sender, x);
}

static void
stream_stop(struct stream *x)
{
	__atomic_store_n(&x->stop, true, __ATOMIC_RELEASE);
	pthread_join(x->st, NULL);
	if (!x->rdma)
		pthread_join(x->rt, NULL);
}

/* ---- upgrades ------------------------------------------------------------------------ */

/* What `viactl --json upgrade` said. */
struct answer {
	int status;                /* viactl's exit status */
	char result[32];
	char detail[160];
	double blackout_ms;
	unsigned sessions, connections, frames;
};

/* A JSON number or string of @p key in @p text (viactl's flat answer). */
static const char *
json_at(const char *text, const char *key)
{
	char k[64];
	const char *p;

	snprintf(k, sizeof(k), "\"%s\": ", key);
	p = strstr(text, k);
	return p != NULL ? p + strlen(k) : NULL;
}

/* `viactl -i INSTANCE @p args` for @p v: its output (stdout and stderr) into
 * @p out. @return its exit status, -1 if it did not run or exit */
static int
viactl_run(const struct viad_proc *v, const char *args, char *out, size_t len)
{
	char cmd[1024];
	size_t n = 0;
	int status;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "%s -i %s %s 2>&1", viactl_path, v->instance, args);
	f = popen(cmd, "r");
	if (f != NULL)
		n = fread(out, 1, len - 1, f);
	out[n] = '\0';
	if (f == NULL)
		return -1;
	status = pclose(f);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static bool
viactl_upgrade(const struct viad_proc *v, const char *binary, struct answer *a)
{
	char args[512], out[2048];
	const char *p;

	memset(a, 0, sizeof(*a));
	snprintf(args, sizeof(args), "--json upgrade %s", binary != NULL ? binary : "");
	a->status = viactl_run(v, args, out, sizeof(out));
	if (a->status < 0 && out[0] == '\0')
		return false;
	if ((p = json_at(out, "result")) != NULL)
		sscanf(p, "\"%31[^\"]\"", a->result);
	if ((p = json_at(out, "detail")) != NULL)
		sscanf(p, "\"%159[^\"]\"", a->detail);
	if ((p = json_at(out, "blackout_us")) != NULL)
		a->blackout_ms = strtod(p, NULL) / 1000.0;
	if ((p = json_at(out, "sessions")) != NULL)
		a->sessions = (unsigned)strtoul(p, NULL, 10);
	if ((p = json_at(out, "connections")) != NULL)
		a->connections = (unsigned)strtoul(p, NULL, 10);
	if ((p = json_at(out, "frames")) != NULL)
		a->frames = (unsigned)strtoul(p, NULL, 10);
	if (a->result[0] == '\0')
		h_note("viactl said: %s", out);
	return a->result[0] != '\0';
}

/* `viactl cpus`: the CPUs @p v's poll lcores run on, into @p out. */
static void
viactl_cpus(const struct viad_proc *v, char *out, size_t len)
{
	viactl_run(v, "cpus", out, len);
	out[strcspn(out, "\n")] = '\0';
}

static struct stream rd, rr, rdma;
static struct stream *const streams[] = { &rd, &rr, &rdma };
#define NB_STREAMS (sizeof(streams) / sizeof(streams[0]))

/* Every stream moved on by RESUME_MSGS since @p before. @return whether */
static bool
resumed(const uint64_t *before, const char *after)
{
	uint64_t until = h_now_ms() + RESUME_MS;
	unsigned i, ok = 0;

	while (ok < NB_STREAMS && h_now_ms() < until) {
		for (i = 0, ok = 0; i < NB_STREAMS; i++)
			ok += __atomic_load_n(&streams[i]->received, __ATOMIC_ACQUIRE) >=
			      before[i] + RESUME_MSGS || streams[i]->errors != 0;
		if (ok < NB_STREAMS)
			h_sleep_ms(5);
	}
	for (i = 0; i < NB_STREAMS; i++) {
		if (streams[i]->errors != 0)
			return CHECK(0, "%s: %s", after, streams[i]->error);
	}
	return CHECK(ok == NB_STREAMS, "%s: every stream moves again (rd %llu, rr %llu, rdma %llu)",
		     after, (unsigned long long)rd.received, (unsigned long long)rr.received,
		     (unsigned long long)rdma.received);
}

/* The clients' longest pause since the last call, over every stream (ms). */
static double
client_stall(void)
{
	uint64_t worst = 0;
	unsigned i;

	for (i = 0; i < NB_STREAMS; i++) {
		uint64_t g = __atomic_exchange_n(&streams[i]->gap_ns, 0, __ATOMIC_RELAXED);

		if (g > worst)
			worst = g;
	}
	return (double)worst / 1e6;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void
figures(const char *what, double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	h_note("RESULT upgrade %s n=%u p50_ms=%.1f max_ms=%.1f", what, n, v[n / 2], v[n - 1]);
}

/* A VipConnectWait of B crossing upgrades, answered after them. */
struct waiter {
	pthread_t t;
	VIP_NIC_HANDLE nic;
	VIP_VI_HANDLE vi;
	VIP_RETURN rc;
};

static void *
waiter_main(void *arg)
{
	struct waiter *w = arg;
	union h_net_addr local, remote;
	VIP_VI_ATTRIBUTES ra;
	VIP_CONN_HANDLE conn;

	w->rc = VipConnectWait(w->nic, h_addr(&local, NULL, "upg-wait"), 120000, &remote.a, &ra,
			       &conn);
	if (w->rc == VIP_SUCCESS)
		w->rc = VipConnectAccept(conn, w->vi);
	return NULL;
}

/* The VipConnectWait of @p w, issued before the first upgrade, answered now. */
static void
late_connect(VIP_VI_HANDLE late, struct waiter *w)
{
	static const uint8_t b_mac[6] = { 0x02, 0, 0, 0, 0x0b, 0x01 };   /* H_MEMIF_MAC_CLIENT */
	union h_net_addr local, remote;
	VIP_VI_ATTRIBUTES ra;

	h_addr(&local, NULL, "upg-late");
	h_addr(&remote, b_mac, "upg-wait");
	CHECK_RET(VipConnectRequest(late, &local.a, &remote.a, 10000, &ra), VIP_SUCCESS,
		  "a VipConnectWait issued before the first upgrade is answered after the third");
	pthread_join(w->t, NULL);
	CHECK_RET(w->rc, VIP_SUCCESS, "... and its VipConnectAccept succeeds");
}

/*
 * After the upgrades, B killed with SIGKILL (docs/design.md section 18.7):
 * nothing can be handed over; A's VI connected to B breaks (CONN_LOST), B's
 * client learns its viad is gone, and a viad started on B's instance and
 * socket finds nothing in its way (the admin socket, the memif socket): the
 * client opens its NIC again and connects to A.
 */
static void
crash(struct viad_proc *b, struct client *ca, struct client *cb, VIP_VI_HANDLE a_to_b)
{
	char devargs[512], instance[128];
	const char *sets[] = { "port.via0.glue=ethdev", devargs, instance, NULL };
	struct viad_proc b2;
	struct client cn;
	VIP_NIC_ATTRIBUTES na;
	VIP_VI_HANDLE x, y;
	uint64_t t0;

	h_note("B killed with SIGKILL after the upgrades: nothing is adopted");
	h_err_clear();
	t0 = h_now_ms();
	viad_kill(b);
	CHECK(h_err_take(VIP_ERROR_CONN_LOST, a_to_b, 15000, NULL),
	      "A's VI connected to B is lost (CONN_LOST) %llu ms after the kill",
	      (unsigned long long)(h_now_ms() - t0));
	CHECK_RET(VipQueryNic(cb->nic, &na), VIP_ERROR_RESOURCE,
		  "B's client learns its viad is gone");
	VipCloseNic(cb->nic);
	snprintf(devargs, sizeof(devargs),
		 "port.via0.devargs=net_memif0,role=client,socket=%s/memif.sock,"
		 "socket-abstract=no,mac=%s", h_tmpdir(), H_MEMIF_MAC_CLIENT);
	snprintf(instance, sizeof(instance), "viad.instance=%s", b->instance);
	if (!CHECK(viad_spawn(&b2, "B2", b->sock, sets) == 0 &&
		   viad_wait_ready(&b2, H_TIMEOUT_MS) == 0,
		   "a viad starts on B's instance and socket after the kill"))
		return;
	if (client_open(&cn, &b2, "B2")) {
		CHECK(h_link_wait(cn.nic, 10000), "the memif link is up again");
		x = vi_new(ca, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
		y = vi_new(&cn, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
		if (h_connect(ca->nic, x, cn.nic, y, "after-crash", 10000)) {
			struct stream t = { .name = "after-crash", .sc = ca, .rc = &cn, .s = x, .r = y };
			VIP_DESCRIPTOR *rdd = h_mem_get(&cn.m, 128, VIP_DESCRIPTOR_ALIGNMENT);
			VIP_DESCRIPTOR *sdd = h_mem_get(&ca->m, 128, VIP_DESCRIPTOR_ALIGNMENT);
			uint8_t *rb = h_mem_get(&cn.m, MSG_MAX, 64), *sb = h_mem_get(&ca->m, MSG_MAX, 64);
			VIP_DESCRIPTOR *got = NULL;

			h_desc1(rdd, rb, cn.m.mh, MSG_MAX, false);
			VipPostRecv(y, rdd, cn.m.mh);
			msg_fill(sb, 1, 4000);
			h_desc1(sdd, sb, ca->m.mh, 4000, true);
			VipPostSend(x, sdd, ca->m.mh);
			CHECK(VipRecvWait(y, 10000, &got) == VIP_SUCCESS && desc_ok(&t, got, "receive") &&
			      got->CS.Length == 4000 && msg_ok(rb, 1, 4000),
			      "a message crosses the new connection intact");
			VipSendWait(x, 10000, &got);
		}
		VipCloseNic(cn.nic);
	}
	viad_stop(&b2);
}

int
main(int argc, char **argv)
{
	struct viad_proc a, b;
	struct client ca, cb;
	struct waiter w = { 0 };
	VIP_VI_HANDLE idle_a, idle_b, late;
	double blackout[UPGRADES + 1], stall[UPGRADES + 1];
	uint64_t before[NB_STREAMS];
	struct answer ans;
	unsigned i, n = 0, b_ups = 0;

	h_init(argc, argv, 900);
	if (argc < 4) {
		fprintf(stderr, "usage: %s VIAD VIACTL VIAD_IMAGE_NEXT\n", argv[0]);
		return 2;
	}
	viactl_path = argv[2];
	next_path = argv[3];
	if (!viad_start_memif(&a, "A", true) || !viad_start_memif(&b, "B", false))
		return h_finish();
	if (!client_open(&ca, &a, "A") || !client_open(&cb, &b, "B"))
		return h_finish();
	CHECK(h_link_wait(ca.nic, 10000) && h_link_wait(cb.nic, 10000), "the memif link is up");
	stream_open(&rd, "rd", VIP_SERVICE_RELIABLE_DELIVERY, &ca, &cb, false, false);
	stream_open(&rr, "rr", VIP_SERVICE_RELIABLE_RECEPTION, &cb, &ca, true, false);
	stream_open(&rdma, "rdma", VIP_SERVICE_RELIABLE_RECEPTION, &ca, &cb, false, true);
	idle_a = vi_new(&ca, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
	idle_b = vi_new(&cb, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
	h_connect(ca.nic, idle_a, cb.nic, idle_b, "idle", 10000);
	w.nic = cb.nic;
	w.vi = vi_new(&cb, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
	late = vi_new(&ca, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
	h_err_clear();
	pthread_create(&w.t, NULL, waiter_main, &w);
	for (i = 0; i < NB_STREAMS; i++)
		stream_start(streams[i]);
	for (i = 0; i < NB_STREAMS; i++)
		before[i] = 0;
	resumed(before, "before any upgrade");

	for (i = 0; i < UPGRADES; i++) {
		struct viad_proc *v = i % 2 == 0 ? &a : &b;
		char what[64];
		unsigned k;

		char cpus_before[128], cpus_after[128];
		bool answered;

		client_stall();
		viactl_cpus(v, cpus_before, sizeof(cpus_before));
		snprintf(what, sizeof(what), "upgrade %u (viad '%s')", i + 1, v->name);
		/* (called before CHECK: its arguments are evaluated in any order) */
		answered = viactl_upgrade(v, NULL, &ans);
		/* what moves from now on moved after the blackout */
		for (k = 0; k < NB_STREAMS; k++)
			before[k] = __atomic_load_n(&streams[k]->received, __ATOMIC_ACQUIRE);
		if (!CHECK(answered && ans.status == 0 && strcmp(ans.result, "upgraded") == 0 &&
			   ans.sessions >= 1 && ans.connections >= 4,
			   "%s: viactl says %s (%s): blackout %.1f ms, %u sessions, %u connections, "
			   "%u frames in flight carried", what, ans.result, ans.detail,
			   ans.blackout_ms, ans.sessions, ans.connections, ans.frames))
			break;
		CHECK(viad_alive(v), "%s: the same viad process runs on (pid %d)", what, (int)v->pid);
		/* the exec happens on the main lcore's thread, pinned to one CPU:
		 * the new viad must not inherit that as all it may use */
		viactl_cpus(v, cpus_after, sizeof(cpus_after));
		CHECK(strcmp(cpus_before, cpus_after) == 0,
		      "%s: the poll lcores run on the same CPUs after it (before '%s', after '%s')",
		      what, cpus_before, cpus_after);
		if (!resumed(before, what))
			break;
		blackout[n] = ans.blackout_ms;
		stall[n++] = client_stall();
		b_ups += v == &b;
		if (i == 2)
			late_connect(late, &w);
	}
	if (n > 0) {
		figures("viad_blackout", blackout, n);
		figures("client_stall", stall, n);
	}

	/* SIGUSR2: the same, asked by a signal */
	for (i = 0; i < NB_STREAMS; i++)
		before[i] = __atomic_load_n(&streams[i]->received, __ATOMIC_ACQUIRE);
	kill(b.pid, SIGUSR2);
	{
		uint64_t until = h_now_ms() + RESUME_MS;
		char adopted[64];

		/* the new viad's word that it adopts B's next image */
		snprintf(adopted, sizeof(adopted), "handover %u of pid", b_ups + 1);
		while (!viad_log_contains(&b, adopted) && h_now_ms() < until)
			h_sleep_ms(20);
		CHECK(viad_log_contains(&b, adopted), "an upgrade asked by SIGUSR2 hands B over");
	}
	for (i = 0; i < NB_STREAMS; i++)
		before[i] = __atomic_load_n(&streams[i]->received, __ATOMIC_ACQUIRE);
	resumed(before, "an upgrade asked by SIGUSR2");

	/* a binary whose image version moved on: refused, handed back */
	{
		bool answered = viactl_upgrade(&a, next_path, &ans);

		for (i = 0; i < NB_STREAMS; i++)
			before[i] = __atomic_load_n(&streams[i]->received, __ATOMIC_ACQUIRE);
		CHECK(answered && ans.status == 1 && strcmp(ans.result, "rolled_back") == 0 &&
		      strstr(ans.detail, "version") != NULL,
	      "an image of another version is refused and the old viad resumes: viactl says %s "
		      "(%s) after %.1f ms", ans.result, ans.detail, ans.blackout_ms);
	}
	resumed(before, "the rollback");

	/* a request from a user other than root: refused at the socket */
	{
		pid_t pid = fork();
		int st;

		if (pid == 0) {
			char cmd[512];

			if (setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0)
				_exit(3);
			snprintf(cmd, sizeof(cmd), "%s -i %s upgrade >/dev/null 2>&1", viactl_path,
				 a.instance);
			_exit(system(cmd) == 0 ? 0 : 1);
		}
		waitpid(pid, &st, 0);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1,
		      "an upgrade asked by a user other than root is refused");
	}

	for (i = 0; i < NB_STREAMS; i++)
		stream_stop(streams[i]);
	for (i = 0; i < NB_STREAMS; i++)
		CHECK(streams[i]->errors == 0 &&
		      (streams[i]->rdma || streams[i]->received == streams[i]->sent),
		      "%s: %llu %s, each once, in order, intact%s%s", streams[i]->name,
		      (unsigned long long)streams[i]->received,
		      streams[i]->rdma ? "RDMA Write/Read round trips" : "messages",
		      streams[i]->errors ? ": " : "", streams[i]->error);
	CHECK(h_err_count(VIP_ERROR_CONN_LOST, NULL) == 0,
	      "no connection broke: no VIP_ERROR_CONN_LOST (%u)", h_err_count(VIP_ERROR_CONN_LOST, NULL));
	{
		VIP_VI_HANDLE vis[] = { rd.s, rd.r, rr.s, rr.r, rdma.s, rdma.r, idle_a, idle_b, late,
					w.vi };
		unsigned c = 0;

		for (i = 0; i < sizeof(vis) / sizeof(vis[0]); i++)
			c += h_vi_state(vis[i]) == VIP_STATE_CONNECTED;
		CHECK(c == sizeof(vis) / sizeof(vis[0]), "every VI is Connected at the end (%u of %zu)",
		      c, sizeof(vis) / sizeof(vis[0]));
	}
	CHECK(viad_log_contains(&a, "upgrade refused by the new binary"),
	      "A's log says the new binary refused the image");
	crash(&b, &ca, &cb, rd.s);
	VipCloseNic(ca.nic);
	viad_stop(&a);
	return h_finish();
}
