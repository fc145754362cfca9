/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_check --rdma: the RDMA Write and Read check (top of topo_check.c),
 * its server and its client.
 */
#include "topo_check.h"

/* ---- RDMA mode (--rdma) -------------------------------------------------- */

/* The server's answer to an --rdma hello: the target region, for the
 * address segments (§10.3) of the client's RDMA descriptors. */
struct rinfo {
	uint64_t magic;            /* RINFO_MAGIC */
	uint64_t addr;             /* the region's virtual address */
	uint32_t handle;           /* its memory handle */
	uint32_t len;              /* its length: a multiple of PAGE */
	uint32_t max;              /* the hello's largest transfer, confirmed */
	uint32_t pad;
};
_Static_assert(sizeof(struct rinfo) == HELLO_LEN, "rinfo layout");

/* Check request: the round whose write was the last, and where it went. */
struct rcheck_req {
	uint32_t round, off, size, pad;
};
_Static_assert(sizeof(struct rcheck_req) == RCHECK_LEN, "rcheck_req layout");

/* Its answer: bytes of the region that differ, the first, what it held. */
struct rcheck_ans {
	uint32_t round, nbad, first;
	uint8_t got, want;
	uint16_t pad;
};
_Static_assert(sizeof(struct rcheck_ans) == RCHECK_LEN, "rcheck_ans layout");

static uint32_t
nz(uint32_t x)
{
	return x ? x : 1;
}

/*
 * Size of RDMA round @p r: 1 .. @p max, the edges favoured: the first
 * rounds take one each of 1, the maximum, around a page and around a
 * frame; then a third of the time an edge, uniform otherwise. @p chunk is
 * the payload of a frame: an RDMA Read Response frame carries that many
 * bytes of data, an RDMA Write frame 16 less (its RDMA extension,
 * wire-format.md), so both kinds of frame boundary are covered.
 */
static uint32_t
rdma_size(uint64_t seed, uint32_t r, uint32_t max, uint32_t chunk)
{
	const uint32_t wchunk = chunk > 32 ? chunk - 16 : chunk;
	const int64_t fixed[] = { 1, max, PAGE, PAGE + 1, PAGE - 1, (int64_t)max - 1, 2,
				  (int64_t)wchunk + 1, (int64_t)chunk + 1 };
	uint64_t h = mix64(seed * 0x2545f4914f6cdd1dULL ^ r ^ RDMA_SALT), h2 = mix64(h);
	int64_t v, d = (int64_t)((h2 >> 40) % 3) - 1;

	if (r < sizeof(fixed) / sizeof(fixed[0])) {
		v = fixed[r];
	} else {
		switch (h % 24) {
		case 0:
		case 1:
			v = 1 + (int64_t)(h2 % 16);
			break;
		case 2:
			v = max;
			break;
		case 3:
			v = (int64_t)max - (int64_t)(h2 % 8);
			break;
		case 4:
		case 5:
			v = (int64_t)(1 + h2 % nz(max / PAGE)) * PAGE + d;
			break;
		case 6:
		case 7:
			v = (int64_t)(1 + h2 % nz(max / wchunk)) * wchunk + d;
			break;
		case 8:
		case 9:
			v = (int64_t)(1 + h2 % nz(max / chunk)) * chunk + d;
			break;
		default:
			v = 1 + (int64_t)(h2 % max);
			break;
		}
	}
	return v < 1 ? 1 : v > max ? max : (uint32_t)v;
}

/*
 * Offset of RDMA round @p r's @p size bytes in a region of @p tlen bytes
 * (a multiple of PAGE, at least size + 4 pages): mostly across a page
 * boundary (one byte or more on each side; a single byte is the last of a
 * page or the first), else at the start or the end of the region, at the
 * start of a page, or ending at the end of one.
 */
static uint32_t
rdma_offset(uint64_t seed, uint32_t r, uint32_t size, uint32_t tlen)
{
	uint64_t h = mix64(seed ^ ((uint64_t)r << 32) ^ 0x0ff5e70ff5e7ULL), h2 = mix64(h);
	uint32_t room = tlen - size, npages = tlen / PAGE, j, jmin;
	int64_t off;

	switch (h % 16) {
	case 0:
		return 0;
	case 1:
		return room;
	case 2:
		return PAGE * (uint32_t)(h2 % (room / PAGE + 1));
	case 3:
		jmin = (size + PAGE - 1) / PAGE;
		j = jmin + (uint32_t)(h2 % (npages - jmin + 1));
		return j * PAGE - size;
	default:
		/* boundary P, not the region's ends: [off, off + size) holds
		 * P - 1 and P; a range longer than a page crosses one anyway */
		j = 1 + (uint32_t)(h2 % (npages - 1));
		if (size >= 2)
			off = (int64_t)j * PAGE - 1 - (int64_t)((h2 >> 32) % (size - 1));
		else
			off = (int64_t)j * PAGE - 1 + (int64_t)((h2 >> 32) & 1);
		if (off < 0)
			off = 0;
		if (off > room)
			off = room;
		return (uint32_t)off;
	}
}

static void
rdma_plan(uint64_t seed, uint32_t r, uint32_t max, uint32_t chunk, uint32_t tlen, uint32_t *off,
	  uint32_t *size)
{
	*size = rdma_size(seed, r, max, chunk);
	*off = rdma_offset(seed, r, *size, tlen);
}

/* Content of RDMA round @p r. */
static void
rdma_fill(uint8_t *p, uint32_t len, uint64_t seed, uint32_t r)
{
	pattern_fill(p, len, seed ^ RDMA_SALT, r);
}

/* ---- RDMA: the server ---- */

/*
 * Answer a check request: replay the writes of every round up to
 * @p q->round on the copy of the region and compare the whole region.
 */
static void
rdma_verify(struct ep *e, uint64_t seed, uint32_t max, uint32_t chunk, uint32_t rounds,
	    uint32_t *applied, const struct rcheck_req *q, struct rcheck_ans *a)
{
	uint32_t tlen = (uint32_t)e->tlen, off, size, i, in_last = 0;

	memset(a, 0, sizeof(*a));
	a->round = q->round;
	if (q->round >= rounds || q->round + 1 < *applied) {
		say(e->who, "MISMATCH: check of round %u: out of order (rounds %u, %u replayed)",
		    q->round, rounds, *applied);
		e->mismatches++;
		a->nbad = UINT32_MAX;
		return;
	}
	for (; *applied <= q->round; (*applied)++) {
		rdma_plan(seed, *applied, max, chunk, tlen, &off, &size);
		rdma_fill(e->shadow + off, size, seed, *applied);
	}
	rdma_plan(seed, q->round, max, chunk, tlen, &off, &size);
	if (off != q->off || size != q->size) {
		say(e->who, "MISMATCH: round %u: the client wrote %u B at +%u, the plan here says "
		    "%u B at +%u (different builds of topo_check?)", q->round, q->size, q->off,
		    size, off);
		e->mismatches++;
		a->nbad = UINT32_MAX;
		return;
	}
	if (memcmp(e->tmem, e->shadow, tlen) == 0)
		return;
	for (i = 0; i < tlen; i++) {
		if (e->tmem[i] != e->shadow[i]) {
			if (a->nbad++ == 0) {
				a->first = i;
				a->got = e->tmem[i];
				a->want = e->shadow[i];
			}
			in_last += i >= off && i < off + size;
		}
	}
	{
		/* the round that wrote the first bad byte last, if any */
		uint32_t o2, s2, r = q->round + 1;

		while (r-- > 0) {
			rdma_plan(seed, r, max, chunk, tlen, &o2, &s2);
			if (a->first >= o2 && a->first < o2 + s2)
				break;
		}
		say(e->who, "MISMATCH: after round %u: %u bytes of the target region (%u B) differ "
		    "from what rounds 0..%u wrote, %u of them in round %u's range [+%u, +%u); "
		    "first at +%u (page %u +%u): %#x, want %#x", q->round, a->nbad, tlen, q->round,
		    in_last, q->round, off, off + size, a->first, a->first / PAGE, a->first % PAGE,
		    a->got, a->want);
		if (r != UINT32_MAX)
			say(e->who, "  byte +%u was last written by round %u (%u B at +%u, byte %u "
			    "of it)", a->first, r, s2, o2, a->first - o2);
		else
			say(e->who, "  byte +%u was never written: it should still hold its initial "
			    "content", a->first);
	}
	e->mismatches++;
	/* go on from what the region holds: report each corruption once */
	memcpy(e->shadow, e->tmem, tlen);
}

int
run_rdma_server(struct ep *e)
{
	uint64_t seed = opt.seed, last_msg_us, t0 = 0;
	uint32_t max = 0, chunk = 0, rounds = 0, applied = 0, next_seq = 1, checks = 0;
	bool seed_known = false, got_bye = false, peer_gone = false, checked_last = false;
	int rc = 0;

	if (server_accept(e) != 0)
		return -1;
	say(e->who, "target region %p, %zu B, memory handle %#x, %s memory", (void *)e->tmem,
	    e->tlen, e->tmh, e->tmem_pmem ? "provider" : "heap");
	last_msg_us = now_us();
	for (;;) {
		VIP_DESCRIPTOR *d;
		struct msg_info mi;
		unsigned idx;
		int got = server_next(e, &last_msg_us, &d, &idx, &peer_gone), bad;

		if (got <= 0) {
			rc = got < 0 ? -1 : rc;
			break;
		}
		bad = check_recv(e, &e->recv[idx], d, seed, max ? max : e->max_transfer,
				 chunk ? chunk : 1, seed_known, &mi);
		if (post_recv(e, idx) != 0) {
			rc = -1;
			break;
		}
		if (bad) {
			/* Reliable Delivery: a bad message means a broken provider */
			e->mismatches++;
			rc = -1;
			break;
		}
		e->msgs_rx++;
		e->bytes_rx += mi.len;
		/* Reliable Delivery: every message once, in order (§2.5.2) */
		if (mi.seq != next_seq) {
			say(e->who, "MISMATCH: message seq %u (type %u), want %u", mi.seq, mi.type,
			    next_seq);
			e->mismatches++;
		}
		next_seq = mi.seq + 1;
		if (mi.type == T_BYE) {
			/* answered, so that the client disconnects only once we
			 * expect it (no CONN_LOST report racing the bye) */
			got_bye = true;
			async_quiet = 1;
			if (send_msg(e, NULL, 0, MK_IMM(T_BYE, mi.seq)) != 0)
				rc = -1;
			break;
		}
		if (mi.type == T_HELLO) {
			struct hello h;
			struct rinfo ri = { 0 };

			memcpy(&h, e->scratch, sizeof(h));
			if (seed_known || h.magic != HELLO_MAGIC || !(h.flags & HELLO_F_RDMA) ||
			    h.max == 0 || h.max > e->max_transfer || h.chunk == 0) {
				say(e->who, "MISMATCH: bad hello (%s, magic %#" PRIx64 " flags %#x "
				    "max %u chunk %u)", seed_known ? "a second one" :
				    !(h.flags & HELLO_F_RDMA) ? "the client does not run --rdma" :
				    "bad values", h.magic, h.flags, h.max, h.chunk);
				e->mismatches++;
				rc = -1;
				break;
			}
			if (opt.seed_set && h.seed != opt.seed) {
				say(e->who, "MISMATCH: client seed %#" PRIx64 " != --seed %#" PRIx64,
				    h.seed, opt.seed);
				e->mismatches++;
			}
			seed = h.seed;
			max = h.max;
			chunk = h.chunk;
			rounds = h.rounds;
			seed_known = true;
			say(e->who, "hello: seed %#" PRIx64 " max %u chunk %u rounds %u (RDMA)", seed,
			    max, chunk, rounds);
			/* known initial content: a write or read at a wrong place shows */
			pattern_fill(e->tmem, (uint32_t)e->tlen, seed ^ TINIT_SALT, 0);
			memcpy(e->shadow, e->tmem, e->tlen);
			ri.magic = RINFO_MAGIC;
			ri.addr = (uint64_t)(uintptr_t)e->tmem;
			ri.handle = e->tmh;
			ri.len = (uint32_t)e->tlen;
			ri.max = max;
			t0 = now_us();
			if (send_msg(e, (const uint8_t *)&ri, sizeof(ri), MK_IMM(T_HELLO, mi.seq)) != 0) {
				rc = -1;
				break;
			}
		} else if (mi.type == T_RCHECK && seed_known) {
			struct rcheck_req q;
			struct rcheck_ans a;

			memcpy(&q, e->scratch, sizeof(q));
			rdma_verify(e, seed, max, chunk, rounds, &applied, &q, &a);
			checks++;
			if (opt.verbose > 1 || (opt.verbose && a.nbad != 0))
				say(e->who, "check of round %u: %u bytes differ", q.round, a.nbad);
			if (q.round + 1 == rounds)
				checked_last = true;
			if (send_msg(e, (const uint8_t *)&a, sizeof(a), MK_IMM(T_RCHECK, mi.seq)) != 0) {
				rc = -1;
				break;
			}
		} else {
			say(e->who, "MISMATCH: unexpected message type %u seq %u len %u in --rdma mode",
			    mi.type, mi.seq, mi.len);
			e->mismatches++;
			rc = -1;
			break;
		}
	}
	if (got_bye || peer_gone)
		async_quiet = 1;
	say(e->who, "summary: %" PRIu64 " messages received, %u region checks (rounds 0..%d "
	    "replayed), %" PRIu64 " mismatches, end: %s, %.2f s", e->msgs_rx, checks,
	    (int)applied - 1, e->mismatches,
	    got_bye ? "bye" : peer_gone ? "peer disconnected" : rc ? "error" : "idle timeout",
	    t0 ? (double)(now_us() - t0) / 1e6 : 0.0);
	print_port(e);
	print_counters(e);
	print_async_errors(e->who);
	if (rc != 0 || e->mismatches != 0)
		return -1;
	if (!seed_known) {
		say(e->who, "FAIL: no hello received");
		return -1;
	}
	if (rounds != 0 && !checked_last) {
		say(e->who, "FAIL: the client did not ask for the check of its last round (%u)",
		    rounds - 1);
		return -1;
	}
	return 0;
}

/* ---- RDMA: the client ---- */

struct rdma_stats {
	uint64_t bytes;
	unsigned pipelined, fenced, checks;
};

/* Send one message and wait for its answer: the same type and seq. */
static int
rdma_call(struct ep *e, uint32_t type, uint32_t seq, const void *req, uint32_t len, void *ans,
	  uint32_t ans_len, uint64_t seed, uint32_t max, uint32_t chunk)
{
	VIP_DESCRIPTOR *d;
	struct msg_info mi;
	unsigned idx;
	int got, bad;

	if (send_msg(e, req, len, MK_IMM(type, seq)) != 0)
		return -1;
	got = recv_msg(e, RDMA_WAIT_MS, &d, &idx);
	if (got <= 0) {
		if (got == 0)
			say(e->who, "FAIL: no answer to message type %u seq %u within %u ms", type,
			    seq, RDMA_WAIT_MS);
		return -1;
	}
	bad = check_recv(e, &e->recv[idx], d, seed, max, chunk, true, &mi);
	if (post_recv(e, idx) != 0)
		return -1;
	if (bad) {
		e->mismatches++;
		return -1;
	}
	if (mi.type != type || mi.seq != seq) {
		say(e->who, "MISMATCH: answer of type %u seq %u, want type %u seq %u", mi.type,
		    mi.seq, type, seq);
		e->mismatches++;
		return -1;
	}
	e->msgs_rx++;
	if (ans_len != 0)
		memcpy(ans, e->scratch, ans_len);
	return 0;
}

/* 1..16 local segments: 1..4 half the time, 5..8 or 9..16 a quarter each. */
static unsigned
rdma_nsegs(struct ep *e)
{
	switch (rnd_below(&e->rng, 4)) {
	case 0:
	case 1:
		return 1 + rnd_below(&e->rng, 4);
	case 2:
		return 5 + rnd_below(&e->rng, 4);
	default:
		return 9 + rnd_below(&e->rng, RDMA_SEGS - 8);
	}
}

/* An RDMA descriptor in @p s: the address segment (§10.3), then @p size
 * bytes laid out over 1..16 local segments. */
static void
rdma_desc(struct ep *e, struct dslot *s, uint16_t control, uint64_t raddr, VIP_MEM_HANDLE rh,
	  uint32_t size)
{
	VIP_ADDRESS_SEGMENT *as;

	layout_k(e, s, size, rdma_nsegs(e), 1);
	as = (VIP_ADDRESS_SEGMENT *)desc_ds(s->d);
	as->Data.AddressBits = raddr;
	as->Handle = rh;
	as->Reserved = 0;
	s->d->CS.Control = control;
	s->d->CS.Length = size;
}

/* The next send queue completion must be @p s's, with @p status and @p size. */
static int
rdma_reap(struct ep *e, const struct dslot *s, uint32_t status, uint32_t size, const char *what,
	  uint32_t r, uint32_t off)
{
	VIP_DESCRIPTOR *out;
	VIP_RETURN rv = VipSendWait(e->vi, RDMA_WAIT_MS, &out);
	char lay[512];

	describe_layout(e, s, lay, sizeof(lay));
	if (rv != VIP_SUCCESS) {
		say(e->who, "FAIL: round %u: %s of %u B at +%u: VipSendWait: %s (layout [%s])", r,
		    what, size, off, VipDpdkReturnString(rv), lay);
		return -1;
	}
	/* §6.3.1.1: dequeued in FIFO order, whatever the completion order */
	if (out != s->d) {
		say(e->who, "MISMATCH: round %u: %s: VipSendWait gave descriptor %p, want %p "
		    "(FIFO dequeue)", r, what, (void *)out, (void *)s->d);
		e->mismatches++;
		return -1;
	}
	if (out->CS.Status != status || out->CS.Length != size) {
		say(e->who, "MISMATCH: round %u: %s of %u B at +%u: Status %#x Length %u, want "
		    "Status %#x Length %u (layout [%s])", r, what, size, off, out->CS.Status,
		    out->CS.Length, status, size, lay);
		e->mismatches++;
		return -1;
	}
	return 0;
}

/*
 * Round @p r: RDMA Write the round's content from a gather list to its
 * place in the target region, RDMA Read it back into a scatter list,
 * check both completions and every byte.
 */
static int
rdma_round(struct ep *e, const struct rinfo *ri, uint64_t seed, uint32_t r, uint32_t max,
	   uint32_t chunk, struct rdma_stats *st)
{
	/* half the rounds post the read right behind the write: it must
	 * still see the write (§6.3.1.1, RDMA Reads do not pass RDMA
	 * Writes); a quarter of those with the queue fence (§6.3.1.2) */
	const bool pipe = rnd(&e->rng) & 1, fence = pipe && rnd_below(&e->rng, 4) == 0;
	uint32_t off, size, i;
	long bad, tail;
	char lw[512], lr[512];

	rdma_plan(seed, r, max, chunk, ri->len, &off, &size);
	rdma_fill(e->expect, size, seed, r);
	/* the write gathers its segments; the bytes around them are not the
	 * content, so that gathering a wrong byte shows */
	rdma_desc(e, &e->rw, VIP_CONTROL_OP_RDMAWRITE, ri->addr + off, ri->handle, size);
	memset(e->rw.buf, 0x3c, e->rw.len);
	scatter(&e->rw, e->expect, size);
	/* the read scatters into another layout: its segments hold the
	 * complement of the content (every byte must change), canary
	 * everywhere else (no byte may change) */
	rdma_desc(e, &e->rr, VIP_CONTROL_OP_RDMAREAD | (fence ? VIP_CONTROL_QFENCE : 0),
		  ri->addr + off, ri->handle, size);
	e->rr.canary = (uint8_t)(0xc3 ^ (r * 0x3b));
	memset(e->rr.buf, e->rr.canary, e->rr.len);
	for (i = 0; i < size; i++)
		e->scratch[i] = (uint8_t)~e->expect[i];
	scatter(&e->rr, e->scratch, size);
	describe_layout(e, &e->rw, lw, sizeof(lw));
	describe_layout(e, &e->rr, lr, sizeof(lr));
	if (opt.verbose > 1)
		say(e->who, "round %u: %u B at +%u%s%s, write [%s], read [%s]", r, size, off,
		    pipe ? ", pipelined" : "", fence ? ", fenced" : "", lw, lr);

	CHK(e, VipPostSend(e->vi, e->rw.d, e->mh));
	if (!pipe && rdma_reap(e, &e->rw, VIP_STATUS_DONE | VIP_STATUS_OP_RDMA_WRITE, size,
			       "RDMA Write", r, off) != 0)
		return -1;
	CHK(e, VipPostSend(e->vi, e->rr.d, e->mh));
	if (pipe && rdma_reap(e, &e->rw, VIP_STATUS_DONE | VIP_STATUS_OP_RDMA_WRITE, size,
			      "RDMA Write", r, off) != 0)
		return -1;
	if (rdma_reap(e, &e->rr, VIP_STATUS_DONE | VIP_STATUS_OP_RDMA_READ, size, "RDMA Read", r,
		      off) != 0)
		return -1;
	st->pipelined += pipe;
	st->fenced += fence;
	st->bytes += size;

	gather(&e->rr, e->scratch, size);
	if (memcmp(e->scratch, e->expect, size) != 0) {
		uint32_t first = 0, nbad = 0, seg = 0, in_seg, acc = 0;
		const uint32_t wchunk = chunk > 32 ? chunk - 16 : chunk;

		for (i = 0; i < size; i++) {
			if (e->scratch[i] != e->expect[i] && nbad++ == 0)
				first = i;
		}
		while (seg < e->rr.nb_segs && acc + e->rr.segs[seg].len <= first)
			acc += e->rr.segs[seg++].len;
		in_seg = first - acc;
		say(e->who, "MISMATCH: round %u: %u B at +%u%s%s: %u bytes read back differ, first "
		    "at byte %u (remote +%u, page %u +%u; RDMA Write frame %u, Read Response frame "
		    "%u; scatter segment %u byte %u): %#x, want %#x%s; write layout [%s], read "
		    "layout [%s]", r, size, off, pipe ? " (read right behind the write)" : "",
		    fence ? " (fenced)" : "", nbad, first, off + first, (off + first) / PAGE,
		    (off + first) % PAGE, first / wchunk, first / chunk, seg, in_seg,
		    e->scratch[first], e->expect[first],
		    (e->scratch[first] ^ e->expect[first]) == 0xff ? " (not written by the read)" : "",
		    lw, lr);
		e->mismatches++;
		return -1;
	}
	bad = canary_check(e, &e->rr, size, &tail);
	if (bad >= 0 || tail >= 0) {
		long at = bad >= 0 ? bad : tail;

		say(e->who, "MISMATCH: round %u: %u B at +%u: the RDMA Read wrote byte %ld of its "
		    "buffer, outside its scatter segments (%#x, canary %#x); read layout [%s]", r,
		    size, off, at, e->rr.buf[at], e->rr.canary, lr);
		e->mismatches++;
		return -1;
	}
	return 0;
}

int
run_rdma_client(struct ep *e, const uint8_t mac[6], const char *local_disc)
{
	uint32_t max = e->max_transfer, chunk = e->chunk, seq = 1, r, done = 0, ksz;
	const unsigned k = opt.verify_every ? opt.verify_every : 1;
	struct rdma_stats st = { 0 };
	uint64_t seed = opt.seed, t0;
	struct hello h = { 0 };
	struct rinfo ri;
	double secs;
	int rc = 0;

	if (opt.max_size != 0 && opt.max_size < max)
		max = opt.max_size;
	if (post_all_recv(e) != 0 || client_connect(e, mac, local_disc) != 0)
		return -1;
	h = (struct hello){ .magic = HELLO_MAGIC, .seed = seed, .max = max, .chunk = chunk,
			    .rounds = opt.rounds, .flags = HELLO_F_RDMA };
	if (rdma_call(e, T_HELLO, seq++, &h, HELLO_LEN, &ri, sizeof(ri), seed, max, chunk) != 0) {
		say(e->who, "FAIL: hello");
		return -1;
	}
	ksz = (max + PAGE - 1) / PAGE * PAGE;
	if (ri.magic != RINFO_MAGIC || ri.max != max || ri.len % PAGE != 0 ||
	    ri.len < ksz + 2 * PAGE) {
		say(e->who, "FAIL: bad answer to the hello (magic %#" PRIx64 ", max %u, region "
		    "%u B; want %u, at least %u B): is the server running --rdma?", ri.magic,
		    ri.max, ri.len, max, ksz + 2 * PAGE);
		return -1;
	}
	say(e->who, "target region %#" PRIx64 ", %u B, handle %#x; %u rounds of 1 .. %u B, "
	    "server check every %u rounds", ri.addr, ri.len, ri.handle, opt.rounds, max, k);
	t0 = now_us();
	for (r = 0; r < opt.rounds; r++) {
		if (rdma_round(e, &ri, seed, r, max, chunk, &st) != 0) {
			rc = -1;
			break;
		}
		done++;
		if ((r + 1) % k == 0 || r + 1 == opt.rounds) {
			struct rcheck_req q = { .round = r };
			struct rcheck_ans a;

			rdma_plan(seed, r, max, chunk, ri.len, &q.off, &q.size);
			if (rdma_call(e, T_RCHECK, seq++, &q, sizeof(q), &a, sizeof(a), seed, max,
				      chunk) != 0) {
				rc = -1;
				break;
			}
			st.checks++;
			if (a.round != r || a.nbad != 0) {
				say(e->who, "MISMATCH: server's check after round %u (answer for round "
				    "%u): %u bytes of its region differ, first at +%u: %#x, want %#x "
				    "(its output says more)", r, a.round, a.nbad, a.first, a.got,
				    a.want);
				e->mismatches++;
				rc = -1;
				break;
			}
		}
	}
	secs = (double)(now_us() - t0) / 1e6;
	/* bye, and its answer: the server stops expecting messages first */
	if (rc == 0 && rdma_call(e, T_BYE, seq++, NULL, 0, NULL, 0, seed, max, chunk) != 0) {
		say(e->who, "FAIL: bye");
		rc = -1;
	}
	async_quiet = 1;
	say(e->who, "summary: %u/%u RDMA rounds (write + read back) completed, %u with the read "
	    "right behind the write (%u fenced), %u server checks, %" PRIu64 " mismatches; "
	    "%" PRIu64 " bytes each way, %.2f s, %.1f MB/s; seed %#" PRIx64, done, opt.rounds,
	    st.pipelined, st.fenced, st.checks, e->mismatches, st.bytes, secs,
	    secs > 0 ? (double)st.bytes / secs / 1e6 : 0.0, seed);
	print_port(e);
	print_counters(e);
	print_async_errors(e->who);
	if (rc == 0 && done == opt.rounds && e->mismatches == 0 && e->errors == 0)
		return 0;
	return -1;
}
