/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Packet capture to pcapng (capture.h, via_capture_proto.h).
 *
 * Each NIC has its own capture: its own client, file, rings, snaplen and
 * filter. The data path copies a frame that passes the filter into a slot
 * taken from the NIC's ring of free slots and queues the slot on its ring
 * of full ones; the capture thread writes the full slots of every running
 * capture to their clients' fds as pcapng blocks and gives them back, and
 * tells each client how many so far. The slots live in ordinary memory:
 * only CPUs touch them.
 *
 * viad writes pcapng itself rather than with rte_pcapng: DPDK 22.11's
 * names its interfaces by ethdev port, and a VIA NIC may be none (the
 * loopback and faulty glues), nor do frames that move in memory between
 * VIs of this viad ever cross a port.
 *
 * One file is one section with one interface, the NIC: Ethernet link type,
 * nanosecond timestamps, each frame's direction in epb_flags (inbound,
 * outbound), frames to the NIC's own address commented "in memory", and an
 * interface statistics block at the end with the frames seen and dropped.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ether.h>
#include <rte_lcore.h>
#include <rte_ring.h>

#include "capture.h"
#include "via_capture_proto.h"
#include "runtime.h"
#include "via_ethertype.h"
#include "via_glue.h"
#include "wire.h"
#include "via_version.h"

#define CAPTURE_SLOTS    4096    /* frames in flight to the file */
#define CAPTURE_RING     (2 * CAPTURE_SLOTS)  /* a power of two that holds them all */
#define CAPTURE_DRAIN_MS 10      /* the writer's pace when no client event comes */
#define CAPTURE_REQ_MS   2000    /* a client sends its request at once */
#define CAPTURE_BUSY_MS  200     /* ... and no longer while other captures run */
#define CAPTURE_PROGRESS_MS 500  /* how often a client is told the count */
#define OUT_BUF          (256u * 1024u)
#define LINKTYPE_ETHERNET 1

/* pcapng block types and option codes (draft-ietf-opsawg-pcapng) */
#define PCAPNG_SHB 0x0A0D0D0Au
#define PCAPNG_IDB 0x00000001u
#define PCAPNG_ISB 0x00000005u
#define PCAPNG_EPB 0x00000006u
#define PCAPNG_BYTE_ORDER 0x1A2B3C4Du
#define OPT_END        0
#define OPT_COMMENT    1
#define SHB_USERAPPL   4
#define IF_NAME        2
#define IF_DESCRIPTION 3
#define IF_TSRESOL     9
#define EPB_FLAGS      2
#define EPB_INBOUND    0x1u
#define EPB_OUTBOUND   0x2u
#define ISB_STARTTIME  2
#define ISB_ENDTIME    3
#define ISB_IFRECV     4
#define ISB_OSDROP     7
#define ISB_USRDELIV   8

/* One copied frame. */
struct capture_slot {
	uint64_t cycles;     /* timer cycles when it passed */
	uint32_t wire_len;   /* its length */
	uint32_t cap_len;    /* bytes kept: at most the snaplen */
	uint32_t dir;        /* enum via_capture_dir */
	uint8_t data[];
};

/* The pcapng output: buffered writes to the client's fd. */
struct capture_out {
	int fd;
	int err;             /* the first write error, -errno; then nothing is written */
	size_t len;
	uint8_t *buf;
};

/* Which VIA frames a capture keeps (via_capture_proto.h). */
struct capture_filter {
	uint32_t vi;         /* 0: any */
	uint32_t conn_id;    /* 0: any */
	int opcode;          /* -1: any */
};

/* The capture of one NIC. */
struct capture {
	/* the data path uses these while the NIC's bit is set */
	struct rte_ring *free_slots;
	struct rte_ring *full_slots;
	uint8_t *slab;
	uint32_t snaplen;
	struct capture_filter filter;
	uint64_t dropped;          /* atomic: frames that found no free slot */
	int64_t to_take;           /* atomic: frames the data path may still queue
				    * (--count; INT64_MAX: no limit). Frames past
				    * the count are not for the capture: not drops */
	/* the capture thread's */
	const struct via_nic *nic; /* NULL: none runs */
	int client;
	struct capture_out out;
	uint64_t count;            /* frames to write; 0: no limit */
	uint64_t written;
	uint64_t taken;            /* frames taken from the full ring */
	uint64_t start_ns;
	uint64_t progress_ms;      /* when the client was last told the count */
	struct via_capture_status status;   /* under cap.status_lock */
};

uint32_t via_capture_nics;

static struct {
	struct viad *d;
	int lfd;                   /* the capture socket */
	int stop_fd;               /* eventfd: viad is stopping */
	bool running;              /* the thread was started */
	pthread_t thread;
	char path[sizeof(((struct sockaddr_un *)NULL)->sun_path)];
	/* base of the timestamps: the same instant on both clocks */
	uint64_t base_ns;
	uint64_t base_cycles;
	pthread_mutex_t status_lock;  /* telemetry reads the status */
	struct capture nics[VIA_CONF_MAX_PORTS];
} cap = { .lfd = -1, .stop_fd = -1, .status_lock = PTHREAD_MUTEX_INITIALIZER };

/* ---- the data path ------------------------------------------------------- */

/* Whether frame @p m passes filter @p f: with a filter, VIA frames only. */
static bool
filter_pass(const struct capture_filter *f, const struct rte_mbuf *m)
{
	const struct rte_ether_hdr *eth;
	const struct via_wire_hdr *h;
	struct via_wire_hdr copy;

	if (f->vi == 0 && f->conn_id == 0 && f->opcode < 0)
		return true;
	if (rte_pktmbuf_pkt_len(m) < VIA_FRAME_HDR_LEN)
		return false;
	eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	if (eth->ether_type != rte_cpu_to_be_16(VIA_ETHERTYPE))
		return false;
	h = rte_pktmbuf_read(m, RTE_ETHER_HDR_LEN, sizeof(copy), &copy);
	return (f->opcode < 0 || h->opcode == f->opcode) &&
	       (f->vi == 0 || via_wire_dst_vi(h) == f->vi || via_wire_src_vi(h) == f->vi) &&
	       (f->conn_id == 0 || via_wire_conn_id(h) == f->conn_id);
}

void
via_capture_frames(const struct via_nic *nic, struct rte_mbuf *const *pkts, uint16_t n,
		   enum via_capture_dir dir)
{
	struct capture *c = &cap.nics[nic->index];
	uint64_t now = rte_get_timer_cycles();
	uint16_t i;

	/* the hook's relaxed load saw the bit: this pairs with the release
	 * store that set it, after the rings were made */
	rte_atomic_thread_fence(__ATOMIC_ACQUIRE);
	for (i = 0; i < n; i++) {
		const struct rte_mbuf *m = pkts[i];
		uint32_t len = RTE_MIN(rte_pktmbuf_pkt_len(m), c->snaplen);
		struct capture_slot *s;
		const void *p;

		if (!filter_pass(&c->filter, m))
			continue;
		if (__atomic_sub_fetch(&c->to_take, 1, __ATOMIC_RELAXED) < 0)
			return;                 /* the count is queued already */
		if (rte_ring_mc_dequeue(c->free_slots, (void **)&s) != 0) {
			/* lost: a later frame takes its place in the count */
			__atomic_fetch_add(&c->to_take, 1, __ATOMIC_RELAXED);
			__atomic_fetch_add(&c->dropped, 1, __ATOMIC_RELAXED);
			continue;
		}
		/* zero-copy frames are chains: the bytes are gathered */
		p = rte_pktmbuf_read(m, 0, len, s->data);
		if (p != s->data)
			memcpy(s->data, p, len);
		s->cycles = now;
		s->wire_len = rte_pktmbuf_pkt_len(m);
		s->cap_len = len;
		s->dir = dir;
		/* as many slots as the ring holds: it never refuses */
		rte_ring_mp_enqueue(c->full_slots, s);
	}
}

/* ---- pcapng --------------------------------------------------------------- */

static int
write_all(int fd, const uint8_t *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static void
out_flush(struct capture_out *o)
{
	if (o->err == 0 && o->len > 0)
		o->err = write_all(o->fd, o->buf, o->len);
	o->len = 0;
}

static void
out_put(struct capture_out *o, const void *p, size_t len)
{
	if (o->len + len > OUT_BUF)
		out_flush(o);
	if (len > OUT_BUF) {
		if (o->err == 0)
			o->err = write_all(o->fd, p, len);
		return;
	}
	memcpy(o->buf + o->len, p, len);
	o->len += len;
}

static void
out_u32(struct capture_out *o, uint32_t v)
{
	out_put(o, &v, sizeof(v));
}

static void
out_pad(struct capture_out *o, size_t len)
{
	static const uint8_t zero[4];

	out_put(o, zero, (4 - (len & 3)) & 3);
}

/* Bytes an option of @p len bytes takes: code, length, value, padding. */
static uint32_t
opt_size(size_t len)
{
	return (uint32_t)(4 + ((len + 3) & ~(size_t)3));
}

static void
out_opt(struct capture_out *o, uint16_t code, const void *val, size_t len)
{
	uint16_t hdr[2] = { code, (uint16_t)len };

	out_put(o, hdr, sizeof(hdr));
	out_put(o, val, len);
	out_pad(o, len);
}

static void
out_shb(struct capture_out *o)
{
	char appl[64];
	int64_t section_len = -1;   /* not known in advance */
	uint16_t version[2] = { 1, 0 };
	uint32_t total;

	snprintf(appl, sizeof(appl), "viad (VIA-DPDK) %s", VIA_DPDK_VERSION);
	total = 28 + opt_size(strlen(appl)) + 4;
	out_u32(o, PCAPNG_SHB);
	out_u32(o, total);
	out_u32(o, PCAPNG_BYTE_ORDER);
	out_put(o, version, sizeof(version));
	out_put(o, &section_len, sizeof(section_len));
	out_opt(o, SHB_USERAPPL, appl, strlen(appl));
	out_opt(o, OPT_END, NULL, 0);
	out_u32(o, total);
}

static void
out_idb(struct capture_out *o, const struct via_nic *nic, uint32_t snaplen)
{
	const uint8_t *m = nic->info.mac;
	const uint8_t tsresol = 9;   /* nanoseconds */
	uint16_t link[2] = { LINKTYPE_ETHERNET, 0 };
	char desc[160];
	uint32_t total;

	snprintf(desc, sizeof(desc), "VIA NIC %s: glue %s, MAC %02x:%02x:%02x:%02x:%02x:%02x, MTU %u",
		 nic->info.name, via_port_glue_name(nic->port), m[0], m[1], m[2], m[3], m[4], m[5],
		 nic->info.mtu);
	total = 16 + opt_size(strlen(nic->info.name)) + opt_size(strlen(desc)) + opt_size(1) + 4 + 4;
	out_u32(o, PCAPNG_IDB);
	out_u32(o, total);
	out_put(o, link, sizeof(link));
	out_u32(o, snaplen);
	out_opt(o, IF_NAME, nic->info.name, strlen(nic->info.name));
	out_opt(o, IF_DESCRIPTION, desc, strlen(desc));
	out_opt(o, IF_TSRESOL, &tsresol, 1);
	out_opt(o, OPT_END, NULL, 0);
	out_u32(o, total);
}

static uint64_t
slot_ns(uint64_t cycles)
{
	uint64_t hz = rte_get_timer_hz();
	uint64_t delta = cycles > cap.base_cycles ? cycles - cap.base_cycles : 0;

	/* in two steps: delta * 1e9 overflows after seconds */
	return cap.base_ns + delta / hz * 1000000000ull + delta % hz * 1000000000ull / hz;
}

/* A timestamp as pcapng keeps it: high word first. */
static void
out_ts(struct capture_out *o, uint64_t ns)
{
	out_u32(o, (uint32_t)(ns >> 32));
	out_u32(o, (uint32_t)ns);
}

static void
out_epb(struct capture_out *o, const struct capture_slot *s)
{
	static const char in_memory[] = "in memory";
	uint32_t flags = s->dir == VIA_CAPTURE_RX ? EPB_INBOUND : EPB_OUTBOUND;
	size_t comment = s->dir == VIA_CAPTURE_MEM ? strlen(in_memory) : 0;
	uint32_t total = 28 + ((s->cap_len + 3) & ~3u) + opt_size(sizeof(flags)) +
			 (comment ? opt_size(comment) : 0) + 4 + 4;

	out_u32(o, PCAPNG_EPB);
	out_u32(o, total);
	out_u32(o, 0);                      /* the only interface */
	out_ts(o, slot_ns(s->cycles));
	out_u32(o, s->cap_len);
	out_u32(o, s->wire_len);
	out_put(o, s->data, s->cap_len);
	out_pad(o, s->cap_len);
	out_opt(o, EPB_FLAGS, &flags, sizeof(flags));
	if (comment)
		out_opt(o, OPT_COMMENT, in_memory, comment);
	out_opt(o, OPT_END, NULL, 0);
	out_u32(o, total);
}

static void
out_u64_opt(struct capture_out *o, uint16_t code, uint64_t v)
{
	out_opt(o, code, &v, sizeof(v));
}

static void
out_ts_opt(struct capture_out *o, uint16_t code, uint64_t ns)
{
	uint32_t ts[2] = { (uint32_t)(ns >> 32), (uint32_t)ns };

	out_opt(o, code, ts, sizeof(ts));
}

static void
out_isb(struct capture_out *o, uint64_t start_ns, uint64_t end_ns, uint64_t seen,
	uint64_t dropped, uint64_t written)
{
	uint32_t total = 20 + 5 * opt_size(8) + 4 + 4;

	out_u32(o, PCAPNG_ISB);
	out_u32(o, total);
	out_u32(o, 0);
	out_ts(o, end_ns);
	out_ts_opt(o, ISB_STARTTIME, start_ns);
	out_ts_opt(o, ISB_ENDTIME, end_ns);
	out_u64_opt(o, ISB_IFRECV, seen);
	out_u64_opt(o, ISB_OSDROP, dropped);
	out_u64_opt(o, ISB_USRDELIV, written);
	out_opt(o, OPT_END, NULL, 0);
	out_u32(o, total);
}

/* ---- one capture ---------------------------------------------------------- */

static uint64_t
realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static size_t
slot_size(uint32_t snaplen)
{
	return RTE_ALIGN_CEIL(sizeof(struct capture_slot) + snaplen, RTE_CACHE_LINE_SIZE);
}

static void
rings_free(struct capture *c)
{
	free(c->free_slots);
	free(c->full_slots);
	free(c->slab);
	c->free_slots = c->full_slots = NULL;
	c->slab = NULL;
}

/*
 * Rings in ordinary memory (no memzone, so no name to clash with and no
 * hugepage taken): the free slots, which any lcore takes, and the full
 * ones, which any lcore queues and the capture thread alone takes.
 */
static struct rte_ring *
ring_new(const char *name, unsigned flags)
{
	ssize_t size = rte_ring_get_memsize(CAPTURE_RING);
	struct rte_ring *r;

	if (size < 0)
		return NULL;
	r = aligned_alloc(RTE_CACHE_LINE_SIZE, RTE_ALIGN_CEIL((size_t)size, RTE_CACHE_LINE_SIZE));
	if (r != NULL && rte_ring_init(r, name, CAPTURE_RING, flags) != 0) {
		free(r);
		r = NULL;
	}
	return r;
}

static int
rings_new(struct capture *c, uint32_t snaplen)
{
	size_t ss = slot_size(snaplen);
	unsigned i;

	c->free_slots = ring_new("viad_capture_free", 0);
	c->full_slots = ring_new("viad_capture_full", RING_F_SC_DEQ);
	c->slab = aligned_alloc(RTE_CACHE_LINE_SIZE, ss * CAPTURE_SLOTS);
	if (c->free_slots == NULL || c->full_slots == NULL || c->slab == NULL) {
		rings_free(c);
		return -ENOMEM;
	}
	for (i = 0; i < CAPTURE_SLOTS; i++)
		rte_ring_enqueue(c->free_slots, c->slab + i * ss);
	c->snaplen = snaplen;
	return 0;
}

/* Write what the data path queued while the count allows; the rest is
 * only given back. */
static void
drain(struct capture *c)
{
	struct capture_slot *slots[64];
	unsigned n, i;

	while ((n = rte_ring_sc_dequeue_burst(c->full_slots, (void **)slots, RTE_DIM(slots),
					      NULL)) > 0) {
		for (i = 0; i < n; i++) {
			if (c->count == 0 || c->written < c->count) {
				out_epb(&c->out, slots[i]);
				c->written++;
			}
		}
		rte_ring_mp_enqueue_bulk(c->free_slots, (void **)slots, n, NULL);
		c->taken += n;
	}
	out_flush(&c->out);
	pthread_mutex_lock(&cap.status_lock);
	c->status.frames = c->written;
	c->status.dropped = __atomic_load_n(&c->dropped, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&cap.status_lock);
}

/* The request and its fd, within @p ms. @return 0, -EPROTO (malformed),
 * -EBADF (no fd), -errno */
static int
recv_request(int c, struct via_capture_req *q, int *fd, unsigned ms)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} cbuf;
	struct iovec iov = { .iov_base = q, .iov_len = sizeof(*q) };
	struct msghdr mh = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf.buf, .msg_controllen = sizeof(cbuf.buf),
	};
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = ms % 1000 * 1000 };
	struct cmsghdr *cm;
	ssize_t n;

	*fd = -1;
	if (setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0)
		return -errno;
	n = recvmsg(c, &mh, MSG_CMSG_CLOEXEC);
	if (n < 0)
		return -errno;
	cm = CMSG_FIRSTHDR(&mh);
	if (cm != NULL && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
	    cm->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(fd, CMSG_DATA(cm), sizeof(int));
	if (n != (ssize_t)sizeof(*q) || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
	    q->magic != VIA_CAPTURE_MAGIC || q->version != VIA_CAPTURE_VERSION ||
	    memchr(q->port, '\0', sizeof(q->port)) == NULL || q->reserved != 0 ||
	    memchr(q->filter_opcode, '\0', sizeof(q->filter_opcode)) == NULL)
		return -EPROTO;
	if (*fd < 0)
		return -EBADF;
	return 0;
}

static void
reply(int c, uint32_t kind, int status, uint32_t snaplen, uint64_t frames, uint64_t dropped)
{
	struct via_capture_rep r = {
		.magic = VIA_CAPTURE_MAGIC, .kind = kind, .status = status,
		.snaplen = snaplen, .frames = frames, .dropped = dropped,
	};

	/* a client that went away, or does not read, misses it: nothing
	 * else to do, and never a wait */
	if (send(c, &r, sizeof(r), MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		VLOG_DBG("capture: reply lost: %s", strerror(errno));
}

/* The opcode a filter names: a name of wire.c's table (any case) or a
 * number. @return the opcode, -1 for none given, -EINVAL */
static int
filter_opcode(const char *text)
{
	char *end;
	unsigned long v;
	int op;

	if (text[0] == '\0')
		return -1;
	for (op = 0; op < VIA_OP_COUNT; op++)
		if (via_wire_ops[op].name != NULL && strcasecmp(text, via_wire_ops[op].name) == 0)
			return op;
	v = strtoul(text, &end, 0);
	return *end == '\0' && v < VIA_OP_COUNT && via_wire_ops[v].name != NULL ? (int)v : -EINVAL;
}

/* Frames of @p nic and the snaplen asked for: the largest frame at most. */
static uint32_t
snaplen_for(const struct via_nic *nic, uint32_t asked)
{
	uint32_t frame = (uint32_t)nic->info.mtu + RTE_ETHER_HDR_LEN;

	return asked == 0 || asked > frame ? frame : asked;
}

/* Describe @p f for the log: " (VI 3, SEND, connection 0x...)". */
static void
filter_text(const struct capture_filter *f, char *buf, size_t len)
{
	int n = 0;

	buf[0] = '\0';
	if (f->vi != 0)
		n += snprintf(buf + n, len - (size_t)n, ", VI %u", f->vi);
	if (f->opcode >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, ", %s", via_wire_ops[f->opcode].name);
	if (f->conn_id != 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, ", connection 0x%08x", f->conn_id);
}

/* Start capture @p c of @p nic for client @p client, which asked @p q, into
 * @p fd. @return 0, -errno (nothing was started; @p fd is still the caller's) */
static int
capture_start(struct capture *c, const struct via_nic *nic, int client,
	      const struct via_capture_req *q, int fd)
{
	char what[96];
	int op = filter_opcode(q->filter_opcode), rc;

	if (op < -1)
		return -EINVAL;
	c->out = (struct capture_out){ .fd = fd, .buf = malloc(OUT_BUF) };
	rc = c->out.buf == NULL ? -ENOMEM : rings_new(c, snaplen_for(nic, q->snaplen));
	if (rc != 0) {
		free(c->out.buf);
		return rc;
	}
	c->filter = (struct capture_filter){ .vi = q->filter_vi, .conn_id = q->filter_conn_id,
					     .opcode = op };
	c->count = q->count;
	c->written = c->taken = 0;
	c->start_ns = realtime_ns();
	c->progress_ms = via_now_ms();
	__atomic_store_n(&c->dropped, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&c->to_take, q->count != 0 ? (int64_t)RTE_MIN(q->count, (uint64_t)INT64_MAX)
						    : INT64_MAX, __ATOMIC_RELAXED);
	out_shb(&c->out);
	out_idb(&c->out, nic, c->snaplen);
	out_flush(&c->out);
	if (c->out.err != 0) {
		rc = c->out.err;
		free(c->out.buf);
		rings_free(c);
		return rc;
	}
	c->nic = nic;
	c->client = client;
	pthread_mutex_lock(&cap.status_lock);
	c->status = (struct via_capture_status){ .active = true };
	via_copy_name(c->status.port, sizeof(c->status.port), nic->info.name);
	pthread_mutex_unlock(&cap.status_lock);
	reply(client, VIA_CAPTURE_STARTED, 0, c->snaplen, 0, 0);
	filter_text(&c->filter, what, sizeof(what));
	VLOG_INFO("capture: %s started (snaplen %u%s%s)", nic->info.name, c->snaplen, what,
		  c->count ? "" : ", until the client stops");
	__atomic_fetch_or(&via_capture_nics, 1u << nic->index, __ATOMIC_RELEASE);
	return 0;
}

/* End capture @p c (its count, its client's hang-up, a write error, viad
 * stopping): the rest of its frames, the statistics, the client told. */
static void
capture_end(struct capture *c)
{
	uint64_t dropped;

	__atomic_fetch_and(&via_capture_nics, ~(1u << c->nic->index), __ATOMIC_RELEASE);
	/* a data path that saw the bit holds a shard lock until it is done
	 * with the rings: once every lock was ours, none uses them */
	via_dp_lock_all(cap.d);
	via_dp_unlock_all(cap.d);
	drain(c);
	dropped = __atomic_load_n(&c->dropped, __ATOMIC_RELAXED);
	out_isb(&c->out, c->start_ns, realtime_ns(), c->taken + dropped, dropped, c->written);
	out_flush(&c->out);
	pthread_mutex_lock(&cap.status_lock);
	c->status.active = false;
	pthread_mutex_unlock(&cap.status_lock);
	VLOG_INFO("capture: %s stopped: %llu frames written, %llu dropped%s%s", c->nic->info.name,
		  (unsigned long long)c->written, (unsigned long long)dropped,
		  c->out.err ? ": " : "", c->out.err ? strerror(-c->out.err) : "");
	reply(c->client, VIA_CAPTURE_DONE, c->out.err, c->snaplen, c->written, dropped);
	rings_free(c);
	free(c->out.buf);
	close(c->out.fd);
	close(c->client);
	c->nic = NULL;
	c->client = -1;
}

/* A client connected: check who it is and what it asks, within @p wait_ms;
 * start its capture, or tell it why not. */
static void
serve(int client, unsigned wait_ms)
{
	struct via_capture_req q;
	const struct via_nic *nic = NULL;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int rc, mode, fd;

	/* a request comes at once: a client that waits is refused */
	rc = recv_request(client, &q, &fd, wait_ms);
	/* the socket's mode admits viad's user only; a changed mode must not
	 * admit others, whose frames these are not */
	if (rc == 0 && (getsockopt(client, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
			(cred.uid != 0 && cred.uid != geteuid())))
		rc = -EPERM;
	if (rc == 0) {
		nic = via_nic_by_name(cap.d, q.port);
		mode = fcntl(fd, F_GETFL);
		if (nic == NULL)
			rc = -ENODEV;
		else if (mode < 0 || (mode & O_ACCMODE) == O_RDONLY)
			rc = -EBADF;
		else if (cap.nics[nic->index].nic != NULL)
			rc = -EBUSY;       /* one capture per NIC */
	}
	if (rc == 0)
		rc = capture_start(&cap.nics[nic->index], nic, client, &q, fd);
	if (rc == 0)
		return;
	VLOG_INFO("capture: request%s%s refused: %s", nic ? " for " : "",
		  nic ? nic->info.name : "", strerror(-rc));
	reply(client, VIA_CAPTURE_ERROR, rc, 0, 0, 0);
	if (fd >= 0)
		close(fd);
	close(client);
}

static void *
capture_thread(void *arg)
{
	struct pollfd pf[2 + VIA_CONF_MAX_PORTS];
	struct capture *polled[VIA_CONF_MAX_PORTS];
	sigset_t pipe;
	unsigned i, n;

	(void)arg;
	/* a client's pipe may close: the write fails with EPIPE instead of
	 * killing viad (the signal stays pending on this thread, harmless) */
	sigemptyset(&pipe);
	sigaddset(&pipe, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe, NULL);
	for (;;) {
		uint64_t now;

		pf[0] = (struct pollfd){ .fd = cap.stop_fd, .events = POLLIN };
		pf[1] = (struct pollfd){ .fd = cap.lfd, .events = POLLIN };
		for (i = 0, n = 0; i < VIA_CONF_MAX_PORTS; i++) {
			if (cap.nics[i].nic == NULL)
				continue;
			polled[n] = &cap.nics[i];
			pf[2 + n++] = (struct pollfd){ .fd = cap.nics[i].client, .events = POLLIN };
		}
		if (poll(pf, 2 + n, n > 0 ? CAPTURE_DRAIN_MS : -1) < 0 && errno != EINTR)
			break;
		if (pf[0].revents != 0)
			break;
		now = via_now_ms();
		for (i = 0; i < n; i++) {
			struct capture *c = polled[i];

			drain(c);
			/* the client hung up or sent anything: it wants it ended */
			if ((c->count != 0 && c->written >= c->count) || c->out.err != 0 ||
			    pf[2 + i].revents != 0) {
				capture_end(c);
			} else if (now - c->progress_ms >= CAPTURE_PROGRESS_MS) {
				c->progress_ms = now;
				reply(c->client, VIA_CAPTURE_PROGRESS, 0, c->snaplen, c->written,
				      __atomic_load_n(&c->dropped, __ATOMIC_RELAXED));
			}
		}
		if (pf[1].revents & POLLIN) {
			int client = accept4(cap.lfd, NULL, NULL, SOCK_CLOEXEC);

			if (client >= 0)
				serve(client, n > 0 ? CAPTURE_BUSY_MS : CAPTURE_REQ_MS);
		}
	}
	for (i = 0; i < VIA_CONF_MAX_PORTS; i++)
		if (cap.nics[i].nic != NULL)
			capture_end(&cap.nics[i]);
	return NULL;
}

int
via_capture_init(struct viad *d)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	unsigned i;
	int rc;

	cap.d = d;
	for (i = 0; i < VIA_CONF_MAX_PORTS; i++)
		cap.nics[i].client = -1;
	cap.base_cycles = rte_get_timer_cycles();
	cap.base_ns = realtime_ns();
	if ((size_t)snprintf(cap.path, sizeof(cap.path), "%s/%s", rte_eal_get_runtime_dir(),
			     VIA_CAPTURE_SOCKET) >= sizeof(cap.path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, cap.path);
	cap.lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	cap.stop_fd = eventfd(0, EFD_CLOEXEC);
	if (cap.lfd < 0 || cap.stop_fd < 0) {
		rc = -errno;
		goto fail;
	}
	rc = via_socket_claim(cap.path);
	if (rc != 0)
		goto fail;
	if (bind(cap.lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || chmod(cap.path, 0600) != 0 ||
	    listen(cap.lfd, 4) != 0) {
		rc = -errno;
		goto fail;
	}
	rc = rte_ctrl_thread_create(&cap.thread, "viad-capture", NULL, capture_thread, NULL);
	if (rc != 0) {
		rc = -rc;
		goto fail;
	}
	cap.running = true;
	return 0;
fail:
	via_capture_fini();
	return rc;
}

void
via_capture_fini(void)
{
	if (cap.running) {
		eventfd_write(cap.stop_fd, 1);
		pthread_join(cap.thread, NULL);
		cap.running = false;
	}
	if (cap.lfd >= 0) {
		close(cap.lfd);
		unlink(cap.path);
		cap.lfd = -1;
	}
	if (cap.stop_fd >= 0) {
		close(cap.stop_fd);
		cap.stop_fd = -1;
	}
}

unsigned
via_capture_get_status(struct via_capture_status *st, unsigned max)
{
	unsigned i, n = 0;

	pthread_mutex_lock(&cap.status_lock);
	for (i = 0; i < VIA_CONF_MAX_PORTS && n < max; i++) {
		if (cap.nics[i].status.port[0] == '\0')
			continue;
		st[n] = cap.nics[i].status;
		if (st[n].active)
			st[n].dropped = __atomic_load_n(&cap.nics[i].dropped, __ATOMIC_RELAXED);
		n++;
	}
	pthread_mutex_unlock(&cap.status_lock);
	return n;
}
