/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file glue_faulty.c
 * @brief Module "faulty": wraps an inner port of another module (loopback,
 *        ethdev) and drops, duplicates, reorders, delays and corrupts the
 *        frames crossing it, so that the transport's recovery paths can be
 *        exercised, and a failing run replayed, on any machine.
 *
 * Design:
 *  - probe opens the inner port with via_port_open(conf->inner_glue) and the
 *    same configuration minus the fault parameters (devargs, MAC, MTU,
 *    queues and pool are forwarded).  The faulty port has no ethdev of its
 *    own (port_id stays VIA_PORT_ID_NONE); start, stop, link, stats, MAC and
 *    MTU are the inner port's.  Inner stats count what the inner port saw:
 *    rx before rx faults, tx after tx faults.
 *  - Every queue has, per direction, its own state (PRNGs, held frame,
 *    delay queue, output FIFO, counters).  The PRNGs are per queue rather
 *    than per port so that queues used by different threads share nothing;
 *    with one queue this is "one PRNG per port per direction".
 *  - Decisions come from xorshift64* seeded from (seed, direction, queue).
 *    A frame always consumes five draws (drop, dup, corrupt, delay,
 *    reorder), even when an earlier decision made the later ones moot, so
 *    the n-th frame of a queue gets the same decisions whatever the
 *    probabilities and whatever happened to earlier frames: a run is
 *    replayed by replaying the frame sequence with the same seed.  Bit
 *    positions for corruption come from a second generator, so changing
 *    corrupt_bits does not shift the decisions either.
 *  - Order of the faults for one frame: drop (freed); dup (a copy of the
 *    intact frame goes out in its place); corrupt (bits flipped in place,
 *    after making a private copy if the buffer is shared: the sender may
 *    keep a reference for retransmission, and a wire fault must not reach
 *    it); delay (into the delay queue, released by a later burst of the
 *    same queue and direction once delay_us have passed); reorder (held and
 *    sent right after the next frame; a burst that brings no new frame
 *    flushes it, so the last frame of a conversation is not stuck).
 *  - Frames ready to go wait in a per-queue output FIFO.  rx: inner frames
 *    are processed only while the caller's array has room, at most
 *    FQ_BURST at a time, and what does not fit (duplicates) is returned by
 *    the next call.  tx: frames are consumed (ownership taken) as long as
 *    the FIFO has room; what the inner port does not take stays in the
 *    FIFO, in order, and is retried by the next tx_burst; while the FIFO is
 *    not empty no new frame is consumed, which keeps the inner port's
 *    backpressure visible to the caller.  Dropped frames are freed and
 *    reported as consumed.
 *  - Held, delayed and queued tx frames only move when tx_burst is called:
 *    a caller that may stop transmitting should call tx_burst(q, NULL, 0)
 *    from its poll loop (rx frames move on every rx poll anyway).
 *  - All probabilities of a direction zero: that direction is a
 *    pass-through (one inner call, frames counted in seen only).
 *  - Stop keeps held frames; they move again after start.  remove frees
 *    them and closes the inner port.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_branch_prediction.h>
#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_malloc.h>

#include "via_fault.h"
#include "glue_internal.h"

#define FQ_BURST    32     /* inner frames processed per step */
#define FQ_OUT_MAX  128    /* output FIFO; >= 2 * FQ_BURST + 1 */

_Static_assert(FQ_OUT_MAX >= 2 * FQ_BURST + 1, "a step must fit the FIFO");
_Static_assert((FQ_OUT_MAX & (FQ_OUT_MAX - 1)) == 0, "FIFO mask");
_Static_assert((VIA_FAULT_DELAY_QUEUE & (VIA_FAULT_DELAY_QUEUE - 1)) == 0,
	       "delay queue mask");

enum fq_dir { FQ_RX = 0, FQ_TX = 1 };

struct fq_delayed {
	struct rte_mbuf *m;
	uint64_t due;      /* timer cycles */
};

/* One direction of one queue. */
struct fq_queue {
	uint64_t rng;                  /* decisions */
	uint64_t bit_rng;              /* corruption bit positions */
	struct rte_mbuf *held;         /* reorder: waits for the next frame */
	/* delay queue, FIFO: delay_us is constant and the clock monotonic,
	 * so release times never decrease */
	uint32_t dhead, dcount;
	/* output FIFO: frames ready to go */
	uint32_t ohead, ocount;
	struct via_fault_dir_stats st; /* written by the owner, read atomically */
	struct rte_mbuf *out[FQ_OUT_MAX];
	struct fq_delayed delay[VIA_FAULT_DELAY_QUEUE];
} __rte_cache_aligned;

struct fq_priv {
	struct via_port *inner;
	struct fq_queue *q[2];         /* [FQ_RX]: nb_rxq, [FQ_TX]: nb_txq */
	struct via_fault_conf fc;
	bool active[2];                /* some probability of the dir is > 0 */
	bool started;                  /* atomic access */
	uint64_t delay_cycles;
	struct rte_mempool *mp;        /* copies; NULL = the frame's pool */
};

/* The counters are read by other threads (via_port_faults_get()). */
#define FQ_ADD(field, v) \
	__atomic_store_n(&(field), (field) + (v), __ATOMIC_RELAXED)

/* ------------------------------------------------------------------------ */
/* PRNG                                                                     */
/* ------------------------------------------------------------------------ */

/* splitmix64: spreads a seed so that nearby seeds give unrelated streams. */
static uint64_t
fq_mix(uint64_t x)
{
	x += UINT64_C(0x9e3779b97f4a7c15);
	x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
	return x ^ (x >> 31);
}

static uint64_t
fq_seed(uint64_t seed, enum fq_dir dir, uint16_t q, uint64_t stream)
{
	uint64_t s = fq_mix(fq_mix(fq_mix(seed) ^ ((uint64_t)dir + 1)) ^
			    (((uint64_t)q << 8) | stream));

	return s != 0 ? s : UINT64_C(0x2545f4914f6cdd1d); /* 0 is a fixpoint */
}

/* xorshift64* (Vigna); the high bits are the good ones. */
static inline uint64_t
fq_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * UINT64_C(0x2545f4914f6cdd1d);
}

/* Uniform in [0, range), range < 2^32 (multiply-shift, no division). */
static inline uint32_t
fq_below(uint64_t *s, uint32_t range)
{
	return (uint32_t)(((fq_next(s) >> 32) * (uint64_t)range) >> 32);
}

static inline bool
fq_hit(uint64_t *s, uint32_t ppm)
{
	return fq_below(s, VIA_FAULT_PPM_MAX) < ppm;
}

/* ------------------------------------------------------------------------ */
/* FIFOs                                                                    */
/* ------------------------------------------------------------------------ */

/* The caller has checked the room (see FQ_OUT_MAX). */
static inline void
fq_out_push(struct fq_queue *fq, struct rte_mbuf *m)
{
	fq->out[(fq->ohead + fq->ocount) & (FQ_OUT_MAX - 1)] = m;
	fq->ocount++;
}

static inline uint32_t
fq_out_room(const struct fq_queue *fq)
{
	return FQ_OUT_MAX - fq->ocount;
}

/* Move due delayed frames to the output FIFO, oldest first. */
static void
fq_release_delayed(struct fq_queue *fq, uint64_t now)
{
	while (fq->dcount != 0 && fq_out_room(fq) != 0) {
		struct fq_delayed *d = &fq->delay[fq->dhead];

		if (d->due > now)
			break;
		fq_out_push(fq, d->m);
		fq->dhead = (fq->dhead + 1) & (VIA_FAULT_DELAY_QUEUE - 1);
		fq->dcount--;
	}
}

static void
fq_queue_free(struct fq_queue *fq)
{
	if (fq->held != NULL)
		rte_pktmbuf_free(fq->held);
	fq->held = NULL;
	for (; fq->dcount != 0; fq->dcount--) {
		rte_pktmbuf_free(fq->delay[fq->dhead].m);
		fq->dhead = (fq->dhead + 1) & (VIA_FAULT_DELAY_QUEUE - 1);
	}
	for (; fq->ocount != 0; fq->ocount--) {
		rte_pktmbuf_free(fq->out[fq->ohead]);
		fq->ohead = (fq->ohead + 1) & (FQ_OUT_MAX - 1);
	}
}

/* ------------------------------------------------------------------------ */
/* Faults                                                                   */
/* ------------------------------------------------------------------------ */

/* Could someone else see a write to this frame's data? */
static bool
fq_is_shared(const struct rte_mbuf *m)
{
	for (; m != NULL; m = m->next)
		if (!RTE_MBUF_DIRECT(m) || rte_mbuf_refcnt_read(m) != 1)
			return true;
	return false;
}

static void
fq_flip(struct rte_mbuf *m, uint32_t off, uint8_t mask)
{
	while (off >= m->data_len) {
		off -= m->data_len;
		m = m->next;
	}
	*rte_pktmbuf_mtod_offset(m, uint8_t *, off) ^= mask;
}

/*
 * Flip corrupt_bits distinct bits of the configured region of m.
 * Returns the number of bits flipped (0: empty region).
 */
static uint32_t
fq_corrupt_bits(const struct fq_priv *fp, struct fq_queue *fq,
		struct rte_mbuf *m)
{
	const uint32_t via_end = RTE_ETHER_HDR_LEN + VIA_FAULT_VIA_HDR_LEN;
	uint32_t start = RTE_ETHER_HDR_LEN, end = m->pkt_len;
	uint32_t pos[VIA_FAULT_CORRUPT_BITS_MAX];
	uint32_t nbits, want, i, j;

	switch (fp->fc.corrupt_where) {
	case VIA_FAULT_WHERE_HEADER:
		end = RTE_MIN(end, via_end);
		break;
	case VIA_FAULT_WHERE_PAYLOAD:
		start = via_end;
		break;
	default:
		break;
	}
	if (end <= start)
		return 0;
	nbits = (end - start) * 8;
	want = fp->fc.corrupt_bits;
	if (want >= nbits) {
		/* the whole region, and "exactly want bits" cannot hold */
		for (i = start; i < end; i++)
			fq_flip(m, i, 0xff);
		return nbits;
	}
	/* distinct positions: rejection, want <= 64 and want < nbits */
	for (i = 0; i < want; i++) {
		uint32_t b;

		do {
			b = fq_below(&fq->bit_rng, nbits);
			for (j = 0; j < i && pos[j] != b; j++)
				;
		} while (j < i);
		pos[i] = b;
		fq_flip(m, start + b / 8, (uint8_t)(1u << (b % 8)));
	}
	return want;
}

/*
 * Apply the faults of one direction to frame m, which the injector now
 * owns; frames that go on are pushed to the output FIFO (at most 3 pushes:
 * the caller guarantees the room), into the delay queue, or held.
 */
static void
fq_apply(struct fq_priv *fp, struct fq_queue *fq,
	 const struct via_fault_dir_conf *dc, struct rte_mbuf *m, uint64_t now)
{
	bool drop, dup, corrupt, delay, reorder;

	/* all draws first: the n-th frame's decisions never depend on what
	 * happened to earlier ones */
	drop = fq_hit(&fq->rng, dc->drop_ppm);
	dup = fq_hit(&fq->rng, dc->dup_ppm);
	corrupt = fq_hit(&fq->rng, dc->corrupt_ppm);
	delay = fq_hit(&fq->rng, dc->delay_ppm);
	reorder = fq_hit(&fq->rng, dc->reorder_ppm);
	FQ_ADD(fq->st.seen, 1);

	if (drop) {
		rte_pktmbuf_free(m);
		FQ_ADD(fq->st.dropped, 1);
		return;
	}
	if (dup) {
		struct rte_mbuf *c = rte_pktmbuf_copy(m, fp->mp != NULL ?
						      fp->mp : m->pool,
						      0, UINT32_MAX);

		if (c != NULL) {
			fq_out_push(fq, c);
			FQ_ADD(fq->st.duplicated, 1);
		} else {
			FQ_ADD(fq->st.nomem, 1);
		}
	}
	if (corrupt) {
		struct rte_mbuf *w = m;
		uint32_t n;

		if (fq_is_shared(m)) {
			w = rte_pktmbuf_copy(m, fp->mp != NULL ?
					     fp->mp : m->pool, 0, UINT32_MAX);
			if (w == NULL)
				FQ_ADD(fq->st.nomem, 1);
			else
				rte_pktmbuf_free(m); /* drop our reference */
		}
		if (w != NULL) {
			m = w;
			n = fq_corrupt_bits(fp, fq, m);
			if (n != 0) {
				FQ_ADD(fq->st.corrupted, 1);
				FQ_ADD(fq->st.bits_flipped, n);
			}
		}
	}
	if (delay) {
		if (fq->dcount == VIA_FAULT_DELAY_QUEUE) {
			rte_pktmbuf_free(m);
			FQ_ADD(fq->st.delay_overflow, 1);
		} else {
			struct fq_delayed *d = &fq->delay[(fq->dhead +
				fq->dcount) & (VIA_FAULT_DELAY_QUEUE - 1)];

			d->m = m;
			d->due = now + fp->delay_cycles;
			fq->dcount++;
			FQ_ADD(fq->st.delayed, 1);
		}
		return;
	}
	if (fq->held != NULL) {
		/* the held frame goes right after this one */
		fq_out_push(fq, m);
		fq_out_push(fq, fq->held);
		fq->held = NULL;
		FQ_ADD(fq->st.reordered, 1);
		return;
	}
	if (reorder) {
		fq->held = m;
		return;
	}
	fq_out_push(fq, m);
}

/* A burst that brought no new frame: a held frame goes out unswapped. */
static inline void
fq_flush_held(struct fq_queue *fq)
{
	if (fq->held != NULL && fq_out_room(fq) != 0) {
		fq_out_push(fq, fq->held);
		fq->held = NULL;
	}
}

/* ------------------------------------------------------------------------ */
/* Data path                                                                */
/* ------------------------------------------------------------------------ */

static inline bool
fq_is_started(const struct fq_priv *fp)
{
	return __atomic_load_n(&fp->started, __ATOMIC_ACQUIRE);
}

static uint16_t
fq_rx_burst(struct via_port *port, uint16_t q, struct rte_mbuf **pkts,
	    uint16_t n)
{
	struct fq_priv *fp = port->priv;
	struct rte_mbuf *in[FQ_BURST];
	struct fq_queue *fq;
	uint16_t nb, i, out;
	uint64_t now = 0;

	if (unlikely(!fq_is_started(fp) || q >= port->nb_rxq || n == 0))
		return 0;
	fq = &fp->q[FQ_RX][q];
	if (likely(!fp->active[FQ_RX])) {
		nb = via_port_rx_burst(fp->inner, q, pkts, n);
		FQ_ADD(fq->st.seen, nb);
		return nb;
	}

	if (fq->dcount != 0 || fp->fc.rx.delay_ppm != 0)
		now = rte_get_timer_cycles();
	fq_release_delayed(fq, now);
	/* new frames only while the caller has room: duplicates may still
	 * overflow into the FIFO, bounded by 2 * FQ_BURST + 1 */
	if (fq->ocount < n) {
		/* k frames push at most 2k + 1 (copies, and a held frame) */
		uint32_t room = fq_out_room(fq);
		uint32_t k = RTE_MIN((uint32_t)(n - fq->ocount),
				     room != 0 ? (room - 1) / 2 : 0);

		k = RTE_MIN(k, (uint32_t)FQ_BURST);
		if (k != 0) {
			nb = via_port_rx_burst(fp->inner, q, in, (uint16_t)k);
			for (i = 0; i < nb; i++)
				fq_apply(fp, fq, &fp->fc.rx, in[i], now);
			if (nb == 0)
				fq_flush_held(fq);
		}
	}
	out = (uint16_t)RTE_MIN((uint32_t)n, fq->ocount);
	for (i = 0; i < out; i++) {
		pkts[i] = fq->out[fq->ohead];
		fq->ohead = (fq->ohead + 1) & (FQ_OUT_MAX - 1);
	}
	fq->ocount -= out;
	return out;
}

/* Hand the output FIFO to the inner port, oldest first. */
static void
fq_out_tx(struct fq_priv *fp, struct fq_queue *fq, uint16_t q)
{
	while (fq->ocount != 0) {
		uint32_t chunk = RTE_MIN(fq->ocount, FQ_OUT_MAX - fq->ohead);
		uint16_t sent;

		sent = via_port_tx_burst(fp->inner, q, &fq->out[fq->ohead],
					 (uint16_t)chunk);
		fq->ohead = (fq->ohead + sent) & (FQ_OUT_MAX - 1);
		fq->ocount -= sent;
		if (sent < chunk)
			break; /* inner port full: retried by the next call */
	}
}

static uint16_t
fq_tx_burst(struct via_port *port, uint16_t q, struct rte_mbuf **pkts,
	    uint16_t n)
{
	struct fq_priv *fp = port->priv;
	struct fq_queue *fq;
	uint16_t done = 0;
	uint64_t now = 0;

	if (unlikely(!fq_is_started(fp) || q >= port->nb_txq))
		return 0;
	fq = &fp->q[FQ_TX][q];
	if (likely(!fp->active[FQ_TX])) {
		done = via_port_tx_burst(fp->inner, q, pkts, n);
		FQ_ADD(fq->st.seen, done);
		return done;
	}

	if (fq->dcount != 0 || fp->fc.tx.delay_ppm != 0)
		now = rte_get_timer_cycles();
	fq_release_delayed(fq, now);
	if (n == 0)
		fq_flush_held(fq);
	fq_out_tx(fp, fq, q);
	/* consume only while the inner port keeps up: its backpressure
	 * reaches the caller one step late, never unbounded */
	while (done < n && fq->ocount == 0) {
		uint16_t k = (uint16_t)RTE_MIN(n - done, FQ_BURST);
		uint16_t i;

		for (i = 0; i < k; i++)
			fq_apply(fp, fq, &fp->fc.tx, pkts[done + i], now);
		done += k;
		fq_out_tx(fp, fq, q);
	}
	return done;
}

/* ------------------------------------------------------------------------ */
/* Control path                                                             */
/* ------------------------------------------------------------------------ */

static bool
fq_dir_active(const struct via_fault_dir_conf *d)
{
	return (d->drop_ppm | d->dup_ppm | d->reorder_ppm | d->corrupt_ppm |
		d->delay_ppm) != 0;
}

static bool
fq_dir_valid(const struct via_fault_dir_conf *d)
{
	return d->drop_ppm <= VIA_FAULT_PPM_MAX &&
	       d->dup_ppm <= VIA_FAULT_PPM_MAX &&
	       d->reorder_ppm <= VIA_FAULT_PPM_MAX &&
	       d->corrupt_ppm <= VIA_FAULT_PPM_MAX &&
	       d->delay_ppm <= VIA_FAULT_PPM_MAX;
}

/**
 * probe slot.  Errors: -EINVAL (a probability above VIA_FAULT_PPM_MAX,
 * corrupt_bits above VIA_FAULT_CORRUPT_BITS_MAX, delay_us above
 * VIA_FAULT_DELAY_US_MAX, corrupt_where not an enum via_fault_where, inner
 * glue "faulty"), -ENOMEM, and via_port_open() errors of the inner port.
 */
static int
fq_probe(struct via_port *port, const struct via_glue_port_conf *conf)
{
	struct fq_priv *fp = port->priv;
	struct via_glue_port_conf ic = *conf;
	const char *glue = conf->inner_glue != NULL ? conf->inner_glue :
			   "loopback";
	char iname[VIA_GLUE_NAME_MAX];
	unsigned int d, q;
	int rc;

	if (conf->faults != NULL)
		fp->fc = *conf->faults;
	else
		memset(&fp->fc, 0, sizeof(fp->fc)); /* transparent */
	if (!fq_dir_valid(&fp->fc.rx) || !fq_dir_valid(&fp->fc.tx) ||
	    fp->fc.corrupt_bits > VIA_FAULT_CORRUPT_BITS_MAX ||
	    fp->fc.delay_us > VIA_FAULT_DELAY_US_MAX ||
	    fp->fc.corrupt_where > VIA_FAULT_WHERE_PAYLOAD)
		return -EINVAL;
	/* wrapping a fault injector in another adds nothing but confusion */
	if (strcmp(glue, "faulty") == 0)
		return -EINVAL;
	if (fp->fc.corrupt_bits == 0)
		fp->fc.corrupt_bits = 1;
	fp->active[FQ_RX] = fq_dir_active(&fp->fc.rx);
	fp->active[FQ_TX] = fq_dir_active(&fp->fc.tx);
	fp->delay_cycles = (uint64_t)fp->fc.delay_us * rte_get_timer_hz() /
			   US_PER_S;
	fp->mp = conf->mp;

	for (d = FQ_RX; d <= FQ_TX; d++) {
		uint16_t nq = d == FQ_RX ? port->nb_rxq : port->nb_txq;

		fp->q[d] = rte_zmalloc_socket("via_faulty_q",
					      nq * sizeof(struct fq_queue),
					      RTE_CACHE_LINE_SIZE,
					      port->socket_id);
		if (fp->q[d] == NULL) {
			rc = -ENOMEM;
			goto fail;
		}
		for (q = 0; q < nq; q++) {
			fp->q[d][q].rng = fq_seed(fp->fc.seed, d, q, 0);
			fp->q[d][q].bit_rng = fq_seed(fp->fc.seed, d, q, 1);
		}
	}

	/* the inner name only shows in logs: truncation is harmless */
	snprintf(iname, sizeof(iname), "%.*s/inner",
		 (int)(sizeof(iname) - sizeof("/inner")), conf->name);
	ic.name = iname;
	ic.faults = NULL;
	ic.inner_glue = NULL;
	rc = via_port_open(&fp->inner, glue, &ic);
	if (rc < 0) {
		GLUE_LOG(ERR, "%s: cannot open inner %s port: %s", port->name,
			 glue, rte_strerror(-rc));
		goto fail;
	}
	/* its own copies (dup, corrupt) take chains too; one viad exercises
	 * its recovery on itself: its own frames cross; delayed and reordered
	 * frames go out on a later burst, even an empty one */
	port->caps = (fp->inner->caps & (VIA_PORT_CAP_TX_BY_VA | VIA_PORT_CAP_LOOPBACK)) |
		     VIA_PORT_CAP_SELF_VIA_PORT | VIA_PORT_CAP_TX_KICK;
	return 0;

fail:
	rte_free(fp->q[FQ_RX]);
	rte_free(fp->q[FQ_TX]);
	fp->q[FQ_RX] = fp->q[FQ_TX] = NULL;
	return rc;
}

static void
fq_remove(struct via_port *port)
{
	struct fq_priv *fp = port->priv;
	unsigned int q;

	for (q = 0; q < port->nb_rxq; q++)
		fq_queue_free(&fp->q[FQ_RX][q]);
	for (q = 0; q < port->nb_txq; q++)
		fq_queue_free(&fp->q[FQ_TX][q]);
	rte_free(fp->q[FQ_RX]);
	rte_free(fp->q[FQ_TX]);
	fp->q[FQ_RX] = fp->q[FQ_TX] = NULL;
	via_port_close(fp->inner);
	fp->inner = NULL;
}

static int
fq_start(struct via_port *port)
{
	struct fq_priv *fp = port->priv;
	int rc = via_port_start(fp->inner);

	if (rc == 0)
		__atomic_store_n(&fp->started, true, __ATOMIC_RELEASE);
	return rc;
}

static void
fq_stop(struct via_port *port)
{
	struct fq_priv *fp = port->priv;

	/* bursts see the flag before the inner port goes down */
	__atomic_store_n(&fp->started, false, __ATOMIC_RELEASE);
	via_port_stop(fp->inner);
}

static int
fq_mac_addr(struct via_port *port, struct rte_ether_addr *mac)
{
	const struct fq_priv *fp = port->priv;

	rte_ether_addr_copy(via_port_mac(fp->inner), mac);
	return 0;
}

static int
fq_mtu_get(struct via_port *port, uint16_t *mtu)
{
	const struct fq_priv *fp = port->priv;

	*mtu = via_port_mtu(fp->inner);
	return 0;
}

static int
fq_link_get(struct via_port *port, struct via_port_link *link)
{
	const struct fq_priv *fp = port->priv;

	return via_port_link_get(fp->inner, link);
}

static int
fq_stats_get(struct via_port *port, struct via_port_stats *st)
{
	const struct fq_priv *fp = port->priv;

	return via_port_stats_get(fp->inner, st);
}

static void
fq_dir_sum(struct via_fault_dir_stats *dst, const struct fq_queue *qs,
	   uint16_t nq)
{
	uint16_t q;

	memset(dst, 0, sizeof(*dst));
	for (q = 0; q < nq; q++) {
		const struct via_fault_dir_stats *s = &qs[q].st;

#define FQ_SUM(f) (dst->f += __atomic_load_n(&s->f, __ATOMIC_RELAXED))
		FQ_SUM(seen);
		FQ_SUM(dropped);
		FQ_SUM(duplicated);
		FQ_SUM(reordered);
		FQ_SUM(delayed);
		FQ_SUM(corrupted);
		FQ_SUM(bits_flipped);
		FQ_SUM(delay_overflow);
		FQ_SUM(nomem);
#undef FQ_SUM
	}
}

int
via_port_faults_get(struct via_port *p, struct via_fault_stats *st)
{
	const struct fq_priv *fp;

	if (p == NULL || st == NULL)
		return -EINVAL;
	/* the resolved table of "faulty" is the only one with this slot */
	if (p->ops->rx_burst != fq_rx_burst)
		return -ENOTSUP;
	fp = p->priv;
	fq_dir_sum(&st->rx, fp->q[FQ_RX], p->nb_rxq);
	fq_dir_sum(&st->tx, fp->q[FQ_TX], p->nb_txq);
	return 0;
}

/* needs slot: the inner port's, which receives into the pool. */
static int
fq_needs(const struct via_glue_port_conf *conf, struct via_port_needs *needs)
{
	return via_glue_needs(conf->inner_glue != NULL ? conf->inner_glue : "loopback", conf,
			      needs);
}

static const struct via_glue_module faulty_module = {
	.abi_version = VIA_GLUE_ABI_VERSION,
	.name = "faulty",
	.ops = {
		.probe = fq_probe,
		.remove = fq_remove,
		.start = fq_start,
		.stop = fq_stop,
		.mac_addr = fq_mac_addr,
		.mtu_get = fq_mtu_get,
		.link_get = fq_link_get,
		.stats_get = fq_stats_get,
		.needs = fq_needs,
		.rx_burst = fq_rx_burst,
		.tx_burst = fq_tx_burst,
	},
	.priv_size = sizeof(struct fq_priv),
};

VIA_GLUE_MODULE_REGISTER(faulty_module)
