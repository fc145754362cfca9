/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit test for the "faulty" glue module (pmd_glue/glue_faulty.c): a fault
 * injector wrapped around a loopback port (and once around a net_ring
 * ethdev).  Checks, per direction: drop/dup/reorder/corrupt/delay rates
 * within statistical bounds for a fixed seed; the same seed replays exactly
 * the same faults; corrupted frames differ in exactly corrupt_bits bits, in
 * the configured region; delayed frames come out one rx call or delay_us
 * later; zero probabilities are a transparent pass-through; the counters
 * match what the frames show; probe errors; no mbuf leaked.
 *
 * Runs without hugepages:
 *   test_faulty [extra EAL args]
 * Exit status 0 = all checks passed.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "via_fault.h"
#include "test_common.h"
#include "test_eal.h"

#define CHECK_U64(a, b) do {						\
	uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);		\
	test_checks++;						\
	if (a_ != b_) {							\
		test_failures++;					\
		fprintf(stderr, "FAIL %s:%d: %s == %s (%" PRIu64	\
			" != %" PRIu64 ")\n", __FILE__, __LINE__,	\
			#a, #b, a_, b_);				\
	}								\
} while (0)

#define NB_MBUF 4095
#define BURST 32
#define N_RATE 20000         /* frames per rate test */
#define ETHERTYPE_TEST 0x88b5
#define VIA_END (RTE_ETHER_HDR_LEN + VIA_FAULT_VIA_HDR_LEN)

static struct rte_mempool *mp;

/* ------------------------------------------------------------------------ */
/* Frames: Ethernet header, then the 32-bit sequence number, then a pattern */
/* ------------------------------------------------------------------------ */

static uint16_t
frame_len(unsigned int seq)
{
	return (uint16_t)(100 + (seq * 37) % 1400);
}

static uint8_t
frame_byte(unsigned int seq, unsigned int off)
{
	if (off < RTE_ETHER_HDR_LEN + 4)
		return (uint8_t)(seq >> (8 * (RTE_ETHER_HDR_LEN + 3 - off)));
	return (uint8_t)(seq * 131 + off * 7 + 1);
}

static void
frame_fill(uint8_t *d, unsigned int seq, uint16_t len,
	   const struct rte_ether_addr *dst)
{
	struct rte_ether_hdr *eh = (struct rte_ether_hdr *)d;
	unsigned int i;

	rte_ether_addr_copy(dst, &eh->dst_addr);
	memset(&eh->src_addr, 0, sizeof(eh->src_addr));
	eh->src_addr.addr_bytes[0] = 0x02;
	eh->src_addr.addr_bytes[5] = 0xee;
	eh->ether_type = rte_cpu_to_be_16(ETHERTYPE_TEST);
	for (i = RTE_ETHER_HDR_LEN; i < len; i++)
		d[i] = frame_byte(seq, i);
}

static struct rte_mbuf *
make_frame(unsigned int seq, uint16_t len, const struct rte_ether_addr *dst)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
	uint8_t *d;

	if (m == NULL)
		return NULL;
	d = (uint8_t *)rte_pktmbuf_append(m, len);
	if (d == NULL) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	frame_fill(d, seq, len, dst);
	return m;
}

static bool
frame_ok(const struct rte_mbuf *m, unsigned int seq, uint16_t len,
	 const struct rte_ether_addr *dst)
{
	uint8_t want[2048];

	if (m->pkt_len != len || m->nb_segs != 1 || len > sizeof(want))
		return false;
	frame_fill(want, seq, len, dst);
	return memcmp(rte_pktmbuf_mtod(m, const uint8_t *), want, len) == 0;
}

/* The sequence field of a received frame (0 if too short). */
static uint32_t
seq_of(const struct rte_mbuf *m)
{
	const uint8_t *d = rte_pktmbuf_mtod(m, const uint8_t *);

	if (m->data_len < RTE_ETHER_HDR_LEN + 4)
		return 0;
	return (uint32_t)d[14] << 24 | (uint32_t)d[15] << 16 |
	       (uint32_t)d[16] << 8 | d[17];
}

static unsigned int
popcount8(uint8_t x)
{
	return (unsigned int)__builtin_popcount(x);
}

/* ------------------------------------------------------------------------ */
/* Traffic: frames 0..n-1 out, everything received recorded                 */
/* ------------------------------------------------------------------------ */

struct rec {
	uint32_t seq;        /* sequence field of the received frame */
	uint16_t len;
	uint16_t diff_eth;   /* bits differing from frame #index: [0, 14) */
	uint16_t diff_hdr;   /* [14, 62) */
	uint16_t diff_pay;   /* [62, len) */
	uint64_t hash;       /* FNV-1a of the frame */
};

struct run {
	struct rec *r;
	unsigned int nr, max;
	unsigned int rx_calls;
	const struct rte_ether_addr *dst;
};

static void
record(struct run *ru, const struct rte_mbuf *m)
{
	uint8_t want[2048];
	const uint8_t *d = rte_pktmbuf_mtod(m, const uint8_t *);
	struct rec *r;
	uint64_t h = UINT64_C(0xcbf29ce484222325);
	unsigned int i;
	uint16_t len;

	CHECK(m->nb_segs == 1);
	if (ru->nr >= ru->max) {
		CHECK(ru->nr < ru->max); /* more frames than expected */
		return;
	}
	r = &ru->r[ru->nr];
	memset(r, 0, sizeof(*r));
	r->len = len = (uint16_t)m->pkt_len;
	for (i = 0; i < len; i++)
		h = (h ^ d[i]) * UINT64_C(0x100000001b3);
	r->hash = h;
	r->seq = seq_of(m);
	/* against frame number ru->nr: meaningful when order is kept */
	if (len <= sizeof(want)) {
		frame_fill(want, ru->nr, len, ru->dst);
		for (i = 0; i < len; i++) {
			unsigned int b = popcount8(d[i] ^ want[i]);

			if (i < RTE_ETHER_HDR_LEN)
				r->diff_eth = (uint16_t)(r->diff_eth + b);
			else if (i < VIA_END)
				r->diff_hdr = (uint16_t)(r->diff_hdr + b);
			else
				r->diff_pay = (uint16_t)(r->diff_pay + b);
		}
	}
	ru->nr++;
}

/* One rx call; returns the number of frames it brought. */
static unsigned int
rx_once(struct via_port *p, struct run *ru)
{
	struct rte_mbuf *rx[BURST];
	uint16_t n, i;

	n = via_port_rx_burst(p, 0, rx, BURST);
	ru->rx_calls++;
	for (i = 0; i < n; i++)
		record(ru, rx[i]);
	rte_pktmbuf_free_bulk(rx, n);
	return n;
}

/*
 * Send frames 0..n-1 (one rx call after each tx call, so that the inner
 * port is never found empty and the idle flush of a held frame only
 * happens at the end), then drain: tx flush calls and rx calls until
 * nothing came for drain_us and at least 64 calls.
 */
static void
traffic(struct via_port *p, unsigned int n, struct run *ru, uint32_t drain_us)
{
	struct rte_mbuf *tx[BURST];
	unsigned int next = 0, pend = 0, guard = 0, idle = 0;
	uint64_t hz = rte_get_timer_hz(), last;

	while (next < n || pend != 0) {
		uint16_t sent;

		while (pend < BURST && next < n) {
			tx[pend] = make_frame(next, frame_len(next), ru->dst);
			if (tx[pend] == NULL) {
				CHECK(tx[pend] != NULL);
				goto out;
			}
			pend++;
			next++;
		}
		sent = via_port_tx_burst(p, 0, tx, (uint16_t)pend);
		memmove(tx, tx + sent, (pend - sent) * sizeof(tx[0]));
		pend -= sent;
		rx_once(p, ru);
		if (++guard > 100 * n + 1000) {
			CHECK(guard <= 100 * n + 1000); /* stalled */
			goto out;
		}
	}
out:
	rte_pktmbuf_free_bulk(tx, pend);
	last = rte_get_timer_cycles();
	for (guard = 0; guard < 10000000; guard++) {
		via_port_tx_burst(p, 0, NULL, 0);
		if (rx_once(p, ru) != 0) {
			last = rte_get_timer_cycles();
			idle = 0;
		} else if (++idle >= 64 && rte_get_timer_cycles() - last >
			   (uint64_t)drain_us * hz / 1000000 + hz / 1000) {
			break;
		}
	}
}

static struct via_glue_port_conf
base_conf(const char *name)
{
	struct via_glue_port_conf c;

	memset(&c, 0, sizeof(c));
	c.name = name;
	c.nb_rxq = 1;
	c.nb_txq = 1;
	c.nb_rxd = 256;
	c.nb_txd = 256;
	c.mp = mp;
	c.socket_id = SOCKET_ID_ANY;
	return c;
}

static struct via_port *
open_faulty(const char *name, const struct via_fault_conf *fc)
{
	struct via_glue_port_conf c = base_conf(name);
	struct via_port *p = NULL;

	c.faults = fc;
	c.inner_glue = "loopback";
	CHECK_RC(via_port_open(&p, "faulty", &c), 0);
	if (p != NULL)
		CHECK_RC(via_port_start(p), 0);
	return p;
}

static struct via_fault_dir_conf *
dir_conf(struct via_fault_conf *fc, int tx)
{
	return tx ? &fc->tx : &fc->rx;
}

static const struct via_fault_dir_stats *
dir_stats(const struct via_fault_stats *st, int tx)
{
	return tx ? &st->tx : &st->rx;
}

/* |obs - n p| within 5 standard deviations of a binomial (+1 for p ~ 0) */
static void
check_rate(const char *what, uint64_t obs, unsigned int n, double p)
{
	double expect = n * p, var = n * p * (1 - p);
	double d = (double)obs - expect;

	if (d < 0)
		d = -d;
	d = d > 1 ? d - 1 : 0;
	printf("   %-22s %6" PRIu64 " of %u (expected %.0f, sd^2 %.0f)\n",
	       what, obs, n, expect, var);
	test_checks++;
	if (d * d > 25 * var) {
		test_failures++;
		fprintf(stderr, "FAIL %s: %" PRIu64 " of %u, expected %.1f\n",
			what, obs, n, expect);
	}
}

static unsigned int
count_adjacent_inversions(const struct run *ru)
{
	unsigned int i, k = 0;

	for (i = 1; i < ru->nr; i++)
		if (ru->r[i].seq < ru->r[i - 1].seq)
			k++;
	return k;
}

/* Every seq in [0, n) received exactly once? */
static bool
all_once(const struct run *ru, unsigned int n)
{
	static uint8_t seen[N_RATE * 2];
	unsigned int i;

	if (ru->nr != n || n > sizeof(seen))
		return false;
	memset(seen, 0, n);
	for (i = 0; i < ru->nr; i++) {
		if (ru->r[i].seq >= n || seen[ru->r[i].seq])
			return false;
		seen[ru->r[i].seq] = 1;
	}
	return true;
}

static bool
strictly_increasing(const struct run *ru)
{
	unsigned int i;

	for (i = 1; i < ru->nr; i++)
		if (ru->r[i].seq <= ru->r[i - 1].seq)
			return false;
	return true;
}

static struct rec recs_a[N_RATE * 2 + 64];
static struct rec recs_b[N_RATE * 2 + 64];

static void
run_init(struct run *ru, struct rec *r, unsigned int max, struct via_port *p)
{
	memset(ru, 0, sizeof(*ru));
	ru->r = r;
	ru->max = max;
	ru->dst = via_port_mac(p);
}

/* ------------------------------------------------------------------------ */
/* Pass-through                                                             */
/* ------------------------------------------------------------------------ */

static void
test_passthrough(void)
{
	struct via_glue_port_conf c = base_conf("fq_pt");
	struct via_fault_conf fc;
	struct via_fault_stats fs;
	struct via_port_stats st;
	struct rte_mbuf *tx[BURST], *rx[BURST];
	struct rte_ether_addr ovr;
	struct via_port *p = NULL, *lb = NULL;
	struct run ru;
	unsigned int i, round;
	int variant;

	printf("-- pass-through (zero probabilities)\n");
	for (variant = 0; variant < 2; variant++) {
		/* NULL faults, and non-NULL all-zero probabilities with the
		 * other parameters set */
		memset(&fc, 0, sizeof(fc));
		fc.delay_us = 500;
		fc.corrupt_bits = 7;
		fc.corrupt_where = VIA_FAULT_WHERE_PAYLOAD;
		fc.seed = 99;
		c.faults = variant ? &fc : NULL;
		c.inner_glue = variant ? "loopback" : NULL; /* default */
		p = NULL;
		CHECK_RC(via_port_open(&p, "faulty", &c), 0);
		if (p == NULL)
			return;
		CHECK(strcmp(via_port_glue_name(p), "faulty") == 0);
		CHECK(via_port_id(p) == VIA_PORT_ID_NONE);
		CHECK(via_port_mtu(p) == 9000);          /* loopback's */
		CHECK(via_port_mac(p)->addr_bytes[0] == 0x02);
		/* not started: nothing moves */
		tx[0] = make_frame(0, 100, via_port_mac(p));
		CHECK(via_port_tx_burst(p, 0, tx, 1) == 0);
		rte_pktmbuf_free(tx[0]);
		CHECK(via_port_rx_burst(p, 0, rx, BURST) == 0);
		CHECK_RC(via_port_start(p), 0);
		{
			struct via_port_link l;

			CHECK_RC(via_port_link_get(p, &l), 0);
			CHECK(l.up && l.speed_mbps == 100000);
		}

		/* frames come back in order, unchanged, zero copy */
		for (round = 0; round < 20; round++) {
			uint16_t n;

			for (i = 0; i < BURST; i++)
				tx[i] = make_frame(round * BURST + i,
						   frame_len(i), via_port_mac(p));
			CHECK(via_port_tx_burst(p, 0, tx, BURST) == BURST);
			n = via_port_rx_burst(p, 0, rx, BURST);
			CHECK(n == BURST);
			for (i = 0; i < n; i++) {
				CHECK(rx[i] == tx[i]);
				CHECK(frame_ok(rx[i], round * BURST + i,
					       frame_len(i), via_port_mac(p)));
			}
			rte_pktmbuf_free_bulk(rx, n);
		}
		CHECK_RC(via_port_faults_get(p, &fs), 0);
		CHECK_U64(fs.rx.seen, 20 * BURST);
		CHECK_U64(fs.tx.seen, 20 * BURST);
		CHECK_U64(fs.rx.dropped + fs.rx.duplicated + fs.rx.reordered +
			  fs.rx.delayed + fs.rx.corrupted + fs.rx.nomem +
			  fs.rx.delay_overflow + fs.rx.bits_flipped, 0);
		CHECK_U64(fs.tx.dropped + fs.tx.duplicated + fs.tx.reordered +
			  fs.tx.delayed + fs.tx.corrupted + fs.tx.nomem +
			  fs.tx.delay_overflow + fs.tx.bits_flipped, 0);
		/* stats are the inner port's */
		CHECK_RC(via_port_stats_get(p, &st), 0);
		CHECK_U64(st.tx_packets, 20 * BURST);
		CHECK_U64(st.rx_packets, 20 * BURST);

		/* a longer run through the generic path */
		run_init(&ru, recs_a, RTE_DIM(recs_a), p);
		traffic(p, 3000, &ru, 0);
		CHECK(ru.nr == 3000 && strictly_increasing(&ru));
		for (i = 0; i < ru.nr; i++)
			CHECK(ru.r[i].seq == i && ru.r[i].diff_eth == 0 &&
			      ru.r[i].diff_hdr == 0 && ru.r[i].diff_pay == 0);
		via_port_close(p);
	}

	/* MAC and MTU of the inner port, overrides forwarded */
	memset(&ovr, 0, sizeof(ovr));
	ovr.addr_bytes[0] = 0x02;
	ovr.addr_bytes[5] = 0x77;
	c = base_conf("fq_mac");
	c.mac = &ovr;
	c.mtu = 1500;
	p = NULL;
	CHECK_RC(via_port_open(&p, "faulty", &c), 0);
	if (p != NULL) {
		CHECK(rte_is_same_ether_addr(via_port_mac(p), &ovr));
		CHECK(via_port_mtu(p) == 1500);
		via_port_close(p);
	}

	/* the accessor */
	c = base_conf("fq_lb");
	CHECK_RC(via_port_open(&lb, "loopback", &c), 0);
	CHECK_RC(via_port_faults_get(lb, &fs), -ENOTSUP);
	CHECK_RC(via_port_faults_get(NULL, &fs), -EINVAL);
	CHECK_RC(via_port_faults_get(lb, NULL), -EINVAL);
	via_port_close(lb);
}

/* ------------------------------------------------------------------------ */
/* Rates, per fault and direction                                           */
/* ------------------------------------------------------------------------ */

/* Open @p name with @p fc (seed 12345), pass N_RATE frames through it and
 * read its fault counters; the caller checks and closes. */
static struct via_port *
rate_run(const char *name, struct via_fault_conf *fc, struct run *ru,
	 struct via_fault_stats *fs)
{
	struct via_port *p;

	fc->seed = 12345;
	p = open_faulty(name, fc);
	if (p == NULL)
		return NULL;
	run_init(ru, recs_a, RTE_DIM(recs_a), p);
	traffic(p, N_RATE, ru, 0);
	CHECK_RC(via_port_faults_get(p, fs), 0);
	return p;
}

static void
test_rates(void)
{
	static const char *const dname[] = { "rx", "tx" };
	const double prob = 0.1;
	const uint32_t ppm = 100000;
	struct via_fault_conf fc;
	struct via_fault_stats fs;
	const struct via_fault_dir_stats *ds;
	struct via_port_stats pst;
	struct via_port *p;
	struct run ru;
	char what[64];
	unsigned int i, k;
	int tx;

	printf("-- rates (p = %.2f, %u frames, seed 12345)\n", prob, N_RATE);
	for (tx = 0; tx <= 1; tx++) {
		/* drop */
		memset(&fc, 0, sizeof(fc));
		dir_conf(&fc, tx)->drop_ppm = ppm;
		p = rate_run("fq_drop", &fc, &ru, &fs);
		if (p == NULL)
			return;
		ds = dir_stats(&fs, tx);
		snprintf(what, sizeof(what), "%s dropped", dname[tx]);
		check_rate(what, ds->dropped, N_RATE, prob);
		CHECK_U64(ds->seen, N_RATE);
		CHECK_U64(ru.nr, N_RATE - ds->dropped);
		CHECK(strictly_increasing(&ru));
		CHECK_U64(ds->duplicated + ds->reordered + ds->delayed +
			  ds->corrupted, 0);
		CHECK_RC(via_port_stats_get(p, &pst), 0);
		/* tx drops never reach the inner port; rx drops do */
		CHECK_U64(pst.tx_packets, tx ? N_RATE - ds->dropped : N_RATE);
		via_port_close(p);

		/* dup: the copy comes right before the original */
		memset(&fc, 0, sizeof(fc));
		dir_conf(&fc, tx)->dup_ppm = ppm;
		p = rate_run("fq_dup", &fc, &ru, &fs);
		if (p == NULL)
			return;
		ds = dir_stats(&fs, tx);
		snprintf(what, sizeof(what), "%s duplicated", dname[tx]);
		check_rate(what, ds->duplicated, N_RATE, prob);
		CHECK_U64(ds->seen, N_RATE);
		CHECK_U64(ru.nr, N_RATE + ds->duplicated);
		for (i = 1, k = 0; i < ru.nr; i++) {
			CHECK(ru.r[i].seq >= ru.r[i - 1].seq);
			if (ru.r[i].seq == ru.r[i - 1].seq) {
				CHECK(ru.r[i].hash == ru.r[i - 1].hash);
				k++;
			}
		}
		CHECK_U64(k, ds->duplicated);
		CHECK_U64(ds->nomem, 0);
		via_port_close(p);

		/* reorder: a held frame goes after the next one, so each
		 * reorder is one adjacent inversion; holds happen at rate
		 * p / (1 + p) since the frame after a held one is not held */
		memset(&fc, 0, sizeof(fc));
		dir_conf(&fc, tx)->reorder_ppm = ppm;
		p = rate_run("fq_reorder", &fc, &ru, &fs);
		if (p == NULL)
			return;
		ds = dir_stats(&fs, tx);
		snprintf(what, sizeof(what), "%s reordered", dname[tx]);
		check_rate(what, ds->reordered, N_RATE, prob / (1 + prob));
		CHECK_U64(ds->seen, N_RATE);
		CHECK(all_once(&ru, N_RATE));
		CHECK_U64(count_adjacent_inversions(&ru), ds->reordered);
		for (i = 1; i < ru.nr; i++)   /* swaps of neighbours only */
			if (ru.r[i].seq < ru.r[i - 1].seq)
				CHECK(ru.r[i].seq + 1 == ru.r[i - 1].seq);
		via_port_close(p);

		/* delay, delay_us = 0: out one burst later */
		memset(&fc, 0, sizeof(fc));
		dir_conf(&fc, tx)->delay_ppm = ppm;
		p = rate_run("fq_delay", &fc, &ru, &fs);
		if (p == NULL)
			return;
		ds = dir_stats(&fs, tx);
		snprintf(what, sizeof(what), "%s delayed", dname[tx]);
		check_rate(what, ds->delayed, N_RATE, prob);
		CHECK_U64(ds->seen, N_RATE);
		CHECK_U64(ds->delay_overflow, 0);
		CHECK(all_once(&ru, N_RATE));
		/* a delayed frame is overtaken by the rest of its burst */
		k = count_adjacent_inversions(&ru);
		CHECK(k > 0 && k <= ds->delayed);
		via_port_close(p);

		/* corrupt, 3 bits, anywhere after the Ethernet header */
		memset(&fc, 0, sizeof(fc));
		fc.corrupt_bits = 3;
		fc.corrupt_where = VIA_FAULT_WHERE_ANY;
		dir_conf(&fc, tx)->corrupt_ppm = ppm;
		p = rate_run("fq_corrupt", &fc, &ru, &fs);
		if (p == NULL)
			return;
		ds = dir_stats(&fs, tx);
		snprintf(what, sizeof(what), "%s corrupted", dname[tx]);
		check_rate(what, ds->corrupted, N_RATE, prob);
		CHECK_U64(ds->seen, N_RATE);
		CHECK_U64(ru.nr, N_RATE);
		for (i = 0, k = 0; i < ru.nr; i++) {
			const struct rec *r = &ru.r[i];
			unsigned int bits = r->diff_hdr + r->diff_pay;

			CHECK(r->diff_eth == 0);
			CHECK(r->len == frame_len(i));
			CHECK(bits == 0 || bits == 3);
			k += bits != 0;
		}
		CHECK_U64(k, ds->corrupted);
		CHECK_U64(ds->bits_flipped, 3 * ds->corrupted);
		via_port_close(p);
	}
}

/* Corruption regions and sizes (rx, p = 1). */
static void
test_corrupt_where(void)
{
	static const struct {
		uint8_t where;
		uint16_t bits;
	} cases[] = {
		{ VIA_FAULT_WHERE_HEADER, 1 },
		{ VIA_FAULT_WHERE_HEADER, 5 },
		{ VIA_FAULT_WHERE_PAYLOAD, 1 },
		{ VIA_FAULT_WHERE_PAYLOAD, 64 },
		{ VIA_FAULT_WHERE_ANY, 17 },
	};
	struct via_fault_conf fc;
	struct via_fault_stats fs;
	struct rte_mbuf *m, *rx[BURST];
	struct via_port *p;
	struct run ru;
	unsigned int c, i, bits;
	uint16_t n;

	printf("-- corruption regions\n");
	for (c = 0; c < RTE_DIM(cases); c++) {
		memset(&fc, 0, sizeof(fc));
		fc.seed = 7 + c;
		fc.corrupt_bits = cases[c].bits;
		fc.corrupt_where = cases[c].where;
		fc.rx.corrupt_ppm = VIA_FAULT_PPM_MAX;
		p = open_faulty("fq_where", &fc);
		if (p == NULL)
			return;
		run_init(&ru, recs_a, RTE_DIM(recs_a), p);
		traffic(p, 2000, &ru, 0);
		CHECK_U64(ru.nr, 2000);
		for (i = 0; i < ru.nr; i++) {
			const struct rec *r = &ru.r[i];

			CHECK(r->diff_eth == 0);
			if (cases[c].where == VIA_FAULT_WHERE_HEADER)
				CHECK(r->diff_hdr == cases[c].bits &&
				      r->diff_pay == 0);
			else if (cases[c].where == VIA_FAULT_WHERE_PAYLOAD)
				CHECK(r->diff_hdr == 0 &&
				      r->diff_pay == cases[c].bits);
			else
				CHECK(r->diff_hdr + r->diff_pay ==
				      cases[c].bits);
		}
		CHECK_RC(via_port_faults_get(p, &fs), 0);
		CHECK_U64(fs.rx.corrupted, 2000);
		CHECK_U64(fs.rx.bits_flipped, 2000u * cases[c].bits);
		via_port_close(p);
	}

	/* regions too small: payload of a 60-byte frame is empty (frame
	 * untouched, not counted); a 20-byte frame's header region has 48
	 * bits, fewer than the 64 asked: all of them flip */
	memset(&fc, 0, sizeof(fc));
	fc.corrupt_bits = 64;
	fc.corrupt_where = VIA_FAULT_WHERE_PAYLOAD;
	fc.rx.corrupt_ppm = VIA_FAULT_PPM_MAX;
	p = open_faulty("fq_small", &fc);
	if (p != NULL) {
		m = make_frame(5, 60, via_port_mac(p));
		CHECK(via_port_tx_burst(p, 0, &m, 1) == 1);
		n = via_port_rx_burst(p, 0, rx, BURST);
		CHECK(n == 1);
		if (n == 1)
			CHECK(frame_ok(rx[0], 5, 60, via_port_mac(p)));
		rte_pktmbuf_free_bulk(rx, n);
		CHECK_RC(via_port_faults_get(p, &fs), 0);
		CHECK_U64(fs.rx.corrupted, 0);
		CHECK_U64(fs.rx.seen, 1);
		via_port_close(p);
	}
	fc.corrupt_where = VIA_FAULT_WHERE_HEADER;
	p = open_faulty("fq_small", &fc);
	if (p != NULL) {
		m = make_frame(5, 20, via_port_mac(p));
		CHECK(via_port_tx_burst(p, 0, &m, 1) == 1);
		n = via_port_rx_burst(p, 0, rx, BURST);
		CHECK(n == 1);
		if (n == 1) {
			const uint8_t *d = rte_pktmbuf_mtod(rx[0],
							    const uint8_t *);

			for (i = RTE_ETHER_HDR_LEN, bits = 0; i < 20; i++)
				bits += popcount8(d[i] ^ frame_byte(5, i));
			CHECK(bits == 48);
		}
		rte_pktmbuf_free_bulk(rx, n);
		CHECK_RC(via_port_faults_get(p, &fs), 0);
		CHECK_U64(fs.rx.corrupted, 1);
		CHECK_U64(fs.rx.bits_flipped, 48);
		via_port_close(p);
	}

	/* tx corruption of a frame the sender keeps (retransmission): the
	 * receiver gets a corrupted copy, the sender's buffer is intact */
	memset(&fc, 0, sizeof(fc));
	fc.corrupt_bits = 9;
	fc.tx.corrupt_ppm = VIA_FAULT_PPM_MAX;
	p = open_faulty("fq_shared", &fc);
	if (p != NULL) {
		m = make_frame(9, 300, via_port_mac(p));
		rte_mbuf_refcnt_update(m, 1);
		CHECK(via_port_tx_burst(p, 0, &m, 1) == 1);
		CHECK(rte_mbuf_refcnt_read(m) == 1);
		CHECK(frame_ok(m, 9, 300, via_port_mac(p)));
		n = via_port_rx_burst(p, 0, rx, BURST);
		CHECK(n == 1);
		if (n == 1) {
			const uint8_t *d = rte_pktmbuf_mtod(rx[0],
							    const uint8_t *);
			const uint8_t *o = rte_pktmbuf_mtod(m,
							    const uint8_t *);

			CHECK(rx[0] != m);
			for (i = 0, bits = 0; i < 300; i++)
				bits += popcount8(d[i] ^ o[i]);
			CHECK(bits == 9);
		}
		rte_pktmbuf_free_bulk(rx, n);
		rte_pktmbuf_free(m);
		via_port_close(p);
	}
}

/* ------------------------------------------------------------------------ */
/* Replay                                                                   */
/* ------------------------------------------------------------------------ */

static void
all_faults(struct via_fault_conf *fc, uint64_t seed)
{
	struct via_fault_dir_conf d = {
		.drop_ppm = 50000, .dup_ppm = 50000, .reorder_ppm = 50000,
		.corrupt_ppm = 50000, .delay_ppm = 50000,
	};

	memset(fc, 0, sizeof(*fc));
	fc->rx = d;
	fc->tx = d;
	fc->delay_us = 0;
	fc->corrupt_bits = 2;
	fc->corrupt_where = VIA_FAULT_WHERE_ANY;
	fc->seed = seed;
}

static void
replay_run(uint64_t seed, struct rec *r, unsigned int max,
	   unsigned int *nr, struct via_fault_stats *fs)
{
	struct via_fault_conf fc;
	struct via_port *p;
	struct run ru;

	all_faults(&fc, seed);
	p = open_faulty("fq_replay", &fc);
	if (p == NULL) {
		*nr = 0;
		return;
	}
	run_init(&ru, r, max, p);
	traffic(p, 5000, &ru, 0);
	*nr = ru.nr;
	CHECK_RC(via_port_faults_get(p, fs), 0);
	via_port_close(p);
}

static bool
same_recs(const struct rec *a, const struct rec *b, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (a[i].seq != b[i].seq || a[i].len != b[i].len ||
		    a[i].hash != b[i].hash)
			return false;
	return true;
}

static void
test_replay(void)
{
	struct via_fault_stats fa, fb;
	unsigned int na, nb;

	printf("-- replay (every fault at 5%% both ways)\n");
	replay_run(42, recs_a, RTE_DIM(recs_a), &na, &fa);
	replay_run(42, recs_b, RTE_DIM(recs_b), &nb, &fb);
	printf("   seed 42: %u frames out of 5000; tx: %" PRIu64 " dropped, %"
	       PRIu64 " dup, %" PRIu64 " reordered, %" PRIu64 " delayed, %"
	       PRIu64 " corrupted\n", na, fa.tx.dropped, fa.tx.duplicated,
	       fa.tx.reordered, fa.tx.delayed, fa.tx.corrupted);
	CHECK(na > 0 && na == nb);
	CHECK(same_recs(recs_a, recs_b, RTE_MIN(na, nb)));
	CHECK(memcmp(&fa, &fb, sizeof(fa)) == 0);
	CHECK(fa.tx.seen == 5000);
	CHECK(fa.rx.dropped && fa.rx.duplicated && fa.rx.reordered &&
	      fa.rx.delayed && fa.rx.corrupted);
	CHECK(fa.tx.dropped && fa.tx.duplicated && fa.tx.reordered &&
	      fa.tx.delayed && fa.tx.corrupted);
	/* the rx side sees what tx let through */
	CHECK_U64(fa.rx.seen, 5000 - fa.tx.dropped + fa.tx.duplicated);
	CHECK_U64(na, fa.rx.seen - fa.rx.dropped + fa.rx.duplicated);

	/* another seed, other faults */
	replay_run(43, recs_b, RTE_DIM(recs_b), &nb, &fb);
	CHECK(nb > 0);
	CHECK(na != nb || !same_recs(recs_a, recs_b, na));
	CHECK(memcmp(&fa, &fb, sizeof(fa)) != 0);
	/* seed 0 is a seed like any other */
	replay_run(0, recs_b, RTE_DIM(recs_b), &nb, &fb);
	CHECK(nb > 0 && fb.tx.dropped > 0);
}

/* ------------------------------------------------------------------------ */
/* Delay timing, delay queue overflow                                       */
/* ------------------------------------------------------------------------ */

static void
test_delay(void)
{
	struct via_fault_conf fc;
	struct via_fault_stats fs;
	struct rte_mbuf *tx[BURST], *rx[BURST];
	struct via_port *p;
	uint64_t hz = rte_get_timer_hz(), t0, el;
	unsigned int i, calls, got;
	uint16_t n;

	printf("-- delay\n");
	/* delay_us = 0: out on the next rx call, never in the same one */
	memset(&fc, 0, sizeof(fc));
	fc.rx.delay_ppm = VIA_FAULT_PPM_MAX;
	p = open_faulty("fq_d0", &fc);
	if (p == NULL)
		return;
	for (i = 0; i < 3; i++)
		tx[i] = make_frame(i, 100, via_port_mac(p));
	CHECK(via_port_tx_burst(p, 0, tx, 3) == 3);
	CHECK(via_port_rx_burst(p, 0, rx, BURST) == 0);
	n = via_port_rx_burst(p, 0, rx, BURST);
	CHECK(n == 3);
	for (i = 0; i < n; i++)
		CHECK(frame_ok(rx[i], i, 100, via_port_mac(p)));
	rte_pktmbuf_free_bulk(rx, n);
	CHECK_RC(via_port_faults_get(p, &fs), 0);
	CHECK_U64(fs.rx.delayed, 3);
	via_port_close(p);

	/* rx, delay_us = 20000: not before 20 ms */
	memset(&fc, 0, sizeof(fc));
	fc.rx.delay_ppm = VIA_FAULT_PPM_MAX;
	fc.delay_us = 20000;
	p = open_faulty("fq_d20", &fc);
	if (p == NULL)
		return;
	tx[0] = make_frame(1, 200, via_port_mac(p));
	t0 = rte_get_timer_cycles();
	CHECK(via_port_tx_burst(p, 0, tx, 1) == 1);
	for (calls = 0, n = 0; n == 0 && rte_get_timer_cycles() - t0 < hz;
	     calls++)
		n = via_port_rx_burst(p, 0, rx, BURST);
	el = (rte_get_timer_cycles() - t0) * 1000000 / hz;
	printf("   rx delay 20000 us: out after %" PRIu64 " us, %u rx calls\n",
	       el, calls);
	CHECK(n == 1);
	CHECK(el >= 20000 && calls > 1);
	if (n == 1)
		CHECK(frame_ok(rx[0], 1, 200, via_port_mac(p)));
	rte_pktmbuf_free_bulk(rx, n);
	via_port_close(p);

	/* tx, delay_us = 20000: consumed at once; released only by tx calls
	 * (tx_burst with n = 0 is the flush), after 20 ms */
	memset(&fc, 0, sizeof(fc));
	fc.tx.delay_ppm = VIA_FAULT_PPM_MAX;
	fc.delay_us = 20000;
	p = open_faulty("fq_dtx", &fc);
	if (p == NULL)
		return;
	tx[0] = make_frame(2, 200, via_port_mac(p));
	t0 = rte_get_timer_cycles();
	CHECK(via_port_tx_burst(p, 0, tx, 1) == 1);
	for (got = 0; rte_get_timer_cycles() - t0 < hz * 30 / 1000; ) {
		n = via_port_rx_burst(p, 0, rx, BURST);
		rte_pktmbuf_free_bulk(rx, n);
		got += n;
	}
	CHECK(got == 0); /* no tx call, no release */
	via_port_tx_burst(p, 0, NULL, 0); /* 30 ms later: due */
	n = via_port_rx_burst(p, 0, rx, BURST);
	CHECK(n == 1);
	if (n == 1)
		CHECK(frame_ok(rx[0], 2, 200, via_port_mac(p)));
	rte_pktmbuf_free_bulk(rx, n);
	tx[0] = make_frame(3, 200, via_port_mac(p));
	t0 = rte_get_timer_cycles();
	CHECK(via_port_tx_burst(p, 0, tx, 1) == 1);
	for (n = 0; n == 0 && rte_get_timer_cycles() - t0 < hz; ) {
		via_port_tx_burst(p, 0, NULL, 0);
		n = via_port_rx_burst(p, 0, rx, BURST);
	}
	el = (rte_get_timer_cycles() - t0) * 1000000 / hz;
	CHECK(n == 1 && el >= 20000);
	rte_pktmbuf_free_bulk(rx, n);
	CHECK_RC(via_port_faults_get(p, &fs), 0);
	CHECK_U64(fs.tx.delayed, 2);
	via_port_close(p);

	/* a burst larger than the output FIFO while due delayed frames fill
	 * it and new frames (duplicated: the copy goes straight to the FIFO,
	 * the original is delayed) keep coming: every frame comes out twice */
	memset(&fc, 0, sizeof(fc));
	fc.rx.delay_ppm = VIA_FAULT_PPM_MAX;
	fc.rx.dup_ppm = VIA_FAULT_PPM_MAX;
	fc.delay_us = 10000;
	{
		struct via_glue_port_conf c = base_conf("fq_dbig");
		struct rte_mbuf *big[400];
		uint8_t count[400];
		unsigned int seq = 0, k, j, bad = 0;

		c.faults = &fc;
		c.nb_rxd = 1024;
		p = NULL;
		CHECK_RC(via_port_open(&p, "faulty", &c), 0);
		if (p == NULL)
			return;
		CHECK_RC(via_port_start(p), 0);
		memset(count, 0, sizeof(count));
		got = 0;
		for (k = 0; k < 2; k++) {
			for (i = 0; i < 200; i += BURST) {
				unsigned int m = RTE_MIN(200 - i,
							 (unsigned int)BURST);

				for (j = 0; j < m; j++, seq++)
					tx[j] = make_frame(seq, 100,
							   via_port_mac(p));
				CHECK(via_port_tx_burst(p, 0, tx,
							(uint16_t)m) == m);
				if (k != 0)
					continue;
				/* first round: copies out, originals held */
				n = via_port_rx_burst(p, 0, big, BURST);
				for (j = 0; j < n; j++) {
					if (seq_of(big[j]) < 400)
						count[seq_of(big[j])]++;
					else
						bad++;
				}
				rte_pktmbuf_free_bulk(big, n);
				got += n;
			}
		}
		rte_delay_us_block(12000);
		for (calls = 0; got < 800 && calls < 1000; calls++) {
			n = via_port_rx_burst(p, 0, big, RTE_DIM(big));
			for (j = 0; j < n; j++) {
				if (seq_of(big[j]) < 400)
					count[seq_of(big[j])]++;
				else
					bad++;
			}
			rte_pktmbuf_free_bulk(big, n);
			got += n;
			if (n == 0)
				rte_delay_us_block(2000);
		}
		CHECK(got == 800 && bad == 0);
		for (i = 0; i < 400; i++)
			CHECK(count[i] == 2);
		CHECK_RC(via_port_faults_get(p, &fs), 0);
		CHECK_U64(fs.rx.delayed, 400);
		CHECK_U64(fs.rx.duplicated, 400);
		via_port_close(p);
	}

	/* overflow: 1 s delay, 600 frames, 512 slots; frames still delayed
	 * at close are freed (leak check at the end) */
	memset(&fc, 0, sizeof(fc));
	fc.rx.delay_ppm = VIA_FAULT_PPM_MAX;
	fc.delay_us = 1000000;
	p = open_faulty("fq_dof", &fc);
	if (p == NULL)
		return;
	for (i = 0, got = 0; i < 600; i += BURST) {
		unsigned int k = RTE_MIN(600 - i, (unsigned int)BURST), j;

		for (j = 0; j < k; j++)
			tx[j] = make_frame(i + j, 100, via_port_mac(p));
		CHECK(via_port_tx_burst(p, 0, tx, (uint16_t)k) == k);
		got += via_port_rx_burst(p, 0, rx, BURST);
	}
	got += via_port_rx_burst(p, 0, rx, BURST);
	CHECK(got == 0);
	CHECK_RC(via_port_faults_get(p, &fs), 0);
	CHECK_U64(fs.rx.seen, 600);
	CHECK_U64(fs.rx.delayed, VIA_FAULT_DELAY_QUEUE);
	CHECK_U64(fs.rx.delay_overflow, 600 - VIA_FAULT_DELAY_QUEUE);
	via_port_stop(p);
	via_port_close(p);
}

/* ------------------------------------------------------------------------ */
/* Backpressure: a full inner port is seen by the caller                    */
/* ------------------------------------------------------------------------ */

static void
test_backpressure(void)
{
	struct via_glue_port_conf c = base_conf("fq_bp");
	struct via_fault_conf fc;
	struct via_fault_stats fs;
	struct rte_mbuf *tx[300];
	struct via_port *p = NULL;
	struct run ru;
	unsigned int done = 0, i, guard;
	uint16_t n;

	printf("-- backpressure\n");
	memset(&fc, 0, sizeof(fc));
	fc.tx.drop_ppm = 1; /* active path, (almost) never drops */
	c.faults = &fc;
	c.nb_rxd = 32;      /* inner ring of 32 */
	CHECK_RC(via_port_open(&p, "faulty", &c), 0);
	if (p == NULL)
		return;
	CHECK_RC(via_port_start(p), 0);
	for (i = 0; i < RTE_DIM(tx); i++)
		tx[i] = make_frame(i, frame_len(i), via_port_mac(p));
	n = via_port_tx_burst(p, 0, tx, RTE_DIM(tx));
	printf("   first tx of 300 into a ring of 32: %u consumed\n", n);
	CHECK(n >= 32 && n < 300);
	done = n;
	CHECK(via_port_tx_burst(p, 0, tx + done, 1) == 0); /* still full */
	run_init(&ru, recs_a, RTE_DIM(recs_a), p);
	for (guard = 0; done < RTE_DIM(tx) && guard < 10000; guard++) {
		rx_once(p, &ru);
		done += via_port_tx_burst(p, 0, tx + done,
					  (uint16_t)(RTE_DIM(tx) - done));
	}
	CHECK(done == RTE_DIM(tx));
	for (guard = 0; guard < 100; guard++) {
		via_port_tx_burst(p, 0, NULL, 0);
		rx_once(p, &ru);
	}
	CHECK_RC(via_port_faults_get(p, &fs), 0);
	CHECK_U64(fs.tx.seen, 300);
	CHECK_U64(ru.nr, 300 - fs.tx.dropped);
	CHECK(strictly_increasing(&ru));
	for (i = 0; fs.tx.dropped == 0 && i < ru.nr; i++)
		CHECK(ru.r[i].seq == i && ru.r[i].diff_hdr == 0 &&
		      ru.r[i].diff_pay == 0);
	via_port_close(p);
}

/* ------------------------------------------------------------------------ */
/* Probe errors, ethdev inner                                               */
/* ------------------------------------------------------------------------ */

static void
test_errors(void)
{
	struct via_glue_port_conf c = base_conf("fq_err");
	struct via_fault_conf fc;
	struct via_port *p = NULL;

	printf("-- probe errors\n");
	CHECK(via_glue_lookup("faulty") != NULL);
	memset(&fc, 0, sizeof(fc));
	c.faults = &fc;
	fc.rx.drop_ppm = VIA_FAULT_PPM_MAX + 1;
	CHECK_RC(via_port_open(&p, "faulty", &c), -EINVAL);
	fc.rx.drop_ppm = 0;
	fc.tx.delay_ppm = UINT32_MAX;
	CHECK_RC(via_port_open(&p, "faulty", &c), -EINVAL);
	fc.tx.delay_ppm = 0;
	fc.corrupt_bits = VIA_FAULT_CORRUPT_BITS_MAX + 1;
	CHECK_RC(via_port_open(&p, "faulty", &c), -EINVAL);
	fc.corrupt_bits = 0;
	fc.corrupt_where = 3;
	CHECK_RC(via_port_open(&p, "faulty", &c), -EINVAL);
	fc.corrupt_where = 0;
	fc.delay_us = VIA_FAULT_DELAY_US_MAX + 1;
	CHECK_RC(via_port_open(&p, "faulty", &c), -EINVAL);
	fc.delay_us = 0;
	c.inner_glue = "faulty";
	CHECK_RC(via_port_open(&p, "faulty", &c), -EINVAL);
	c.inner_glue = "no_such_glue";
	CHECK_RC(via_port_open(&p, "faulty", &c), -ENOENT);
	c.inner_glue = "ethdev"; /* no devargs */
	CHECK_RC(via_port_open(&p, "faulty", &c), -EINVAL);
	c.inner_glue = "loopback";
	c.nb_rxq = 17;           /* loopback: 16 queues at most */
	CHECK_RC(via_port_open(&p, "faulty", &c), -EINVAL);
	CHECK(p == NULL);
	/* a long name still opens (the inner name is truncated) */
	c = base_conf("a_port_name_of_31_characters_x");
	CHECK_RC(via_port_open(&p, "faulty", &c), 0);
	via_port_close(p);
}

static void
test_ethdev_inner(void)
{
	struct via_glue_port_conf c = base_conf("fq_eth");
	struct via_fault_conf fc;
	struct via_fault_stats fs;
	struct via_port *p = NULL;
	struct run ru;
	unsigned int i;

	printf("-- ethdev inner (net_ring, devargs forwarded)\n");
	memset(&fc, 0, sizeof(fc));
	fc.tx.dup_ppm = VIA_FAULT_PPM_MAX;
	fc.seed = 5;
	c.devargs = "net_ring0";
	c.inner_glue = "ethdev";
	c.faults = &fc;
	CHECK_RC(via_port_open(&p, "faulty", &c), 0);
	if (p == NULL)
		return;
	CHECK(via_port_id(p) == VIA_PORT_ID_NONE);
	CHECK(via_port_mtu(p) == RTE_ETHER_MTU);
	CHECK_RC(via_port_start(p), 0);
	run_init(&ru, recs_a, RTE_DIM(recs_a), p);
	traffic(p, 500, &ru, 0);
	CHECK_U64(ru.nr, 1000);
	for (i = 0; i + 1 < ru.nr; i += 2)
		CHECK(ru.r[i].seq == i / 2 && ru.r[i + 1].seq == i / 2 &&
		      ru.r[i].hash == ru.r[i + 1].hash);
	CHECK_RC(via_port_faults_get(p, &fs), 0);
	CHECK_U64(fs.tx.duplicated, 500);
	CHECK_U64(fs.rx.seen, 1000);
	via_port_close(p);
}

int
main(int argc, char **argv)
{
	unsigned int avail0;

	mp = test_eal_start(argc, argv, NULL, "test_faulty_mp", NB_MBUF);
	if (mp == NULL)
		return 2;
	avail0 = rte_mempool_avail_count(mp);

	test_passthrough();
	test_rates();
	test_corrupt_where();
	test_replay();
	test_delay();
	test_backpressure();
	test_errors();
	test_ethdev_inner();

	CHECK(rte_mempool_avail_count(mp) == avail0); /* no mbuf leaked */

	test_eal_stop(mp);
	return test_summary("test_faulty");
}
