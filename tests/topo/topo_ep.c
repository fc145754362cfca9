/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_check: an endpoint (NIC, VI, registered memory, descriptors laid
 * out over random segments), one message sent and one received and
 * checked, and what the checks share (topo_check.h).
 */
#include "topo_check.h"

bool zero_copy_wrong;

/* ---- small helpers ------------------------------------------------------ */

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

void __attribute__((format(printf, 2, 3)))
say(const char *who, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&out_lock);
	printf("[%s] ", who);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	pthread_mutex_unlock(&out_lock);
}

uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

void
sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

uint64_t
rnd(struct rng *r)
{
	r->s += 0x9e3779b97f4a7c15ULL;
	return mix64(r->s);
}

uint32_t
rnd_below(struct rng *r, uint32_t n)
{
	return n == 0 ? 0 : (uint32_t)(rnd(r) % n);
}

/* Content of message @p seq: a keyed stream of 64-bit words. */
void
pattern_fill(uint8_t *p, uint32_t len, uint64_t seed, uint32_t seq)
{
	uint64_t s = mix64(seed ^ ((uint64_t)seq << 32) ^ 0x5bd1e995u);
	uint32_t i;

	for (i = 0; i < len; i += 8) {
		uint64_t w = mix64(s + i);
		uint32_t n = len - i < 8 ? len - i : 8;

		memcpy(p + i, &w, n);
	}
}

/* Size of message @p seq: edge cases (0, 1, frame boundaries, the maximum)
 * a third of the time, uniform otherwise. */
uint32_t
msg_size(uint64_t seed, uint32_t seq, uint32_t max, uint32_t chunk)
{
	uint64_t h = mix64(seed * 0x2545f4914f6cdd1dULL ^ seq);
	uint64_t h2 = mix64(h);
	uint32_t s;

	switch (h % 24) {
	case 0:
		return 0;
	case 1:
		return 1 + (uint32_t)(h2 % 16);
	case 2:
		return max;
	case 3:
		return max - (uint32_t)(h2 % 8);
	case 4:
	case 5:
	case 6:
	case 7: {
		uint32_t k = 1 + (uint32_t)(h2 % (max / chunk));

		s = k * chunk + (uint32_t)((h2 >> 32) % 3) - 1;
		return s > max ? max : s;
	}
	default:
		return (uint32_t)(h2 % ((uint64_t)max + 1));
	}
}

int
parse_mac(const char *s, uint8_t mac[6])
{
	unsigned b[6];
	char tail;
	int i;

	if (sscanf(s, "%x:%x:%x:%x:%x:%x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5],
		   &tail) != 6)
		return -1;
	for (i = 0; i < 6; i++) {
		if (b[i] > 255)
			return -1;
		mac[i] = (uint8_t)b[i];
	}
	return 0;
}

VIP_NET_ADDRESS *
mk_addr(const uint8_t mac[6], const char *disc)
{
	size_t dl = strlen(disc);
	VIP_NET_ADDRESS *a = calloc(1, sizeof(*a) + 6 + 256);

	if (a == NULL) {
		perror("calloc");
		exit(1);
	}
	a->HostAddressLen = 6;
	memcpy(a->HostAddress, mac, 6);
	a->DiscriminatorLen = (VIP_UINT16)dl;
	memcpy(a->HostAddress + 6, disc, dl);
	return a;
}

/* ---- asynchronous errors --------------------------------------------------- */

static uint64_t async_errors[VIP_ERROR_CATASTROPHIC + 1];
volatile int async_quiet;

static void
error_handler(VIP_PVOID ctx, VIP_ERROR_DESCRIPTOR *ed)
{
	const char *who = ctx;
	uint64_t n = 0;

	if ((unsigned)ed->ErrorCode <= VIP_ERROR_CATASTROPHIC)
		n = __atomic_add_fetch(&async_errors[ed->ErrorCode], 1, __ATOMIC_RELAXED);
	if (async_quiet && ed->ErrorCode == VIP_ERROR_CONN_LOST)
		return;
	if (n <= 5 || opt.verbose)
		say(who, "asynchronous error %s (VI %p, descriptor %p, op %#lx)%s",
		    VipDpdkErrorCodeString(ed->ErrorCode), ed->ViHandle, (void *)ed->DescriptorPtr,
		    ed->OpCode, n == 5 && !opt.verbose ? " (no more of these printed)" : "");
}

void
print_async_errors(const char *who)
{
	char buf[512];
	size_t n = 0;
	unsigned i;

	for (i = 0; i <= VIP_ERROR_CATASTROPHIC; i++) {
		uint64_t c = __atomic_load_n(&async_errors[i], __ATOMIC_RELAXED);

		if (c != 0 && n < sizeof(buf))
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, " %s=%" PRIu64,
					      VipDpdkErrorCodeString((VIP_ERROR_CODE)i), c);
	}
	if (n != 0)
		say(who, "asynchronous errors (this process):%s", buf);
}

/* ---- an endpoint: NIC, VI, memory, descriptors --------------------------- */

VIP_DATA_SEGMENT *
desc_ds(VIP_DESCRIPTOR *d)
{
	return (VIP_DATA_SEGMENT *)((uint8_t *)d + sizeof(VIP_CONTROL_SEGMENT));
}

void
print_port(struct ep *e)
{
	VIP_DPDK_PORT_INFO pi;

	if (VipQuerySystemManagementInfo(e->nic, VIP_DPDK_SMI_PORT, &pi) != VIP_SUCCESS)
		return;
	say(e->who, "port %s glue=%s mac=%02x:%02x:%02x:%02x:%02x:%02x mtu=%u link=%s "
	    "rx=%" PRIu64 " tx=%" PRIu64 " rxerr=%" PRIu64 " txerr=%" PRIu64,
	    pi.Name, pi.Glue, pi.Mac[0], pi.Mac[1], pi.Mac[2], pi.Mac[3], pi.Mac[4], pi.Mac[5],
	    pi.Mtu, pi.LinkUp ? "up" : "down", pi.RxPackets, pi.TxPackets, pi.RxErrors,
	    pi.TxErrors);
}

void
print_counters(struct ep *e)
{
	VIP_DPDK_COUNTERS c;

	if (VipQuerySystemManagementInfo(e->nic, VIP_DPDK_SMI_COUNTERS, &c) != VIP_SUCCESS)
		return;
	say(e->who, "viad counters: frames rx=%" PRIu64 " tx=%" PRIu64 " (zero-copy %" PRIu64
	    ") dropped=%" PRIu64 " corrupt=%" PRIu64 " cq_overruns=%" PRIu64
	    " control_errors=%" PRIu64,
	    c.FramesRx, c.FramesTx, c.FramesTxZeroCopy, c.FramesDropped, c.FramesCorrupt,
	    c.CqOverruns, c.ControlErrors);
	/* an --rdma server only answers Reads: zero-copy in memory only
	 * (design.md section 9), so through a port it may send none */
	if (opt.zero_copy >= 0 && (opt.zero_copy == 0 || e->sends_data) &&
	    (c.FramesTxZeroCopy > e->zc_frames_at_open) != opt.zero_copy) {
		say(e->who, "FAIL: %" PRIu64 " zero-copy frames since this check began, %s",
		    c.FramesTxZeroCopy - e->zc_frames_at_open,
		    opt.zero_copy ? "want some" : "want none");
		zero_copy_wrong = true;
	}
}

int
wait_link(struct ep *e)
{
	uint64_t deadline = now_us() + (uint64_t)opt.link_ms * 1000u;
	VIP_DPDK_PORT_INFO pi;

	for (;;) {
		VIP_RETURN r = VipQuerySystemManagementInfo(e->nic, VIP_DPDK_SMI_PORT, &pi);

		if (r != VIP_SUCCESS) {
			say(e->who, "VipQuerySystemManagementInfo(PORT): %s",
			    VipDpdkReturnString(r));
			return -1;
		}
		if (pi.LinkUp)
			return 0;
		if (now_us() >= deadline) {
			say(e->who, "FAIL: link of %s still down after %u ms", pi.Name,
			    opt.link_ms);
			return -1;
		}
		sleep_ms(20);
	}
}

/* @p len bytes of memory, zeroed: VipDpdkAllocMem, or the heap with --heap. */
static int
ep_alloc(struct ep *e, size_t len, uint8_t **out, bool *pmem)
{
	void *p;

	if (opt.heap) {
		p = aligned_alloc(PAGE, len);
		if (p == NULL) {
			say(e->who, "FAIL: aligned_alloc(%zu)", len);
			return -1;
		}
		*pmem = false;
	} else {
		CHK(e, VipDpdkAllocMem(e->nic, len, &p));
		*pmem = true;
	}
	memset(p, 0, len);
	*out = p;
	return 0;
}

/*
 * @p server: with --rdma, the end that owns the target region; the other
 * end gets the RDMA descriptors and their local buffers instead.
 */
int
ep_open(struct ep *e, const char *who, uint64_t rng_seed, bool server)
{
	VIP_MEM_ATTRIBUTES ma = { 0 };
	VIP_VI_ATTRIBUTES va = { 0 };
	size_t desc_area, rbuf_len = 0;
	uint32_t mtu;
	unsigned i;

	memset(e, 0, sizeof(*e));
	e->who = who;
	e->sends_data = !(opt.rdma && server);
	e->rng.s = rng_seed;
	CHK(e, VipOpenNic(opt.nic, &e->nic));
	{
		VIP_DPDK_COUNTERS c;

		CHK(e, VipQuerySystemManagementInfo(e->nic, VIP_DPDK_SMI_COUNTERS, &c));
		e->zc_frames_at_open = c.FramesTxZeroCopy;
	}
	CHK(e, VipErrorCallback(e->nic, (VIP_PVOID)who, error_handler));
	CHK(e, VipQueryNic(e->nic, &e->na));
	if (e->na.NicAddressLen != 6) {
		say(who, "FAIL: NIC address length %u, want 6", e->na.NicAddressLen);
		return -1;
	}
	if (e->na.MaxTransferSize < MIN_TRANSFER) {
		say(who, "FAIL: MaxTransferSize %lu < %u", e->na.MaxTransferSize, MIN_TRANSFER);
		return -1;
	}
	if (e->na.MaxSegmentsPerDesc < MAX_SEGS) {
		say(who, "FAIL: MaxSegmentsPerDesc %lu < %u", e->na.MaxSegmentsPerDesc, MAX_SEGS);
		return -1;
	}
	if (opt.rdma && (!(e->na.ReliabilityLevelSupport & VIP_SERVICE_RELIABLE_DELIVERY) ||
			 !e->na.RDMAReadSupport)) {
		say(who, "FAIL: --rdma needs Reliable Delivery and RDMA Read; the NIC supports "
		    "levels %#x, RDMAReadSupport %d", e->na.ReliabilityLevelSupport,
		    e->na.RDMAReadSupport);
		return -1;
	}
	e->max_transfer = (uint32_t)e->na.MaxTransferSize;
	mtu = (uint32_t)e->na.NativeMTU;
	e->chunk = mtu > WIRE_HDR_LEN + 64 ? mtu - WIRE_HDR_LEN : 1024;
	CHK(e, VipCreatePtag(e->nic, &e->ptag));

	e->buf_len = ((size_t)e->max_transfer + MAX_SEGS * (GAP_MAX + 1) + 4095) & ~(size_t)4095;
	desc_area = 4096;
	/* --rdma: one message at a time each way (Reliable Delivery loses
	 * none), and on the client two RDMA descriptors after the first page */
	e->nb_send = opt.rdma ? 1 : opt.window;
	e->mem_len = desc_area + (NB_RECV + e->nb_send) * e->buf_len;
	if (opt.rdma && !server) {
		desc_area += PAGE;
		rbuf_len = ((size_t)e->max_transfer + RDMA_SEGS * (GAP_MAX + 1) + PAGE - 1) &
			   ~(size_t)(PAGE - 1);
		e->mem_len += PAGE + 2 * rbuf_len;
	}
	if (ep_alloc(e, e->mem_len, &e->mem, &e->mem_pmem) != 0)
		return -1;
	ma.Ptag = e->ptag;
	CHK(e, VipRegisterMem(e->nic, e->mem, e->mem_len, &ma, &e->mh));
	for (i = 0; i < NB_RECV; i++) {
		e->recv[i].d = (VIP_DESCRIPTOR *)(e->mem + (size_t)i * DESC_STRIDE);
		e->recv[i].dsize = DESC_STRIDE;
		e->recv[i].buf = e->mem + desc_area + (size_t)i * e->buf_len;
		e->recv[i].len = e->buf_len;
		e->recv[i].canary = (uint8_t)(0xa5 ^ (i * 0x11));
	}
	for (i = 0; i < e->nb_send; i++) {
		e->send[i].d = (VIP_DESCRIPTOR *)(e->mem + (size_t)(NB_RECV + i) * DESC_STRIDE);
		e->send[i].dsize = DESC_STRIDE;
		e->send[i].buf = e->mem + desc_area + (size_t)(NB_RECV + i) * e->buf_len;
		e->send[i].len = e->buf_len;
	}
	if (rbuf_len != 0) {
		uint8_t *rb = e->mem + desc_area + (size_t)(NB_RECV + e->nb_send) * e->buf_len;

		e->rw.d = (VIP_DESCRIPTOR *)(e->mem + PAGE);
		e->rr.d = (VIP_DESCRIPTOR *)(e->mem + PAGE + RDMA_DESC_STRIDE);
		e->rw.dsize = e->rr.dsize = RDMA_DESC_STRIDE;
		e->rw.buf = rb;
		e->rr.buf = rb + rbuf_len;
		e->rw.len = e->rr.len = rbuf_len;
	}
	e->scratch = malloc(e->max_transfer + 64);
	e->expect = malloc(e->max_transfer + 64);
	if (e->scratch == NULL || e->expect == NULL) {
		say(who, "FAIL: out of memory");
		return -1;
	}
	if (opt.rdma && server) {
		/* the target: room for MaxTransferSize at any offset of a page,
		 * and whole pages on either side; RDMA Write and Read allowed on
		 * the region (§9.10.6) as on the VI below (§9.10.5), same Ptag */
		VIP_MEM_ATTRIBUTES ta = { .Ptag = e->ptag, .EnableRdmaWrite = VIP_TRUE,
					  .EnableRdmaRead = VIP_TRUE };

		e->tlen = (((size_t)e->max_transfer + PAGE - 1) & ~(size_t)(PAGE - 1)) + 4 * PAGE;
		if (ep_alloc(e, e->tlen, &e->tmem, &e->tmem_pmem) != 0)
			return -1;
		CHK(e, VipRegisterMem(e->nic, e->tmem, e->tlen, &ta, &e->tmh));
		e->tmem_reg = true;
		e->shadow = malloc(e->tlen);
		if (e->shadow == NULL) {
			say(who, "FAIL: out of memory");
			return -1;
		}
	}

	va.ReliabilityLevel = opt.rdma ? VIP_SERVICE_RELIABLE_DELIVERY : VIP_SERVICE_UNRELIABLE;
	va.MaxTransferSize = e->max_transfer;
	va.Ptag = e->ptag;
	va.EnableRdmaWrite = opt.rdma ? VIP_TRUE : VIP_FALSE;
	va.EnableRdmaRead = opt.rdma ? VIP_TRUE : VIP_FALSE;
	CHK(e, VipCreateVi(e->nic, &va, NULL, NULL, &e->vi));
	return 0;
}

void
ep_close(struct ep *e)
{
	VIP_DESCRIPTOR *d;
	VIP_RETURN r;

	if (e->vi != NULL) {
		VipDisconnect(e->vi);
		while (VipRecvDone(e->vi, &d) == VIP_SUCCESS)
			;
		while (VipSendDone(e->vi, &d) == VIP_SUCCESS)
			;
		r = VipDestroyVi(e->vi);
		if (r != VIP_SUCCESS)
			say(e->who, "VipDestroyVi: %s", VipDpdkReturnString(r));
	}
	if (e->mem != NULL && e->nic != NULL) {
		VipDeregisterMem(e->nic, e->mem, e->mh);
		if (e->mem_pmem)
			VipDpdkFreeMem(e->nic, e->mem);
		else
			free(e->mem);
	}
	if (e->tmem != NULL && e->nic != NULL) {
		if (e->tmem_reg)
			VipDeregisterMem(e->nic, e->tmem, e->tmh);
		if (e->tmem_pmem)
			VipDpdkFreeMem(e->nic, e->tmem);
		else
			free(e->tmem);
	}
	free(e->shadow);
	if (e->ptag != NULL)
		VipDestroyPtag(e->nic, e->ptag);
	if (e->nic != NULL)
		VipCloseNic(e->nic);
	free(e->scratch);
	free(e->expect);
}

/*
 * Lay @p total bytes out as @p k segments (a random split, zero-length
 * pieces allowed, §10.4) at random offsets in @p s's buffer and write the
 * descriptor's data segments after its first @p first segments (1: the
 * address segment of an RDMA descriptor, §10.3, left for the caller).
 */
void
layout_k(struct ep *e, struct dslot *s, uint32_t total, unsigned k, unsigned first)
{
	uint32_t cuts[RDMA_SEGS + 1];
	VIP_DATA_SEGMENT *ds = desc_ds(s->d) + first;
	size_t pos = 0;
	unsigned i, j;

	cuts[0] = 0;
	cuts[k] = total;
	for (i = 1; i < k; i++)
		cuts[i] = rnd_below(&e->rng, total + 1);
	for (i = 1; i < k; i++) {         /* insertion sort of cuts[1..k-1] */
		for (j = i; j > 1 && cuts[j - 1] > cuts[j]; j--) {
			uint32_t t = cuts[j];

			cuts[j] = cuts[j - 1];
			cuts[j - 1] = t;
		}
	}
	memset(s->d, 0, s->dsize);
	s->nb_segs = k;
	for (i = 0; i < k; i++) {
		/* half the segments start right after the previous one */
		if (rnd(&e->rng) & 1)
			pos += rnd_below(&e->rng, GAP_MAX + 1);
		s->segs[i].ptr = s->buf + pos;
		s->segs[i].len = cuts[i + 1] - cuts[i];
		pos += s->segs[i].len;
		ds[i].Data.Address = s->segs[i].ptr;
		ds[i].Handle = e->mh;
		ds[i].Length = s->segs[i].len;
	}
	if (pos > s->len) {
		fprintf(stderr, "topo_check: internal error: layout overflows its buffer\n");
		abort();
	}
	s->d->CS.SegCount = (VIP_UINT16)(k + first);
}

/* A send or receive: 1..8 segments. */
void
layout(struct ep *e, struct dslot *s, uint32_t total)
{
	layout_k(e, s, total, 1 + rnd_below(&e->rng, MAX_SEGS), 0);
}

void
describe_layout(struct ep *e, const struct dslot *s, char *buf, size_t len)
{
	size_t n = 0;
	unsigned i;

	for (i = 0; i < s->nb_segs && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s+%zu:%u", i ? " " : "",
				      (size_t)(s->segs[i].ptr - s->buf), s->segs[i].len);
	(void)e;
}

int
post_recv(struct ep *e, unsigned idx)
{
	struct dslot *s = &e->recv[idx];

	layout(e, s, e->max_transfer);
	memset(s->buf, s->canary, e->buf_len);
	CHK(e, VipPostRecv(e->vi, s->d, e->mh));
	return 0;
}

/* Gather @p len bytes out of @p s's segments into @p out. */
void
gather(const struct dslot *s, uint8_t *out, uint32_t len)
{
	unsigned i;

	for (i = 0; i < s->nb_segs && len > 0; i++) {
		uint32_t take = s->segs[i].len < len ? s->segs[i].len : len;

		memcpy(out, s->segs[i].ptr, take);
		out += take;
		len -= take;
	}
}

void
scatter(const struct dslot *s, const uint8_t *in, uint32_t len)
{
	unsigned i;

	for (i = 0; i < s->nb_segs && len > 0; i++) {
		uint32_t take = s->segs[i].len < len ? s->segs[i].len : len;

		memcpy(s->segs[i].ptr, in, take);
		in += take;
		len -= take;
	}
}

/*
 * Bytes of the buffer outside the descriptor's segments must still be
 * canary: returns the offset of the first one that is not, or -1. In
 * *tail, the first byte inside a segment but beyond the message's @p len
 * bytes that is not canary, or -1: a receive descriptor whose message was
 * lost (a frame missing) takes the next message, and the lost one's bytes
 * stay where they were written (Unreliable Delivery; not an error).
 */
long
canary_check(struct ep *e, const struct dslot *s, uint32_t len, long *tail)
{
	size_t pos = 0, q;
	unsigned i;

	(void)e;
	*tail = -1;
	for (i = 0; i <= s->nb_segs; i++) {
		size_t start = i < s->nb_segs ? (size_t)(s->segs[i].ptr - s->buf) : s->len;
		size_t used;

		for (; pos < start; pos++) {
			if (s->buf[pos] != s->canary)
				return (long)pos;
		}
		if (i == s->nb_segs)
			break;
		used = s->segs[i].len < len ? s->segs[i].len : len;
		len -= (uint32_t)used;
		for (q = start + used; *tail < 0 && q < start + s->segs[i].len; q++) {
			if (s->buf[q] != s->canary)
				*tail = (long)q;
		}
		pos = start + s->segs[i].len;
	}
	return -1;
}

/*
 * Check a completed receive against what (type, seq) must contain.
 * @p got_len bytes are in e->scratch afterwards. Returns 0 if it matched.
 */
int
check_recv(struct ep *e, const struct dslot *s, const VIP_DESCRIPTOR *d, uint64_t seed,
	   uint32_t max, uint32_t chunk, bool seed_known, struct msg_info *mi)
{
	uint32_t status = d->CS.Status, want_len;
	char lay[256];
	long bad, tail;

	mi->type = d->CS.ImmediateData >> IMM_TYPE_SHIFT;
	mi->seq = d->CS.ImmediateData & IMM_SEQ_MASK;
	mi->len = d->CS.Length;
	describe_layout(e, s, lay, sizeof(lay));
	if (status != (VIP_STATUS_DONE | VIP_STATUS_OP_RECEIVE | VIP_STATUS_IMMEDIATE)) {
		say(e->who, "MISMATCH: receive status %#x (want %#x) len %u imm %#x layout [%s]",
		    status, VIP_STATUS_DONE | VIP_STATUS_OP_RECEIVE | VIP_STATUS_IMMEDIATE,
		    d->CS.Length, d->CS.ImmediateData, lay);
		return -1;
	}
	if (mi->len > max) {
		say(e->who, "MISMATCH: seq %u: length %u > max %u", mi->seq, mi->len, max);
		return -1;
	}
	gather(s, e->scratch, mi->len);
	switch (mi->type) {
	case T_HELLO:
		want_len = HELLO_LEN;
		break;
	case T_BYE:
		want_len = 0;
		break;
	case T_RCHECK:
		want_len = RCHECK_LEN;
		break;
	case T_DATA:
		if (!seed_known) {
			say(e->who, "MISMATCH: data message seq %u before the hello", mi->seq);
			return -1;
		}
		want_len = msg_size(seed, mi->seq, max, chunk);
		break;
	default:
		say(e->who, "MISMATCH: unknown message type %u (imm %#x)", mi->type,
		    d->CS.ImmediateData);
		return -1;
	}
	if (mi->len != want_len) {
		say(e->who, "MISMATCH: seq %u type %u: length %u, want %u (layout [%s])",
		    mi->seq, mi->type, mi->len, want_len, lay);
		return -1;
	}
	if (mi->type == T_DATA) {
		pattern_fill(e->expect, want_len, seed, mi->seq);
		if (memcmp(e->expect, e->scratch, want_len) != 0) {
			uint32_t i, first = 0, nbad = 0;

			for (i = 0; i < want_len; i++) {
				if (e->expect[i] != e->scratch[i]) {
					if (nbad++ == 0)
						first = i;
				}
			}
			say(e->who, "MISMATCH: seq %u len %u: %u bytes differ, first at %u "
			    "(got %#x want %#x), frame %u of the message, layout [%s]",
			    mi->seq, want_len, nbad, first, e->scratch[first], e->expect[first],
			    first / chunk, lay);
			return -1;
		}
	}
	bad = canary_check(e, s, mi->len, &tail);
	if (bad >= 0) {
		say(e->who, "MISMATCH: seq %u len %u: byte %ld of the buffer, outside the "
		    "descriptor's segments, was written (%#x, canary %#x), layout [%s]", mi->seq,
		    mi->len, bad, s->buf[bad], s->canary, lay);
		return -1;
	}
	if (tail >= 0) {
		if (e->dirty_tails++ < 3 || opt.verbose)
			say(e->who, "note: seq %u len %u: byte %ld of the buffer, in a segment but "
			    "beyond the message, was written (%#x, canary %#x): left by a lost "
			    "message? layout [%s]", mi->seq, mi->len, tail, s->buf[tail], s->canary,
			    lay);
		if (opt.strict_tail)
			return -1;
	}
	return 0;
}

/* Post a send of @p len bytes of @p data with immediate @p imm in the next slot. */
int
send_post(struct ep *e, const uint8_t *data, uint32_t len, uint32_t imm)
{
	struct dslot *s = &e->send[e->send_tail % e->nb_send];

	if (e->send_tail - e->send_head >= e->nb_send) {
		say(e->who, "FAIL: internal: all %u send slots busy", e->nb_send);
		return -1;
	}
	layout(e, s, len);
	scatter(s, data, len);
	s->d->CS.Control = VIP_CONTROL_IMMEDIATE;
	s->d->CS.ImmediateData = imm;
	s->d->CS.Length = len;
	CHK(e, VipPostSend(e->vi, s->d, e->mh));
	e->send_tail++;
	e->msgs_tx++;
	e->bytes_tx += len;
	return 0;
}

/* Wait for every posted send to complete, in order, each with success. */
int
send_reap(struct ep *e)
{
	while (e->send_head != e->send_tail) {
		struct dslot *s = &e->send[e->send_head % e->nb_send];
		VIP_DESCRIPTOR *out;
		VIP_RETURN r = VipSendWait(e->vi, 5000, &out);

		if (r != VIP_SUCCESS) {
			say(e->who, "FAIL: VipSendWait: %s", VipDpdkReturnString(r));
			return -1;
		}
		e->send_head++;
		if (out != s->d || out->CS.Status != (VIP_STATUS_DONE | VIP_STATUS_OP_SEND)) {
			say(e->who, "FAIL: send completion status %#x (descriptor %p, posted %p)",
			    out->CS.Status, (void *)out, (void *)s->d);
			return -1;
		}
	}
	return 0;
}

int
send_msg(struct ep *e, const uint8_t *data, uint32_t len, uint32_t imm)
{
	if (send_post(e, data, len, imm) != 0)
		return -1;
	return send_reap(e);
}

/* Wait up to @p ms for the head receive. 1: got one (slot in *idx), 0: timeout. */
int
recv_msg(struct ep *e, unsigned ms, VIP_DESCRIPTOR **out, unsigned *idx)
{
	VIP_RETURN r = VipRecvWait(e->vi, ms, out);

	if (r == VIP_TIMEOUT)
		return 0;
	if (r != VIP_SUCCESS) {
		say(e->who, "FAIL: VipRecvWait: %s", VipDpdkReturnString(r));
		return -1;
	}
	*idx = e->recv_head;
	if (*out != e->recv[*idx].d) {
		say(e->who, "FAIL: receive completed out of order: descriptor %p, want %p",
		    (void *)*out, (void *)e->recv[*idx].d);
		return -1;
	}
	e->recv_head = (e->recv_head + 1) % NB_RECV;
	return 1;
}

int
post_all_recv(struct ep *e)
{
	unsigned i;

	for (i = 0; i < NB_RECV; i++) {
		if (post_recv(e, i) != 0)
			return -1;
	}
	return 0;
}
