/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Both directions at once (issue 27, part 1): two VIs each send the other
 * 64 messages of SIZE bytes while they receive 64, the way an MPI
 * benchmark's bidirectional bandwidth does, on every reliability level:
 *
 *   send   a message is SIZE / MaxTransferSize Sends straight into the
 *          receiver's buffer; the sender sends a chunk only once the
 *          receiver has posted its receive (the test's credits: both ends
 *          live in this process);
 *   read   (RD, RR) rendezvous: the sender's RTS (a Send naming the
 *          message), the receiver's RDMA Reads of the sender's buffer, its
 *          FIN (a Send); both ends' RTSs, Reads and FINs share each VI, so
 *          Sends pass Reads not yet answered both ways (VIA §6.3.1.1).
 *
 * One thread drives both ends. Every byte received is checked; no
 * completion may fail, no connection break; the ports lose nothing, so
 * viad sends no frame again (FramesRetransmitted stays the same) and an
 * Unreliable connection loses none (FramesDropped). On one viad (the
 * loopback NIC: its VIs talk in memory) and on two joined by net_memif;
 * meson runs it with one poll lcore and with two.
 *
 * VIA_BIDIR_SIZES=a,b,... (bytes; default 131072,4194304) and
 * VIA_BIDIR_ROUNDS (1) choose the load.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define WINDOW    64               /* messages in flight each way */
#define QD        256              /* descriptors per queue the test keeps posted */
#define CTL_RECVS 160              /* read mode: RTS and FIN receives posted */
#define CTL_LEN   16
#define BUF_CAP   (8u << 20)       /* a side's message buffers, each way */
#define STALL_MS  20000            /* no completion for this long: failed */

enum mode { MODE_SEND, MODE_READ };
enum ctl { CTL_RTS = 1, CTL_FIN = 2 };
enum sd_kind { SD_FREE, SD_CHUNK, SD_CTL, SD_READ };

struct ctl_msg {
	uint32_t type;
	uint32_t msg;
	uint64_t rsvd;
};
_Static_assert(sizeof(struct ctl_msg) == CTL_LEN, "a control message fills its slot");

/* One end: a VI, its memory, what it sends (as the sender) and reads (as the receiver). */
struct side {
	const char *name;
	VIP_NIC_HANDLE nic;
	VIP_PROTECTION_HANDLE pt;
	VIP_VI_HANDLE vi;
	struct h_mem mem;
	struct side *peer;
	uint8_t *sbuf, *rbuf;            /* nbuf message buffers each */
	VIP_DESCRIPTOR *sd, *rd;         /* QD send and QD receive descriptors */
	uint8_t *sctl, *rctl;            /* a control slot per descriptor */
	uint8_t sd_kind[QD];
	uint32_t sd_msg[QD];
	uint32_t sd_free[QD], nsd_free;
	uint32_t rd_free[QD], nrd_free;
	/* as the sender */
	uint32_t tx_posted;              /* send: chunks posted; read: RTSs posted */
	uint32_t tx_done;                /* send: chunks completed; read: FINs received */
	/* as the receiver */
	uint32_t rx_posted, rx_done;     /* send: chunk receives posted, completed */
	uint32_t rts[WINDOW], nrts, rts_head;   /* read: messages announced, to read */
	uint32_t read_chunk;             /* read: next chunk of rts[rts_head] */
	uint32_t reads_done[WINDOW];
	uint32_t fin_q[WINDOW], nfin, fin_head; /* FINs waiting for a descriptor */
	uint32_t msgs_read;
	bool failed;
};

struct run {
	enum mode mode;
	VIP_RELIABILITY_LEVEL level;
	uint32_t size, mts, chunks, nbuf, round;
};

static uint32_t
chunk_len(const struct run *r, uint32_t k)
{
	return k + 1 < r->chunks ? r->mts : r->size - k * r->mts;
}

/* The byte at @p i of buffer @p slot that @p from sends in round @p round. */
static inline uint8_t
pattern(size_t i, uint32_t round, uint32_t from, uint32_t slot)
{
	uint64_t x = (uint64_t)i * 0x9e3779b1u + round * 131u + from * 7919u + slot * 104729u;

	return (uint8_t)(x ^ (x >> 13) ^ (x >> 29));
}

static const char *
level_name(VIP_RELIABILITY_LEVEL l)
{
	return l == VIP_SERVICE_RELIABLE_RECEPTION ? "RR"
	       : l == VIP_SERVICE_RELIABLE_DELIVERY ? "RD" : "Unreliable";
}

static bool
side_open(struct side *s, const char *name, const struct viad_proc *v)
{
	VIP_MEM_ATTRIBUTES ma = { 0 };
	size_t descs = 2 * QD * sizeof(VIP_DESCRIPTOR), ctl = 2 * QD * CTL_LEN;
	uint8_t *p;
	uint32_t i;

	memset(s, 0, sizeof(*s));
	s->name = name;
	viad_use(v);
	if (!CHECK_RET(VipOpenNic("via0", &s->nic), VIP_SUCCESS, "open via0 of viad '%s' (%s)",
		       v->name, name) ||
	    !CHECK_RET(VipCreatePtag(s->nic, &s->pt), VIP_SUCCESS, "a tag for %s", name))
		return false;
	VipErrorCallback(s->nic, NULL, h_err_handler);
	ma.Ptag = s->pt;
	ma.EnableRdmaRead = VIP_TRUE;
	if (!h_mem_open(&s->mem, s->nic, &ma, name, descs + ctl + 2 * (size_t)BUF_CAP, false))
		return false;
	p = s->mem.base;
	s->sd = (VIP_DESCRIPTOR *)p;
	s->rd = s->sd + QD;
	p += descs;
	s->sctl = p;
	s->rctl = p + QD * CTL_LEN;
	p += ctl;
	s->sbuf = p;
	s->rbuf = p + BUF_CAP;
	for (i = 0; i < QD; i++)
		s->sd_free[i] = s->rd_free[i] = QD - 1 - i;
	s->nsd_free = s->nrd_free = QD;
	return true;
}

static void
side_close(struct side *s)
{
	if (s->nic == NULL)
		return;
	h_mem_close(&s->mem, s->nic);
	VipDestroyPtag(s->nic, s->pt);
	CHECK_RET(VipCloseNic(s->nic), VIP_SUCCESS, "close %s", s->name);
}

/* ---- posting ---------------------------------------------------------------- */

static VIP_DESCRIPTOR *
sd_get(struct side *s, enum sd_kind kind, uint32_t msg)
{
	uint32_t i;

	if (s->nsd_free == 0)
		return NULL;
	i = s->sd_free[--s->nsd_free];
	s->sd_kind[i] = (uint8_t)kind;
	s->sd_msg[i] = msg;
	memset(&s->sd[i], 0, sizeof(s->sd[i]));
	return &s->sd[i];
}

static bool
post_send(struct side *s, VIP_DESCRIPTOR *d)
{
	VIP_RETURN rc = VipPostSend(s->vi, d, s->mem.mh);

	if (rc != VIP_SUCCESS)
		s->failed = !CHECK_RET(rc, VIP_SUCCESS, "%s: VipPostSend", s->name);
	return rc == VIP_SUCCESS;
}

static bool
post_recv(struct side *s, uint8_t *buf, uint32_t len)
{
	VIP_DESCRIPTOR *d;
	VIP_RETURN rc;

	if (s->nrd_free == 0)
		return false;
	d = &s->rd[s->rd_free[--s->nrd_free]];
	h_desc1(d, buf, s->mem.mh, len, false);
	rc = VipPostRecv(s->vi, d, s->mem.mh);
	if (rc != VIP_SUCCESS)
		s->failed = !CHECK_RET(rc, VIP_SUCCESS, "%s: VipPostRecv", s->name);
	return rc == VIP_SUCCESS;
}

/* Read mode: a receive for an RTS or a FIN, into its descriptor's own slot. */
static void
post_ctl_recv(struct side *s)
{
	if (s->nrd_free > 0)
		post_recv(s, s->rctl + (size_t)s->rd_free[s->nrd_free - 1] * CTL_LEN, CTL_LEN);
}

/* A Send of @p len bytes at @p buf (in the side's region). */
static void
send_fill(struct side *s, VIP_DESCRIPTOR *d, void *buf, uint32_t len)
{
	d->CS.Control = VIP_CONTROL_OP_SENDRECV;
	d->CS.SegCount = 1;
	d->CS.Length = len;
	d->DS[0].Local.Data.Address = buf;
	d->DS[0].Local.Handle = s->mem.mh;
	d->DS[0].Local.Length = len;
}

static bool
send_ctl(struct side *s, uint32_t type, uint32_t msg)
{
	VIP_DESCRIPTOR *d = sd_get(s, SD_CTL, msg);
	struct ctl_msg *c;

	if (d == NULL)
		return false;
	c = (struct ctl_msg *)(s->sctl + (size_t)(d - s->sd) * CTL_LEN);
	c->type = type;
	c->msg = msg;
	c->rsvd = 0;
	send_fill(s, d, c, CTL_LEN);
	return post_send(s, d);
}

/* Send mode: chunk j of the round (message j / chunks) into buffer j % nbuf. */
static size_t
chunk_off(const struct run *r, uint32_t j)
{
	uint32_t m = j / r->chunks, k = j % r->chunks;

	return (size_t)(m % r->nbuf) * r->size + (size_t)k * r->mts;
}

/* Post what @p s may: its own messages, and its reads and FINs as a receiver. */
static void
post_more(struct side *s, const struct run *r)
{
	struct side *p = s->peer;
	const uint32_t total = WINDOW * r->chunks;

	if (r->mode == MODE_SEND) {
		/* the peer's chunks: a receive each, in order */
		while (s->rx_posted < total && s->rx_posted - s->rx_done < QD &&
		       post_recv(s, s->rbuf + chunk_off(r, s->rx_posted),
				 chunk_len(r, s->rx_posted % r->chunks)))
			s->rx_posted++;
		/* ours, each once the peer has its receive posted */
		while (s->tx_posted < p->rx_posted && !s->failed) {
			VIP_DESCRIPTOR *d = sd_get(s, SD_CHUNK, s->tx_posted);

			if (d == NULL)
				break;
			send_fill(s, d, s->sbuf + chunk_off(r, s->tx_posted),
				  chunk_len(r, s->tx_posted % r->chunks));
			if (!post_send(s, d))
				return;
			s->tx_posted++;
		}
		return;
	}
	while (s->fin_head < s->nfin && send_ctl(s, CTL_FIN, s->fin_q[s->fin_head]))
		s->fin_head++;
	while (s->rts_head < s->nrts && !s->failed) {
		uint32_t m = s->rts[s->rts_head], k = s->read_chunk;
		size_t off = (size_t)(m % r->nbuf) * r->size + (size_t)k * r->mts;
		VIP_DESCRIPTOR *d = sd_get(s, SD_READ, m);

		if (d == NULL)
			break;
		d->CS.Control = VIP_CONTROL_OP_RDMAREAD;
		d->CS.SegCount = 2;
		d->CS.Length = chunk_len(r, k);
		d->DS[0].Remote.Data.AddressBits = (uintptr_t)(p->sbuf + off);
		d->DS[0].Remote.Handle = p->mem.mh;
		d->DS[1].Local.Data.Address = s->rbuf + off;
		d->DS[1].Local.Handle = s->mem.mh;
		d->DS[1].Local.Length = chunk_len(r, k);
		if (!post_send(s, d))
			return;
		if (++s->read_chunk == r->chunks) {
			s->read_chunk = 0;
			s->rts_head++;
		}
	}
	while (s->tx_posted < WINDOW && send_ctl(s, CTL_RTS, s->tx_posted))
		s->tx_posted++;
}

/* ---- completions ------------------------------------------------------------ */

static bool
status_ok(struct side *s, const VIP_DESCRIPTOR *d, const char *what, uint32_t msg)
{
	if (d->CS.Status & VIP_STATUS_ERROR_MASK) {
		s->failed = true;
		CHECK(0, "%s: %s of message %u completes with Status %#x (VI %s)", s->name, what,
		      msg, d->CS.Status, h_state_name(h_vi_state(s->vi)));
		return false;
	}
	return true;
}

static void
reap(struct side *s, const struct run *r)
{
	VIP_DESCRIPTOR *d;

	while (!s->failed && VipSendDone(s->vi, &d) == VIP_SUCCESS) {
		uint32_t i = (uint32_t)(d - s->sd), m = s->sd_msg[i];
		enum sd_kind kind = s->sd_kind[i];

		s->sd_kind[i] = SD_FREE;
		s->sd_free[s->nsd_free++] = i;
		if (!status_ok(s, d, kind == SD_READ ? "an RDMA Read" : "a Send", m))
			return;
		if (kind == SD_CHUNK)
			s->tx_done++;
		else if (kind == SD_READ && ++s->reads_done[m] == r->chunks) {
			s->fin_q[s->nfin++] = m;
			s->msgs_read++;
		}
	}
	while (!s->failed && VipRecvDone(s->vi, &d) == VIP_SUCCESS) {
		uint32_t i = (uint32_t)(d - s->rd);

		s->rd_free[s->nrd_free++] = i;
		if (!status_ok(s, d, "a receive", s->rx_done))
			return;
		if (r->mode == MODE_SEND) {
			uint32_t want = chunk_len(r, s->rx_done % r->chunks);

			if (d->CS.Length != want) {
				s->failed = !CHECK(0, "%s: chunk %u: Length %u, not %u", s->name,
						   s->rx_done, d->CS.Length, want);
				return;
			}
			s->rx_done++;
		} else {
			const struct ctl_msg *c = (const void *)d->DS[0].Local.Data.Address;

			if (c->type == CTL_RTS && s->nrts < WINDOW)
				s->rts[s->nrts++] = c->msg;
			else if (c->type == CTL_FIN)
				s->tx_done++;
			else
				s->failed = !CHECK(0, "%s: a control message of type %u", s->name,
						   c->type);
			post_ctl_recv(s);
		}
	}
}

static bool
side_done(const struct side *s, const struct run *r)
{
	if (r->mode == MODE_SEND)
		return s->tx_done == WINDOW * r->chunks && s->rx_done == WINDOW * r->chunks;
	return s->tx_done == WINDOW && s->msgs_read == WINDOW && s->fin_head == s->nfin &&
	       s->nsd_free == QD;
}

/* ---- one case ----------------------------------------------------------------- */

static VIP_VI_HANDLE
vi_new(struct side *s, const struct run *r)
{
	VIP_VI_ATTRIBUTES a;
	VIP_VI_HANDLE vi = NULL;

	h_vi_attrs(&a, s->pt);
	a.ReliabilityLevel = r->level;
	a.MaxTransferSize = r->mts;
	a.EnableRdmaRead = r->level != VIP_SERVICE_UNRELIABLE;
	CHECK_RET(VipCreateVi(s->nic, &a, NULL, NULL, &vi), VIP_SUCCESS, "%s: a %s VI", s->name,
		  level_name(r->level));
	return vi;
}

static void
round_reset(struct side *s, const struct run *r)
{
	uint32_t b;

	s->tx_posted = s->tx_done = s->rx_posted = s->rx_done = 0;
	s->nrts = s->rts_head = s->read_chunk = s->nfin = s->fin_head = s->msgs_read = 0;
	memset(s->reads_done, 0, sizeof(s->reads_done));
	for (b = 0; b < r->nbuf; b++) {
		uint8_t *sb = s->sbuf + (size_t)b * r->size;
		size_t i;

		for (i = 0; i < r->size; i++)
			sb[i] = pattern(i, r->round, s->name[0] == 'A', b);
	}
	memset(s->rbuf, 0, (size_t)r->nbuf * r->size);
}

/* Whether @p s received exactly what its peer sent. */
static bool
check_data(const struct side *s, const struct run *r)
{
	uint32_t b, from = s->peer->name[0] == 'A';
	size_t i;

	for (b = 0; b < r->nbuf; b++) {
		const uint8_t *rb = s->rbuf + (size_t)b * r->size;

		for (i = 0; i < r->size; i++) {
			if (rb[i] != pattern(i, r->round, from, b))
				return CHECK(0, "%s: buffer %u byte %zu is %u, not %u", s->name, b, i,
					     rb[i], pattern(i, r->round, from, b));
		}
	}
	return true;
}

static void
counters(struct side *a, struct side *b, bool same_viad, uint64_t *retrans, uint64_t *dropped)
{
	VIP_DPDK_COUNTERS c;

	*retrans = *dropped = 0;
	h_counters(a->nic, &c);
	*retrans += c.FramesRetransmitted;
	*dropped += c.FramesDropped;
	if (!same_viad) {
		h_counters(b->nic, &c);
		*retrans += c.FramesRetransmitted;
		*dropped += c.FramesDropped;
	}
}

static void
run_case(struct side *a, struct side *b, bool same_viad, const char *where, struct run *r,
	 unsigned rounds)
{
	uint64_t re0, dr0, re1, dr1, t0, bytes = 0, us = 0;
	const char *mode = r->mode == MODE_SEND ? "send" : "read";
	bool ok = true;
	unsigned n;

	a->vi = vi_new(a, r);
	b->vi = vi_new(b, r);
	if (!h_connect(a->nic, a->vi, b->nic, b->vi, "bidir", 10000))
		goto out;
	if (r->mode == MODE_READ) {
		for (n = 0; n < CTL_RECVS; n++) {
			post_ctl_recv(a);
			post_ctl_recv(b);
		}
	}
	counters(a, b, same_viad, &re0, &dr0);
	for (r->round = 0; r->round < rounds && ok; r->round++) {
		uint64_t last = h_now_ms();

		round_reset(a, r);
		round_reset(b, r);
		t0 = h_now_ns();
		while (!(side_done(a, r) && side_done(b, r))) {
			uint32_t before = a->tx_done + a->rx_done + a->msgs_read + b->tx_done +
					  b->rx_done + b->msgs_read;

			post_more(a, r);
			post_more(b, r);
			reap(a, r);
			reap(b, r);
			if (a->failed || b->failed) {
				ok = false;
				break;
			}
			if (before != a->tx_done + a->rx_done + a->msgs_read + b->tx_done +
					      b->rx_done + b->msgs_read)
				last = h_now_ms();
			else if (h_now_ms() - last > STALL_MS) {
				ok = CHECK(0, "%s %s %s %u B: no progress for %u ms (A: sent %u/%u, "
					   "received %u, read %u; B: sent %u/%u, received %u, read "
					   "%u; VIs %s, %s)", where, level_name(r->level), mode,
					   r->size, STALL_MS, a->tx_done, a->tx_posted, a->rx_done,
					   a->msgs_read, b->tx_done, b->tx_posted, b->rx_done,
					   b->msgs_read, h_state_name(h_vi_state(a->vi)),
					   h_state_name(h_vi_state(b->vi)));
				break;
			}
		}
		us += (h_now_ns() - t0) / 1000;
		bytes += 2ull * WINDOW * r->size;
		if (ok)
			ok = check_data(a, r) && check_data(b, r);
	}
	counters(a, b, same_viad, &re1, &dr1);
	CHECK(ok, "%s %s %s %u B: %u rounds of %u messages each way at once, every byte "
	      "checked (%.0f MB/s both ways)", where, level_name(r->level), mode, r->size,
	      rounds, WINDOW, us ? (double)bytes / (double)us : 0.0);
	CHECK(re1 == re0, "%s %s %s %u B: no frame sent again on a port that loses nothing "
	      "(%" PRIu64 " retransmitted)", where, level_name(r->level), mode, r->size, re1 - re0);
	if (r->level == VIP_SERVICE_UNRELIABLE)
		CHECK(dr1 == dr0, "%s Unreliable %s %u B: no frame dropped (%" PRIu64 ")", where,
		      mode, r->size, dr1 - dr0);
	CHECK(h_vi_state(a->vi) == VIP_STATE_CONNECTED && h_vi_state(b->vi) == VIP_STATE_CONNECTED,
	      "%s %s %s %u B: both VIs still Connected (%s, %s)", where, level_name(r->level),
	      mode, r->size, h_state_name(h_vi_state(a->vi)), h_state_name(h_vi_state(b->vi)));
	printf("# RESULT bidir where=%s level=%s mode=%s size=%u MBps=%.0f retransmitted=%" PRIu64
	       "\n", where, level_name(r->level), mode, r->size,
	       us ? (double)bytes / (double)us : 0.0, re1 - re0);
out:
	h_pair_drop(a->vi, b->vi);
	a->vi = b->vi = NULL;
	a->failed = b->failed = false;
	a->nsd_free = b->nsd_free = a->nrd_free = b->nrd_free = QD;
	for (n = 0; n < QD; n++) {
		a->sd_free[n] = b->sd_free[n] = a->rd_free[n] = b->rd_free[n] = QD - 1 - n;
		a->sd_kind[n] = b->sd_kind[n] = SD_FREE;
	}
}

static void
run_all(struct side *a, struct side *b, bool same_viad, const char *where)
{
	static const VIP_RELIABILITY_LEVEL levels[] = {
		VIP_SERVICE_UNRELIABLE, VIP_SERVICE_RELIABLE_DELIVERY,
		VIP_SERVICE_RELIABLE_RECEPTION,
	};
	const char *env = getenv("VIA_BIDIR_SIZES");
	unsigned rounds = getenv("VIA_BIDIR_ROUNDS") ? (unsigned)atoi(getenv("VIA_BIDIR_ROUNDS"))
						     : 1;
	char sizes[256];
	VIP_NIC_ATTRIBUTES na;
	unsigned l;

	a->peer = b;
	b->peer = a;
	if (!CHECK_RET(VipQueryNic(a->nic, &na), VIP_SUCCESS, "query %s", a->name))
		return;
	snprintf(sizes, sizeof(sizes), "%s", env ? env : "131072,4194304");
	for (l = 0; l < 3; l++) {
		int mode;

		for (mode = MODE_SEND; mode <= MODE_READ; mode++) {
			char copy[256], *tok, *save = NULL;

			if (mode == MODE_READ && levels[l] == VIP_SERVICE_UNRELIABLE)
				continue;           /* §2.5.1, Table 1: no RDMA Read there */
			snprintf(copy, sizeof(copy), "%s", sizes);
			for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
				struct run r = { .mode = (enum mode)mode, .level = levels[l] };

				r.size = (uint32_t)strtoul(tok, NULL, 0);
				r.mts = (uint32_t)(na.MaxTransferSize < 65536 ? na.MaxTransferSize
									     : 65536);
				r.chunks = (r.size + r.mts - 1) / r.mts;
				r.nbuf = BUF_CAP / r.size < WINDOW ? BUF_CAP / r.size : WINDOW;
				if (!CHECK(r.size > 0 && r.nbuf > 0,
					   "size %s fits the test's buffers (%u MiB)", tok,
					   BUF_CAP >> 20))
					continue;
				run_case(a, b, same_viad, where, &r, rounds);
			}
		}
	}
}

/*
 * Retransmission timers long enough that only a lost frame sends anything
 * again: on an oversubscribed host a poll lcore may wait a few
 * milliseconds for a CPU, and the default 1 ms timer would then resend
 * frames that were only late; a drop is still answered by a NAK at once.
 */
static const char *const patient_timers[] = {
	"viad.rel_rto_min_us=200000", "viad.rel_rto_max_us=1000000", NULL,
};

static void
test_one_viad(void)
{
	struct viad_proc v;
	struct side a, b;

	h_note("==== one viad: the loopback NIC, its VIs talk in memory");
	if (viad_start(&v, "one", patient_timers) != 0)
		return;
	if (side_open(&a, "A", &v) && side_open(&b, "B", &v))
		run_all(&a, &b, true, "one-viad");
	side_close(&a);
	side_close(&b);
	viad_stop(&v);
}

static bool
link_up(VIP_NIC_HANDLE nic, unsigned ms)
{
	uint64_t end = h_now_ms() + ms;
	VIP_DPDK_PORT_INFO pi;

	do {
		if (VipQuerySystemManagementInfo(nic, VIP_DPDK_SMI_PORT, &pi) == VIP_SUCCESS &&
		    pi.LinkUp)
			return true;
		h_sleep_ms(20);
	} while (h_now_ms() < end);
	return false;
}

static void
test_two_viads(void)
{
	long ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct viad_proc va, vb;
	struct side a, b;

	h_note("==== two viads joined by net_memif, each on a CPU of its own");
	/* two poll lcores on one CPU take turns at each window of frames */
	if (ncpus > 1)
		h_viad_set_cpu(0);
	if (!viad_start_memif_with(&va, "A", true, patient_timers))
		return;
	if (ncpus > 1)
		h_viad_set_cpu((int)ncpus - 1);
	if (!viad_start_memif_with(&vb, "B", false, patient_timers)) {
		h_viad_set_cpu(-1);
		viad_stop(&va);
		return;
	}
	h_viad_set_cpu(-1);
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));

	if (side_open(&a, "A", &va) && side_open(&b, "B", &vb) &&
	    CHECK(link_up(a.nic, 10000) && link_up(b.nic, 10000), "the memif link is up"))
		run_all(&a, &b, false, "two-viads");
	side_close(&a);
	side_close(&b);
	viad_stop(&va);
	viad_stop(&vb);
}

int
main(int argc, char **argv)
{
	h_init(argc, argv, 280);
	test_one_viad();
	test_two_viads();
	return h_finish();
}
