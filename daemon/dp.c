/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The data path of Unreliable Delivery (VIA §2.5.1, §6, §10): posted
 * descriptors become frames, frames become completed descriptors.
 *
 * Send: a descriptor is copied out of the client's registered memory,
 * validated as VIA §10.2-10.4 say (format, protection, length), its gather
 * list cut into frames of the port MTU, and completed once transmitted
 * (VIA §2.5.1: completion means "sent", not "received").
 *
 * Receive: the first frame of a message takes the head receive descriptor;
 * frames are placed at their offset straight into its scatter list; the
 * last one completes it. On Unreliable Delivery a lost or corrupt frame
 * loses its message: the descriptor waits for the next one, so corrupt data
 * never completes as success, and message ids make a duplicate message
 * impossible to deliver twice.
 *
 * Completion (VIA §6.4.1, §10.2): Length and ImmediateData first, then
 * Status with Done in one store after them, then the queue's wait word,
 * then the CQ entry (VIA §6.4.2).
 */
#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>

#include <rte_cycles.h>
#include <rte_ether.h>
#include <rte_lcore.h>
#include <rte_ring.h>

#include <vipl.h>

#include "capture.h"
#include "dp.h"
#include "via_glue.h"

#define DP_BURST        32
#define DP_SEND_BUDGET  16     /* descriptors per VI per turn: fairness */
#define DP_SEND_QUANTUM 16384  /* bytes per VI per turn (deficit round robin) */
#define DP_DESC_COST    256    /* bytes a descriptor costs besides its data */
#define DP_TXQ_BYTES    (32u * 1024u) /* queued ahead of a message: port or inbox */
#define DP_TX_RETRIES   64
#define INBOX_SIZE      4096   /* frames handed to a shard or the control thread */
#define BACKLOG_SIZE    8192   /* frames held while the port is busy */
#define INBOX_ROUNDS    8      /* inbox bursts per iteration */
#define DESC_CS_SIZE    sizeof(VIP_CONTROL_SEGMENT)
#define DESC_SEG_SIZE   sizeof(VIP_DATA_SEGMENT)
#define STATUS_OFF      offsetof(VIP_CONTROL_SEGMENT, Status)
#define IMM_OFF         offsetof(VIP_CONTROL_SEGMENT, ImmediateData)
#define CONTROL_OFF     offsetof(VIP_CONTROL_SEGMENT, Control)
#define CONTROL_KNOWN   (VIP_CONTROL_OP_MASK | VIP_CONTROL_IMMEDIATE | VIP_CONTROL_QFENCE)
/* frames of less data are copied: an external buffer's bookkeeping (an
 * mbuf, its attach, the tracker's atomics) costs more than copying them */
#define ZC_MIN_BYTES    1024

_Static_assert(offsetof(VIP_CONTROL_SEGMENT, Length) == IMM_OFF + 4, "Imm then Length");
_Static_assert(sizeof(struct via_wire_hdr) == VIA_WIRE_HDR_LEN, "viad.h knows its size");

static struct via_poll_stats *dp_stats(void);
static unsigned read_answers(struct viad *d, struct via_vi *vi, uint32_t budget);

/* The inbox of the shard this lcore runs (NULL: the control thread). */
static RTE_DEFINE_PER_LCORE(struct rte_ring *, cur_inbox);

int
via_dp_init(struct viad *d)
{
	char name[RTE_RING_NAMESIZE];
	unsigned i;

	for (i = 0; i < d->nb_nics; i++) {
		snprintf(name, sizeof(name), "via_backlog_%u", i);
		/* producers and the consumer all hold the NIC's tx_lock */
		d->nics[i].backlog = rte_ring_create(name, BACKLOG_SIZE, (int)rte_socket_id(),
						     RING_F_SP_ENQ | RING_F_SC_DEQ);
		if (d->nics[i].backlog == NULL)
			return -ENOMEM;
	}
	for (i = 0; i < d->nb_shards; i++) {
		struct via_shard *sh = &d->shards[i];

		snprintf(name, sizeof(name), "via_inbox_%u", i);
		/* any shard and the control thread hand frames in; one takes them */
		sh->inbox = rte_ring_create(name, INBOX_SIZE, (int)rte_socket_id(),
					    RING_F_SC_DEQ);
		if (sh->inbox == NULL)
			return -ENOMEM;
	}
	d->cm_inbox = rte_ring_create("via_cm_inbox", INBOX_SIZE, (int)rte_socket_id(),
				      RING_F_SC_DEQ);
	return d->cm_inbox == NULL ? -ENOMEM : 0;
}

static void
ring_drop(struct rte_ring **r)
{
	struct rte_mbuf *m;

	if (*r == NULL)
		return;
	while (rte_ring_dequeue(*r, (void **)&m) == 0)
		rte_pktmbuf_free(m);
	rte_ring_free(*r);
	*r = NULL;
}

void
via_dp_fini(struct viad *d)
{
	unsigned i;

	for (i = 0; i < d->nb_nics; i++)
		ring_drop(&d->nics[i].backlog);
	for (i = 0; i < d->nb_shards; i++)
		ring_drop(&d->shards[i].inbox);
	ring_drop(&d->cm_inbox);
	/* the frames are gone: so are their trackers */
	for (i = 0; i < d->nb_shards; i++) {
		via_zc_reap(d, &d->shards[i]);
		via_zc_fini(&d->shards[i]);
	}
}

/* ---- transmit ------------------------------------------------------------ */

uint32_t
via_dp_frame_payload(const struct via_nic *nic)
{
	uint32_t room = rte_pktmbuf_data_room_size(via_nics_pool()) - RTE_PKTMBUF_HEADROOM;
	uint32_t mtu = RTE_MIN((uint32_t)via_port_mtu(nic->port), room - RTE_ETHER_HDR_LEN);

	return mtu - (uint32_t)sizeof(struct via_wire_hdr);
}

/* Hand frames to the port; what it does not take now waits in order. */
static uint16_t
port_tx(struct via_nic *nic, struct rte_mbuf **pkts, uint16_t n)
{
	uint16_t sent = 0, tries = 0;

	while (sent < n && tries++ < DP_TX_RETRIES)
		sent += via_port_tx_burst(nic->port, 0, pkts + sent, (uint16_t)(n - sent));
	return sent;
}

/* Send what waits in the backlog, oldest first (tx_lock held). @return frames left. */
static unsigned
backlog_flush(struct via_nic *nic, struct via_poll_stats *st)
{
	struct rte_mbuf *pkts[DP_BURST];
	unsigned n;

	while ((n = rte_ring_dequeue_burst_start(nic->backlog, (void **)pkts, DP_BURST,
						 NULL)) > 0) {
		uint16_t sent = port_tx(nic, pkts, (uint16_t)n);

		rte_ring_dequeue_finish(nic->backlog, sent);
		st->frames_tx += sent;
		if (sent < n)
			break;
	}
	return rte_ring_count(nic->backlog);
}

/*
 * Whether frames of @p nic to @p mac stay in memory: to the NIC's own
 * address, handed to a shard's inbox, not through the port (a faulty NIC
 * sends them through its port, to exercise the injector).
 */
static inline bool
to_self(const struct via_nic *nic, const uint8_t mac[6])
{
	return !nic->self_via_port &&
	       memcmp(mac, via_port_mac(nic->port)->addr_bytes, RTE_ETHER_ADDR_LEN) == 0;
}

/* Whether frame @p m is for the connection manager. */
static inline bool
frame_is_cm(const struct rte_mbuf *m)
{
	const struct via_wire_hdr *h = rte_pktmbuf_mtod_offset(m, const struct via_wire_hdr *,
								RTE_ETHER_HDR_LEN);

	return via_wire_ops[h->opcode].flags & VIA_OPF_CM;
}

/*
 * Where frame @p m goes next: the inbox of its destination VI's shard, CM
 * frames included, so that a VI's frames stay in order (a NAK before the
 * DISC that follows it); the control thread's for a CM frame naming no VI
 * of this viad; shard 0's for other frames naming none (it answers RESET).
 */
static struct rte_ring *
frame_route(struct viad *d, const struct rte_mbuf *m)
{
	const struct via_wire_hdr *h = rte_pktmbuf_mtod_offset(m, const struct via_wire_hdr *,
								RTE_ETHER_HDR_LEN);
	const struct via_vi *vi = via_idtab_lookup(&d->vis, via_wire_dst_vi(h));

	/* VIs are freed only under every shard's lock: @p vi stays valid */
	if (vi != NULL)
		return vi->shard->inbox;
	return frame_is_cm(m) ? d->cm_inbox : d->shards[0].inbox;
}

/*
 * Hand frames to another shard or the control thread (@p to), waking
 * whoever may sleep. @return how many it took; the caller frees the rest.
 */
static unsigned
hand_over(struct viad *d, struct via_nic *nic, struct rte_ring *to, struct rte_mbuf **pkts,
	  unsigned n)
{
	unsigned i, took;

	for (i = 0; i < n; i++)
		pkts[i]->port = nic->index;
	took = rte_ring_enqueue_burst(to, (void **)pkts, n, NULL);
	/* this lcore's own inbox: it is awake, no one to wake */
	if (took == 0 || to == RTE_PER_LCORE(cur_inbox))
		return took;
	if (to == d->cm_inbox) {
		eventfd_write(d->cm_fd, 1);
		return took;
	}
	/* the frames before the look at poller_asleep (StoreLoad), against
	 * via_dp_prepare_sleep()'s count before its look at the inbox */
	rte_atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&d->poller_asleep, __ATOMIC_SEQ_CST) != 0)
		eventfd_write(d->wake_fd, 1);
	return took;
}

void
via_dp_xmit(struct via_nic *nic, struct rte_mbuf **pkts, uint16_t n)
{
	struct via_poll_stats *st = dp_stats();
	uint16_t sent = 0;
	unsigned held;

	if (n == 0)
		return;
	/* every frame of one call goes to the same destination */
	if (to_self(nic, rte_pktmbuf_mtod(pkts[0], struct rte_ether_hdr *)->dst_addr.addr_bytes)) {
		via_capture(nic, pkts, n, VIA_CAPTURE_MEM);
		sent = (uint16_t)hand_over(nic->d, nic, frame_route(nic->d, pkts[0]), pkts, n);
		st->frames_tx += sent;
		st->frames_rx += sent;
	} else {
		via_capture(nic, pkts, n, VIA_CAPTURE_TX);
		via_dp_lock(&nic->tx_lock);
		/* frames keep their order: none passes those already waiting */
		if (backlog_flush(nic, st) == 0) {
			sent = port_tx(nic, pkts, n);
			st->frames_tx += sent;
		}
		held = rte_ring_enqueue_burst(nic->backlog, (void **)(pkts + sent),
					      (unsigned)(n - sent), NULL);
		via_dp_unlock(&nic->tx_lock);
		sent = (uint16_t)(sent + held);
	}
	if (sent < n) {
		/* Unreliable Delivery may lose frames (VIA §2.5.1) */
		st->frames_dropped += n - sent;
		rte_pktmbuf_free_bulk(pkts + sent, n - sent);
	}
}

static struct via_wire_hdr *
frame_init(struct rte_mbuf *m, struct via_nic *nic, const uint8_t dst[6], uint16_t payload_len)
{
	struct rte_ether_hdr *eth;
	struct via_wire_hdr *h;

	eth = (struct rte_ether_hdr *)rte_pktmbuf_append(m, (uint16_t)(VIA_FRAME_HDR_LEN +
								       payload_len));
	if (eth == NULL)
		return NULL;
	memcpy(eth->dst_addr.addr_bytes, dst, RTE_ETHER_ADDR_LEN);
	rte_ether_addr_copy(via_port_mac(nic->port), &eth->src_addr);
	eth->ether_type = rte_cpu_to_be_16(VIA_ETHERTYPE);
	h = (struct via_wire_hdr *)(eth + 1);
	memset(h, 0, sizeof(*h));
	return h;
}

/* A frame of the connection manager or the transport: no message data. */
static void
send_control(struct via_nic *nic, const uint8_t mac[6], const struct via_wire_hdr *tmpl,
	     const void *payload, uint16_t len)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(via_nics_pool());
	struct via_wire_hdr *h;

	if (m == NULL) {
		dp_stats()->frames_dropped++;
		return;
	}
	h = frame_init(m, nic, mac, len);
	if (h == NULL) {
		rte_pktmbuf_free(m);
		dp_stats()->frames_dropped++;
		return;
	}
	*h = *tmpl;
	if (len > 0)
		memcpy(h + 1, payload, len);
	via_wire_seal(h, len, NULL, 0);
	via_dp_xmit(nic, &m, 1);
}

void
via_dp_send_ctrl(struct via_nic *nic, const uint8_t mac[6], uint8_t op, uint16_t flags,
		 uint32_t dst_vi, uint32_t src_vi, uint32_t conn_id, const void *payload,
		 uint16_t len)
{
	struct via_wire_hdr h;

	memset(&h, 0, sizeof(h));
	h.opcode = op;
	via_wire_set_flags(&h, flags);
	via_wire_set_dst_vi(&h, dst_vi);
	via_wire_set_src_vi(&h, src_vi);
	via_wire_set_conn_id(&h, conn_id);
	send_control(nic, mac, &h, payload, len);
}

void
via_dp_send_xport(struct via_nic *nic, const uint8_t mac[6], uint8_t op, uint16_t flags,
		  uint32_t dst_vi, uint32_t src_vi, uint32_t conn_id, uint32_t seq, uint32_t imm)
{
	struct via_wire_hdr h;

	memset(&h, 0, sizeof(h));
	h.opcode = op;
	via_wire_set_flags(&h, flags);
	via_wire_set_dst_vi(&h, dst_vi);
	via_wire_set_src_vi(&h, src_vi);
	via_wire_set_conn_id(&h, conn_id);
	via_wire_set_seq(&h, seq);
	via_wire_set_imm(&h, imm);
	if (op == VIA_OP_NAK)
		dp_stats()->naks_tx++;
	send_control(nic, mac, &h, NULL, 0);
}

/* ---- descriptors ------------------------------------------------------------ */

/* Write a completion into the client's descriptor (VIA §6.4.1, §10.2). */
static void
complete(struct viad *d, struct via_vi *vi, enum via_wq_kind q, const struct via_wqe *w,
	 const struct via_mr *desc_mr, uint32_t len, uint32_t imm, uint32_t status)
{
	struct via_cq *cq = vi->cq[q];

	(void)d;
	if (desc_mr != NULL) {
		uint32_t fields[2] = { imm, len };
		uint8_t *p = via_mem_direct(desc_mr, w->desc_va);

		status |= VIP_STATUS_DONE;
		if (p != NULL) {
			memcpy(p + IMM_OFF, fields, sizeof(fields));
			__atomic_store_n((uint32_t *)(p + STATUS_OFF), status, __ATOMIC_RELEASE);
		} else if (via_mem_write(vi->owner, desc_mr, w->desc_va + IMM_OFF, fields,
					 sizeof(fields)) == 0) {
			/* a second write: Status only after the rest is in place */
			via_mem_write(vi->owner, desc_mr, w->desc_va + STATUS_OFF, &status,
				      sizeof(status));
		}
	}
	/* counted even when the descriptor could not be written, so the
	 * library can tell a completed head from a pending one */
	via_shm_wait_bump(&vi->sh->wq[q].done);
	/* a VipSendNotify/VipRecvNotify pending on the queue (or VipCQNotify on
	 * its CQ): ring the session's notify doorbell. The flag is a seq_cst
	 * load after the seq_cst bump, against the library's store of the flag
	 * and load of the count (via_abi.h, "Notify doorbell"); it is the
	 * client's word, only a hint */
	bool bell = __atomic_load_n(&vi->sh->wq[q].notify, __ATOMIC_SEQ_CST) != 0;

	if (cq != NULL) {
		struct via_cqe e = { .vi_cookie = vi->cookie, .flags = q == VIA_WQ_RECV ? VIA_CQE_RECV : 0 };

		int full;

		via_dp_lock(&cq->lock);
		full = via_ring_enqueue(&cq->ring, &e);
		via_dp_unlock(&cq->lock);
		if (full != 0)
			dp_stats()->cq_overruns++;
		via_shm_wait_bump(&cq->sh->wait);
		bell |= __atomic_load_n(&cq->sh->notify, __ATOMIC_SEQ_CST) != 0;
	}
	if (bell)
		via_shm_wait_bump(&((struct via_shm_header *)vi->owner->seg.va)->notify);
}

static void
desc_invalid(struct via_vi *vi, enum via_wq_kind q, const struct via_wqe *w, uint32_t code)
{
	via_vi_async_error(vi, code, VIP_RESOURCE_DESCRIPTOR,
			   q == VIA_WQ_SEND ? VIP_STATUS_OP_SEND : VIP_STATUS_OP_RECEIVE, w->desc_va);
}

/*
 * The region holding the descriptor of @p w: of the VI's tag and writable,
 * since its status is written back (VIA §9.5.1: protection covers "all
 * memory references ... including Descriptors"). NULL: @p code reported,
 * POST_DESC when fetching, COMP_PROT when completing (VIA §9.9.1).
 */
static const struct via_mr *
desc_region(struct viad *d, struct via_vi *vi, enum via_wq_kind q, const struct via_wqe *w,
	    uint32_t code)
{
	const struct via_mr *mr;
	int err;

	mr = via_mr_check(d, vi->owner, w->desc_handle, w->desc_va, DESC_CS_SIZE, vi->attr.ptag,
			  VIA_MR_LOCAL_READ | VIA_MR_LOCAL_WRITE, &err);
	if (mr == NULL || w->reserved != 0) {
		desc_invalid(vi, q, w, code);
		return NULL;
	}
	return mr;
}

/*
 * Fetch the descriptor of @p w (VIA §10.2-10.4) and its data segments into
 * @p segs. Returns the region holding the descriptor (NULL: the descriptor
 * itself is unusable; POST_DESC reported) and the error status bits in
 * *status (0: valid). *cs receives the control segment.
 */
static const struct via_mr *
desc_fetch(struct viad *d, struct via_vi *vi, enum via_wq_kind q, const struct via_wqe *w,
	   VIP_CONTROL_SEGMENT *cs, VIP_ADDRESS_SEGMENT *raddr, struct via_dp_seg *segs,
	   uint16_t *nb_segs, uint64_t *total, uint32_t *status)
{
	struct via_session *s = vi->owner;
	VIP_DATA_SEGMENT ds[16];
	const struct via_mr *mr;
	uint32_t op, seg_access;
	uint16_t i, n, first;
	int err;

	*status = 0;
	*total = 0;
	*nb_segs = 0;
	mr = desc_region(d, vi, q, w, VIP_ERROR_POST_DESC);
	if (mr == NULL)
		return NULL;
	if (via_mem_read(s, mr, w->desc_va, cs, sizeof(*cs)) != 0) {
		desc_invalid(vi, q, w, VIP_ERROR_POST_DESC);
		return NULL;
	}
	n = cs->SegCount;
	op = cs->Control & VIP_CONTROL_OP_MASK;
	first = op == VIP_CONTROL_OP_SENDRECV ? 0 : 1;
	/* §10.2: SegCount counts the address segment of an RDMA descriptor;
	 * the limit (§6.1.1.1, §10.4: at least 252) is on data segments */
	if ((cs->Control & ~CONTROL_KNOWN) || cs->Reserved != 0 || op == VIP_CONTROL_OP_MASK ||
	    n > s->nic->info.max_segments_per_desc + first) {
		*status = VIP_STATUS_FORMAT_ERROR;
		return mr;
	}
	/* VIA §10.2: RDMA only on the send queue; §2.5.1: no RDMA Read on an
	 * Unreliable VI; §10.3: an RDMA descriptor starts with its address
	 * segment, counted in SegCount */
	if (op != VIP_CONTROL_OP_SENDRECV &&
	    (q == VIA_WQ_RECV || n == 0 ||
	     (op == VIP_CONTROL_OP_RDMAREAD &&
	      (!via_rel_level(vi) || !s->nic->info.rdma_read_support)))) {
		*status = VIP_STATUS_FORMAT_ERROR;
		return mr;
	}
	if (via_mr_check(d, s, w->desc_handle, w->desc_va,
			 DESC_CS_SIZE + (uint64_t)n * DESC_SEG_SIZE, vi->attr.ptag,
			 VIA_MR_LOCAL_READ, &err) == NULL) {
		*status = VIP_STATUS_PROTECTION_ERROR;
		return mr;
	}
	/* a send or RDMA Write gathers, a receive or RDMA Read scatters */
	seg_access = q == VIA_WQ_RECV || op == VIP_CONTROL_OP_RDMAREAD ? VIA_MR_LOCAL_WRITE
								       : VIA_MR_LOCAL_READ;
	for (i = 0; i < n; i++) {
		const VIP_DATA_SEGMENT *sg;
		struct via_dp_seg *seg;

		if (i % 16 == 0 &&
		    via_mem_read(s, mr, w->desc_va + DESC_CS_SIZE + (uint64_t)i * DESC_SEG_SIZE, ds,
				 (size_t)RTE_MIN(16u, (unsigned)(n - i)) * DESC_SEG_SIZE) != 0) {
			*status = VIP_STATUS_PROTECTION_ERROR;
			return mr;
		}
		sg = &ds[i % 16];
		if (i < first) {
			memcpy(raddr, sg, sizeof(*raddr));
			if (raddr->Reserved != 0) {
				*status = VIP_STATUS_FORMAT_ERROR;
				return mr;
			}
			continue;
		}
		seg = &segs[i - first];
		seg->va = sg->Data.AddressBits;
		seg->len = sg->Length;
		seg->handle = sg->Handle;
		seg->mr = NULL;
		*total += sg->Length;
		/* a zero-length segment names no memory */
		if (sg->Length > 0) {
			seg->mr = via_mr_check(d, s, sg->Handle, sg->Data.AddressBits, sg->Length,
					       vi->attr.ptag, seg_access, &err);
			if (seg->mr == NULL) {
				*status = VIP_STATUS_PROTECTION_ERROR;
				return mr;
			}
		}
	}
	*nb_segs = (uint16_t)(n - first);
	return mr;
}

/*
 * Copy between message bytes [off, off+len) and a segment list. With
 * @p recheck the regions are looked up again by handle: a receive descriptor
 * outlives the iteration that fetched it, and the client may deregister a
 * region meanwhile (an access to it is then a protection error, VIA §3.2.1).
 */
static int
segs_copy(struct viad *d, struct via_vi *vi, struct via_dp_seg *segs, uint16_t n, uint64_t off,
	  uint8_t *buf, uint32_t len, bool to_segs, bool recheck)
{
	struct via_session *s = vi->owner;
	uint16_t i;

	for (i = 0; i < n && len > 0; i++) {
		uint32_t take;
		int rc;

		if (off >= segs[i].len) {
			off -= segs[i].len;
			continue;
		}
		take = (uint32_t)RTE_MIN((uint64_t)len, segs[i].len - off);
		if (recheck) {
			segs[i].mr = via_mr_check(d, s, segs[i].handle, segs[i].va, segs[i].len,
						  vi->attr.ptag, to_segs ? VIA_MR_LOCAL_WRITE
									 : VIA_MR_LOCAL_READ, &rc);
			if (segs[i].mr == NULL)
				return rc;
		}
		rc = to_segs ? via_mem_write(s, segs[i].mr, segs[i].va + off, buf, take)
			     : via_mem_read(s, segs[i].mr, segs[i].va + off, buf, take);
		if (rc != 0)
			return rc;
		buf += take;
		len -= take;
		off = 0;
	}
	return 0;
}

/* ---- send (VIA §6.3, §9.6.1) --------------------------------------------- */

/* What the frames of one message say besides their data. */
struct frame_spec {
	uint8_t opcode;
	uint16_t flags;
	uint32_t imm;
	uint32_t msg_id;
	uint32_t msg_len;                  /**< READ_REQ: the bytes asked for */
	const struct via_wire_rdma *ext;   /**< the opcode's extension, or NULL */
};

/*
 * Where a zero-copy frame of the @p len message bytes at @p off finds them:
 * viad's mapping of provider memory, when they lie in one segment of it
 * (its allocation in *@p pmem); NULL if the frame must copy them.
 */
static void *
zc_source(const struct via_dp_seg *segs, uint16_t n, uint32_t off, uint32_t len,
	  struct via_pmem **pmem)
{
	uint16_t i;

	for (i = 0; i < n && off >= segs[i].len; i++)
		off -= segs[i].len;
	if (i == n || segs[i].len - off < len || segs[i].mr->pmem == NULL)
		return NULL;
	*pmem = segs[i].mr->pmem;
	return via_mem_direct(segs[i].mr, segs[i].va + off);
}

/*
 * The data of one frame, @p len bytes at message offset @p off, after its
 * headers in @p m: chained in place (zero copy, counted by *@p zc, which is
 * made on the first such frame) where @p zc allows and the bytes lie in
 * provider memory, else copied behind the headers.
 * @return the data (for the CRC), or NULL if it vanished or ran out of mbufs
 */
static const void *
frame_data_put(struct viad *d, struct via_vi *vi, struct rte_mbuf *m, struct via_zc **zc,
	       struct via_dp_seg *segs, uint16_t nb_segs, uint32_t off, uint16_t len)
{
	struct via_pmem *pmem;
	struct rte_mbuf *ext;
	uint8_t *dst;
	void *src;

	if (zc != NULL && len >= ZC_MIN_BYTES &&
	    (src = zc_source(segs, nb_segs, off, len, &pmem)) != NULL &&
	    (*zc != NULL || (*zc = via_zc_new(d, vi, pmem)) != NULL) && via_zc_fits(*zc, pmem) &&
	    (ext = via_zc_attach(*zc, src, len)) != NULL) {
		rte_pktmbuf_chain(m, ext);
		dp_stats()->frames_tx_zero_copy++;
		return src;
	}
	dst = (uint8_t *)rte_pktmbuf_append(m, len);
	if (dst == NULL || segs_copy(d, vi, segs, nb_segs, off, dst, len, false, false) != 0)
		return NULL;
	return dst;
}

/*
 * Cut @p total bytes of @p segs into frames and transmit them, from *@p off
 * (advanced) until the end or until @p budget bytes went (at least one
 * frame: a 0-byte message has one); with @p zc, frames may point into the
 * segments instead of copying them (zc.c). false if the data vanished or,
 * on a reliable level, a frame could not be built.
 */
static bool
send_frames(struct viad *d, struct via_vi *vi, const struct frame_spec *fs,
	    struct via_dp_seg *segs, uint16_t nb_segs, uint32_t total, uint32_t *off,
	    uint32_t budget, struct via_zc **zc)
{
	struct via_nic *nic = vi->owner->nic;
	const uint16_t ext = via_wire_ops[fs->opcode].ext_len;
	const uint32_t chunk = (vi->conn.frame_payload ? vi->conn.frame_payload
						       : via_dp_frame_payload(nic)) - ext;
	/* frames that never cross a port are never checked: no CRCs to make */
	const bool in_memory = to_self(nic, vi->conn.remote_mac);
	struct rte_mbuf *pkts[DP_BURST];
	uint32_t framed = 0;
	uint16_t n = 0;

	if (!in_memory && !nic->tx_zero_copy)
		zc = NULL;
	do {
		uint16_t len = (uint16_t)RTE_MIN(chunk, total - *off);
		struct rte_mbuf *m = rte_pktmbuf_alloc(via_nics_pool());
		struct via_wire_hdr *h;
		const void *data;

		h = m != NULL ? frame_init(m, nic, vi->conn.remote_mac, ext) : NULL;
		if (h == NULL) {
			/* out of mbufs: Unreliable Delivery may lose the rest of
			 * the message; a reliable level may not */
			rte_pktmbuf_free(m);
			via_dp_xmit(nic, pkts, n);
			return !via_rel_level(vi);
		}
		h->opcode = fs->opcode;
		via_wire_set_flags(h, fs->flags);
		via_wire_set_dst_vi(h, vi->conn.remote_vi);
		via_wire_set_src_vi(h, vi->id);
		via_wire_set_conn_id(h, vi->conn.id);
		via_wire_set_msg_id(h, fs->msg_id);
		via_wire_set_msg_len(h, fs->msg_len);
		via_wire_set_offset(h, *off);
		via_wire_set_imm(h, fs->imm);
		if (ext > 0)
			memcpy(h + 1, fs->ext, ext);
		data = frame_data_put(d, vi, m, zc, segs, nb_segs, *off, len);
		if (data == NULL) {
			rte_pktmbuf_free(m);
			rte_pktmbuf_free_bulk(pkts, n);
			return false;
		}
		if (via_rel_level(vi))
			via_rel_track(d, vi, m, h);
		else
			via_wire_set_seq(h, vi->tx_seq++);
		if (in_memory)
			via_wire_finish(h, (uint16_t)(ext + len));
		else if (m->next != NULL)
			via_wire_seal(h, ext, data, len);
		else
			via_wire_seal(h, (uint16_t)(ext + len), NULL, 0);
		pkts[n++] = m;
		*off += len;
		framed += len;
		if (n == DP_BURST) {
			via_dp_xmit(nic, pkts, n);
			n = 0;
		}
	} while (*off < total && framed < budget);
	via_dp_xmit(nic, pkts, n);
	return true;
}

static const uint32_t op_status[] = {
	[VIP_CONTROL_OP_SENDRECV] = VIP_STATUS_OP_SEND,
	[VIP_CONTROL_OP_RDMAWRITE] = VIP_STATUS_OP_RDMA_WRITE,
	[VIP_CONTROL_OP_RDMAREAD] = VIP_STATUS_OP_RDMA_READ,
	[VIP_CONTROL_OP_MASK] = VIP_STATUS_OP_SEND,
};

/* Issue an RDMA Read (VIA §6.3, §10.2): its answer completes it. */
static uint32_t
read_issue(struct viad *d, struct via_vi *vi, const struct via_wqe *w, const struct frame_spec *fs,
	   const struct via_dp_seg *segs, uint16_t nb_segs, uint32_t total)
{
	struct via_sq_pending *p;
	struct via_dp_seg *copy = malloc(RTE_MAX(nb_segs, (uint16_t)1) * sizeof(*copy));

	if (copy == NULL)
		return VIP_STATUS_TRANSPORT_ERROR;
	memcpy(copy, segs, nb_segs * sizeof(*copy));
	if (!send_frames(d, vi, fs, NULL, 0, 0, &(uint32_t){ 0 }, UINT32_MAX, NULL)) {
		free(copy);
		return VIP_STATUS_TRANSPORT_ERROR;
	}
	p = via_sq_hold(vi, w, VIA_SQ_READ, total, 0, VIP_STATUS_OP_RDMA_READ);
	p->start_seq = p->end_seq - 1;      /* its request frame */
	p->msg_id = fs->msg_id;
	p->segs = copy;
	p->nb_segs = nb_segs;
	vi->rel.reads++;
	return 0;
}

/*
 * The send-queue descriptor @p w is done, with @p status (op bits
 * included): complete it, or hold its completion behind earlier ones, or
 * until @p zc's frames no longer point into its buffers (NULL: none do).
 */
static void
send_done(struct viad *d, struct via_vi *vi, const struct via_wqe *w, const struct via_mr *mr,
	  uint32_t len, uint32_t imm, uint32_t status, struct via_zc *zc)
{
	if (via_rel_level(vi) && vi->state == VIP_STATE_CONNECTED &&
	    (status & VIP_STATUS_ERROR_MASK)) {
		/* VIA §2.5.2, §2.5.3, Table 1: on a reliable level any error
		 * breaks the connection; this descriptor carries its own cause,
		 * behind the completions held before it */
		via_zc_bind(zc, vi, NULL);
		if (via_sq_held(vi))
			via_sq_hold(vi, w, VIA_SQ_READY, 0, 0, status);
		else
			complete(d, vi, VIA_WQ_SEND, w, mr, 0, 0, status);
		via_rel_fail(d, vi, VIP_STATUS_TRANSPORT_ERROR,
			     status & VIP_STATUS_TRANSPORT_ERROR ? "out of frame buffers"
								 : "local descriptor error");
		return;
	}
	/* VIA §2.5.3: Reliable Reception completes once the data is placed;
	 * and a completion may not pass one held before it */
	if ((status & VIP_STATUS_ERROR_MASK) == 0 &&
	    vi->attr.reliability == VIP_SERVICE_RELIABLE_RECEPTION) {
		struct via_sq_pending *p = via_sq_hold(vi, w, VIA_SQ_ACK, len, imm, status);

		p->start_seq = vi->tx.first_seq;   /* the message framed last: this one */
		via_zc_bind(zc, vi, p);
		return;
	}
	if (status & VIP_STATUS_ERROR_MASK) {
		/* what went out is not delivered: the buffer may go back */
		via_zc_bind(zc, vi, NULL);
		zc = NULL;
		len = 0;
	}
	if (via_sq_held(vi) || zc != NULL)
		via_zc_bind(zc, vi, via_sq_hold(vi, w, VIA_SQ_READY, len, imm, status));
	else
		complete(d, vi, VIA_WQ_SEND, w, mr, len, imm, status);
}

/*
 * Take send-queue descriptor @p w: validate it, then make it the VI's
 * message to frame (vi->tx.active), or finish it at once (an error, an
 * RDMA Read request). @return the bytes it put on the wire
 */
static uint32_t
send_start(struct viad *d, struct via_vi *vi, const struct via_wqe *w)
{
	struct via_vi_tx *tx = &vi->tx;
	VIP_ADDRESS_SEGMENT raddr;
	VIP_CONTROL_SEGMENT cs;
	const struct via_mr *mr;
	uint32_t status, op;
	uint64_t total;

	if (tx->segs == NULL) {
		tx->segs = calloc(vi->owner->nic->info.max_segments_per_desc, sizeof(*tx->segs));
		if (tx->segs == NULL) {
			send_done(d, vi, w, desc_region(d, vi, VIA_WQ_SEND, w, VIP_ERROR_POST_DESC),
				  0, 0, VIP_STATUS_TRANSPORT_ERROR, NULL);
			return 0;
		}
	}
	mr = desc_fetch(d, vi, VIA_WQ_SEND, w, &cs, &raddr, tx->segs, &tx->nb_segs, &total,
			&status);
	if (mr == NULL) {
		/* counted in order, like every completion of the queue */
		if (via_sq_held(vi))
			via_sq_hold(vi, w, VIA_SQ_READY, 0, 0, 0)->no_desc = true;
		else
			complete(d, vi, VIA_WQ_SEND, w, NULL, 0, 0, 0);
		/* an error, and on a reliable level every error breaks (§2.5) */
		if (via_rel_level(vi) && vi->state == VIP_STATE_CONNECTED)
			via_rel_fail(d, vi, VIP_STATUS_TRANSPORT_ERROR, "unusable descriptor");
		return 0;
	}
	op = cs.Control & VIP_CONTROL_OP_MASK;
	/* VIA §10.2 bit 3: the sum must match Length and fit the VI's MTU */
	if (status == 0 && (total != cs.Length || total > vi->attr.max_transfer))
		status = VIP_STATUS_LENGTH_ERROR;
	/* VIA §5.1, §5.2, §5.4: the send queue of an unconnected VI completes in error */
	if (status == 0 && vi->state != VIP_STATE_CONNECTED)
		status = VIP_STATUS_DESC_FLUSHED_ERROR;
	status |= op_status[op];
	if (status & VIP_STATUS_ERROR_MASK) {
		send_done(d, vi, w, mr, 0, cs.ImmediateData, status, NULL);
		return 0;
	}
	tx->wqe = *w;
	tx->status = status;
	tx->cs_imm = cs.ImmediateData;
	tx->total = (uint32_t)total;
	tx->off = 0;
	tx->msg_id = ++vi->tx_msg_id;
	tx->first_seq = vi->rel.snd_nxt;
	tx->opcode = op == VIP_CONTROL_OP_SENDRECV ? VIA_OP_SEND
		     : op == VIP_CONTROL_OP_RDMAWRITE ? VIA_OP_RDMA_WRITE : VIA_OP_RDMA_READ_REQ;
	tx->flags = 0;
	tx->imm = 0;
	/* immediate data goes with sends and writes, not reads (§10.2) */
	if ((cs.Control & VIP_CONTROL_IMMEDIATE) && op != VIP_CONTROL_OP_RDMAREAD) {
		tx->flags = VIA_WF_IMM;
		tx->imm = cs.ImmediateData;
	}
	tx->rdma_va = raddr.Data.AddressBits;
	tx->rdma_handle = raddr.Handle;
	if (op == VIP_CONTROL_OP_RDMAREAD) {
		struct via_wire_rdma ext = {
			.va = rte_cpu_to_be_64(tx->rdma_va),
			.handle = rte_cpu_to_be_32(tx->rdma_handle),
		};
		struct frame_spec fs = {
			.opcode = tx->opcode, .msg_id = tx->msg_id, .msg_len = tx->total,
			.ext = &ext,
		};

		status |= read_issue(d, vi, w, &fs, tx->segs, tx->nb_segs, tx->total);
		if (status & VIP_STATUS_ERROR_MASK)
			send_done(d, vi, w, mr, 0, cs.ImmediateData, status, NULL);
		/* the answer is as long as a write: charged here */
		return tx->total;
	}
	tx->active = true;
	tx->stale = false;
	return 0;
}

/* The regions of the message's segments again: they may be gone (§3.2.1). */
static bool
send_segs_recheck(struct viad *d, struct via_vi *vi)
{
	struct via_vi_tx *tx = &vi->tx;
	uint16_t i;
	int err;

	for (i = 0; i < tx->nb_segs; i++) {
		struct via_dp_seg *seg = &tx->segs[i];

		if (seg->len == 0)
			continue;
		seg->mr = via_mr_check(d, vi->owner, seg->handle, seg->va, seg->len,
				       vi->attr.ptag, VIA_MR_LOCAL_READ, &err);
		if (seg->mr == NULL)
			return false;
	}
	tx->stale = false;
	return true;
}

/*
 * Frame up to @p budget more bytes of the VI's message (at least one
 * frame); complete it after its last. @return the bytes framed
 */
static uint32_t
send_more(struct viad *d, struct via_vi *vi, uint32_t budget)
{
	struct via_vi_tx *tx = &vi->tx;
	struct via_wire_rdma ext = {
		.va = rte_cpu_to_be_64(tx->rdma_va), .handle = rte_cpu_to_be_32(tx->rdma_handle),
	};
	struct frame_spec fs = {
		.opcode = tx->opcode, .flags = tx->flags, .imm = tx->imm, .msg_id = tx->msg_id,
		.msg_len = tx->total, .ext = tx->opcode == VIA_OP_SEND ? NULL : &ext,
	};
	uint32_t status = tx->status, from = tx->off;
	struct via_zc *zc;

	/* broken between two turns (a NAK, a RESET): the rest is flushed */
	if (vi->state != VIP_STATE_CONNECTED)
		status |= VIP_STATUS_DESC_FLUSHED_ERROR;
	else if ((tx->stale && !send_segs_recheck(d, vi)) ||
		 !send_frames(d, vi, &fs, tx->segs, tx->nb_segs, tx->total, &tx->off, budget,
			      &tx->zc))
		status |= via_rel_level(vi) ? VIP_STATUS_TRANSPORT_ERROR
					    : VIP_STATUS_PROTECTION_ERROR;
	else if (tx->off < tx->total) {
		tx->stale = true;    /* the lock may be dropped before the next turn */
		return tx->off - from;
	}
	tx->active = false;
	/* taken off the VI first: send_done may break the connection, whose
	 * reset must not drop the framing reference a second time */
	zc = via_zc_framed(tx->zc);
	tx->zc = NULL;
	send_done(d, vi, &tx->wqe, desc_region(d, vi, VIA_WQ_SEND, &tx->wqe, VIP_ERROR_COMP_PROT),
		  tx->total, tx->cs_imm, status, zc);
	return tx->off - from;
}

void
via_dp_tx_cut(struct via_vi *vi)
{
	struct via_vi_tx *tx = &vi->tx;
	struct via_sq_pending *p;

	if (!tx->active)
		return;
	tx->active = false;
	p = via_sq_hold(vi, &tx->wqe,
			vi->attr.reliability == VIP_SERVICE_RELIABLE_RECEPTION ? VIA_SQ_ACK
									     : VIA_SQ_READY,
			tx->total, tx->cs_imm, tx->status);
	p->start_seq = tx->first_seq;
	via_zc_bind(via_zc_framed(tx->zc), vi, p);
	tx->zc = NULL;
}

void
via_dp_complete_send(struct viad *d, struct via_vi *vi, const struct via_wqe *w, bool has_desc,
		     uint32_t len, uint32_t imm, uint32_t status)
{
	complete(d, vi, VIA_WQ_SEND, w,
		 has_desc ? desc_region(d, vi, VIA_WQ_SEND, w, VIP_ERROR_COMP_PROT) : NULL,
		 len, imm, status);
}

/*
 * Whether the frames of one more message of @p vi fit where they go next (the
 * peer VI's inbox when it is on this NIC, else the backlog should the port be busy): a
 * descriptor is taken only then, so a sender outrunning the port waits in
 * its own queue instead of losing messages. Waiting there, it also waits its
 * turn (vi_send): so the shared FIFO is kept short (DP_TXQ_BYTES), or a bulk
 * sender would queue milliseconds of frames ahead of every small message.
 */
static bool
tx_room(const struct via_vi *vi)
{
	const struct via_nic *nic = vi->owner->nic;
	uint32_t chunk = vi->conn.frame_payload ? vi->conn.frame_payload
						: via_dp_frame_payload(nic);
	uint32_t need = vi->attr.max_transfer / chunk + 1;
	const struct via_vi *peer = to_self(nic, vi->conn.remote_mac)
					    ? via_idtab_lookup(&nic->d->vis, vi->conn.remote_vi)
					    : NULL;
	struct rte_ring *r = peer != NULL ? peer->shard->inbox : nic->backlog;
	uint32_t ahead = RTE_MAX(DP_TXQ_BYTES / chunk, 1u), queued = rte_ring_count(r);

	/* a message larger than the ring goes when the ring is empty, or it
	 * would never go (Unreliable may then lose its tail, a reliable level
	 * sends it again) */
	return queued < ahead && queued + RTE_MIN(need, rte_ring_get_capacity(r)) <=
					 rte_ring_get_capacity(r);
}

static bool
room(struct via_vi *vi)
{
	return tx_room(vi) && via_sq_room(vi);
}

/*
 * Answer the RDMA Reads the peer asked for, oldest first (VIA §6.3.1), up to
 * @p budget bytes of frames (at least one): a long answer takes several
 * turns, like a long send. @return how many answers were finished
 */
static unsigned
read_answers(struct viad *d, struct via_vi *vi, uint32_t budget)
{
	struct via_vi_rel *r = &vi->rel;
	uint32_t framed = 0;
	unsigned n = 0;

	while (r->resp_head != r->resp_tail && framed < budget && room(vi)) {
		struct via_rdma_resp *a = &r->resp[r->resp_head % VIA_MAX_READS];
		struct via_dp_seg src = { .va = a->va, .len = a->len, .handle = a->handle };
		struct frame_spec fs = {
			.opcode = VIA_OP_RDMA_READ_RESP, .msg_id = a->msg_id, .msg_len = a->len,
		};
		uint32_t from = a->sent;
		int err;

		/* checked again each turn: the region may have gone since the
		 * request, or since the last turn */
		src.mr = via_mr_check(d, vi->owner, a->handle, a->va, a->len, vi->attr.ptag,
				      VIA_MR_REMOTE_READ, &err);
		if (a->len > 0 && src.mr == NULL) {
			/* VIA §3.2.1: deregistered since the request; a protection
			 * error at the source, which the initiator must learn */
			via_zc_drop(&a->zc);
			r->resp_head++;
			via_dp_send_xport(vi->owner->nic, vi->conn.remote_mac, VIA_OP_NAK, 0,
					  vi->conn.remote_vi, vi->id, vi->conn.id, a->seq,
					  VIP_STATUS_RDMA_PROT_ERROR | VIP_STATUS_OP_RDMA_READ);
			via_rel_fail(d, vi, VIP_STATUS_TRANSPORT_ERROR, "an RDMA Read source vanished");
			break;
		}
		/* zero copy only in memory: frames crossing a port carry a CRC
		 * taken now, and a retransmission reads the pages again, which
		 * the responder may have changed since (no descriptor of the
		 * responder waits for the answer, so nothing holds them still).
		 * And never on Reliable Reception: a write the requester posts
		 * after the Read must not change what the Read returns
		 * (§6.3.1.1), and an answer that still points into the pages
		 * when the write lands there would */
		if (!send_frames(d, vi, &fs, &src, 1, a->len, &a->sent, budget - framed,
				 to_self(vi->owner->nic, vi->conn.remote_mac) &&
				 vi->attr.reliability != VIP_SERVICE_RELIABLE_RECEPTION
					 ? &a->zc : NULL)) {
			via_zc_drop(&a->zc);
			r->resp_head++;
			via_rel_fail(d, vi, VIP_STATUS_TRANSPORT_ERROR,
				     "an RDMA Read source vanished");
			break;
		}
		framed += a->sent - from;
		if (a->sent < a->len)
			break;               /* the rest in the next turn */
		/* no completion waits for an answer's frames: the tracker only
		 * keeps the source's allocation mapped */
		via_zc_drop(&a->zc);
		r->resp_head++;
		vi->tx_deficit -= DP_DESC_COST;
		n++;
	}
	/* this VI's bandwidth too (vi_send's round robin) */
	vi->tx_deficit -= framed;
	return n;
}

/* The QFENCE bit of the next descriptor (VIA §6.3.1.2), without taking it. */
static bool
fenced(struct viad *d, struct via_vi *vi, const struct via_wqe *w)
{
	const struct via_mr *mr;
	VIP_CONTROL_SEGMENT cs;
	int err;

	mr = via_mr_check(d, vi->owner, w->desc_handle, w->desc_va, DESC_CS_SIZE, vi->attr.ptag,
			  VIA_MR_LOCAL_READ, &err);
	return mr != NULL && via_mem_read(vi->owner, mr, w->desc_va, &cs, sizeof(cs)) == 0 &&
	       (cs.Control & VIP_CONTROL_QFENCE);
}

/* Ring @p vi's doorbell from viad's side: it has work left for later. */
static void
ring_again(struct via_vi *vi)
{
	struct via_session *s = vi->owner;
	uint32_t w = vi->bell / 64;

	via_bell_ring(&s->bells[w], 1ull << (vi->bell % 64), &s->bell_summary[w / 64],
		      1ull << (w % 64));
}

/*
 * VIA §11.2.2.1: the VIs whose doorbell rang are served in turn, by deficit
 * round robin over bytes (Shreedhar and Varghese, 1995): each turn adds a
 * quantum to the VI's deficit and it sends while the deficit is positive, so
 * a VI of 64 KiB messages and one of 64 B messages get the same bytes per
 * round, not the same number of descriptors. A message is never held back
 * for being larger than the quantum: it goes, and leaves the deficit
 * negative, repaid over the next turns while the VI waits.
 */
static unsigned
vi_send(struct viad *d, struct via_vi *vi)
{
	struct via_ring *r = &vi->wq[VIA_WQ_SEND];
	unsigned i, work = 0;

	/* capped: a VI held back by the port gathers no credit meanwhile */
	vi->tx_deficit = RTE_MIN(vi->tx_deficit + DP_SEND_QUANTUM, (int64_t)DP_SEND_QUANTUM);
	if (vi->state == VIP_STATE_CONNECTED && via_rel_level(vi))
		work += read_answers(d, vi, (uint32_t)RTE_MAX(vi->tx_deficit, 1));
	for (i = 0; i < DP_SEND_BUDGET && vi->tx_deficit > 0; i++) {
		if (!vi->tx.active) {
			struct via_wqe w;

			/* the ring may have been flushed meanwhile (a broken connection) */
			if (via_ring_avail(r) == 0)
				break;
			/* copied out before use: the client may rewrite the slot */
			w = *(const struct via_wqe *)via_ring_peek(r, 0);
			if (vi->state == VIP_STATE_CONNECTED &&
			    (!room(vi) || vi->rel.reads == VIA_MAX_READS ||
			     (vi->rel.reads > 0 && fenced(d, vi, &w))))
				break;
			via_ring_consume(r, 1);
			vi->tx_deficit -= (int64_t)send_start(d, vi, &w) + DP_DESC_COST;
		} else if (vi->state == VIP_STATE_CONNECTED && !room(vi)) {
			break;
		}
		if (vi->tx.active)
			vi->tx_deficit -= send_more(d, vi, (uint32_t)RTE_MAX(vi->tx_deficit, 1));
		work++;
	}
	/* an empty queue keeps no credit, only its debt */
	if (via_ring_avail(r) == 0 && !vi->tx.active && vi->tx_deficit > 0)
		vi->tx_deficit = 0;
	return work;
}

/* A VI whose doorbell rang: its send queue, and what else waits for it. */
static unsigned
vi_visit(struct viad *d, struct via_vi *vi)
{
	unsigned work;

	/* VIA §5.4: whatever is posted to a VI in Error completes in error,
	 * receives included */
	if (vi->state == VIP_STATE_ERROR && via_ring_avail(&vi->wq[VIA_WQ_RECV]) > 0)
		via_dp_flush(d, vi);
	work = vi_send(d, vi);
	/* work left (waiting its turn counts: the poller must not doze) */
	if (via_ring_avail(&vi->wq[VIA_WQ_SEND]) > 0 || vi->tx.active ||
	    vi->rel.resp_head != vi->rel.resp_tail) {
		ring_again(vi);
		work++;
	}
	return work;
}

/* ---- receive (VIA §6.4.1) --------------------------------------------------- */

/*
 * Take the head receive descriptor: 1, or 0 when none is posted. Invalid
 * ones complete in error on the way; on a reliable level the first of them
 * ends the search (-1), since the connection breaks on it (VIA §2.5.2).
 */
static int
recv_take(struct viad *d, struct via_vi *vi)
{
	struct via_vi_rx *rx = &vi->rx;
	struct via_ring *r = &vi->wq[VIA_WQ_RECV];

	if (rx->segs == NULL) {
		rx->segs = calloc(vi->owner->nic->info.max_segments_per_desc, sizeof(*rx->segs));
		if (rx->segs == NULL)
			return 0;
	}
	while (via_ring_avail(r) > 0) {
		struct via_wqe w = *(const struct via_wqe *)via_ring_peek(r, 0);
		VIP_CONTROL_SEGMENT cs;
		const struct via_mr *mr;
		uint64_t total;
		uint32_t status;

		via_ring_consume(r, 1);
		mr = desc_fetch(d, vi, VIA_WQ_RECV, &w, &cs, NULL, rx->segs, &rx->nb_segs, &total,
				&status);
		if (mr == NULL || status != 0 || total > UINT32_MAX) {
			complete(d, vi, VIA_WQ_RECV, &w, mr, 0, 0,
				 (status ? status : VIP_STATUS_LENGTH_ERROR) | VIP_STATUS_OP_RECEIVE);
			if (via_rel_level(vi))
				return -1;
			continue;
		}
		rx->have_desc = true;
		rx->wqe = w;
		rx->capacity = (uint32_t)total;
		return 1;
	}
	return 0;
}

static void
recv_complete(struct viad *d, struct via_vi *vi, uint32_t len, uint32_t imm, uint32_t status)
{
	struct via_vi_rx *rx = &vi->rx;

	/* looked up again: the descriptor's region may be gone (COMP_PROT) */
	complete(d, vi, VIA_WQ_RECV, &rx->wqe,
		 desc_region(d, vi, VIA_WQ_RECV, &rx->wqe, VIP_ERROR_COMP_PROT), len, imm,
		 status | VIP_STATUS_OP_RECEIVE);
	rx->have_desc = false;
	rx->in_msg = false;
}

/* Message @p msg counts as delivered: a copy of it takes no descriptor
 * (§2.5.1: "at most one Receive Descriptor to be consumed"). */
static void
rx_delivered(struct via_vi_rx *rx, uint32_t msg)
{
	if (!rx->delivered_any || (int32_t)(msg - rx->last_msg_id) > 0)
		rx->last_msg_id = msg;
	rx->delivered_any = true;
}

/*
 * The message being placed ends before its last byte: a frame of it was lost
 * or came out of order (Unreliable Delivery, §2.5.1), or its RDMA Write
 * target refused the rest. The receive descriptor it took completes with
 * @p status - §10.2 bit 4, Partial Packet Error: "an aborted or truncated
 * packet was received" - and its immediate data, which every frame carries.
 * The rest of its frames are dropped, and it counts as delivered.
 */
static void
rx_cut(struct viad *d, struct via_vi *vi, uint32_t status)
{
	struct via_vi_rx *rx = &vi->rx;

	if (rx->have_desc)
		recv_complete(d, vi, 0, rx->imm, status | rx->status);
	rx_delivered(rx, rx->msg_id);
	rx->in_msg = false;
}

/*
 * Where the peer's RDMA may go (VIA §3.2.2, §6.3.2): the handle names a
 * region of this VI's process, the whole range lies in it, the tags match,
 * and both the VI and the region allow the operation - the most protective
 * wins. NULL, and in *@p why the reason, if not.
 */
static struct via_mr *
rdma_target(struct viad *d, struct via_vi *vi, const struct via_wire_hdr *h, unsigned access,
	    const char **why)
{
	bool vi_allows = access == VIA_MR_REMOTE_WRITE ? vi->attr.rdma_write : vi->attr.rdma_read;
	struct via_mr *mr;
	int err;

	mr = via_mr_check(d, vi->owner, via_wire_rdma_handle(h), via_wire_rdma_va(h),
			  via_wire_msg_len(h), vi->attr.ptag, access, &err);
	if (vi_allows && mr != NULL)
		return mr;
	*why = !vi_allows ? "not enabled on the VI"
	       : err == -ENOENT ? "no such region"
	       : err == -ERANGE ? "outside the region"
				 : "tag or region rights";
	return NULL;
}

/*
 * The peer's RDMA Write may not go where it points (§6.3.2), or its target
 * vanished while it was being placed: nothing more is written. With
 * immediate data the write consumes a receive descriptor, which completes
 * with the protection error: §9.9.1 reports it "in the associated
 * Descriptor, and not via the asynchronous error mechanism". A reliable
 * level then refuses the frame with a NAK and breaks (§2.5.2, §2.5.3). An
 * Unreliable VI tells the initiator nothing: its asynchronous errors are
 * only the catastrophic ones (§7.1), and §10.2 bit 7 is not valid there.
 */
static void
write_refused(struct viad *d, struct via_vi *vi, const struct via_wire_hdr *h, const char *why,
	      struct via_poll_stats *st)
{
	struct via_vi_rx *rx = &vi->rx;
	const uint32_t msg = via_wire_msg_id(h), off = via_wire_offset(h);
	const bool imm = via_wire_flags(h) & VIA_WF_IMM;
	bool in_desc = false;     /* a receive descriptor carries the error */

	st->frames_dropped++;
	if (off == 0)
		VLOG_INFO("VI %u: RDMA Write refused: %s", vi->id, why);
	if (imm && off == 0 && recv_take(d, vi) > 0) {
		recv_complete(d, vi, 0, via_wire_imm(h),
			      VIP_STATUS_PROTECTION_ERROR | VIP_STATUS_OP_REMOTE_RDMA_WRITE |
			      VIP_STATUS_IMMEDIATE);
		rx_delivered(rx, msg);
		in_desc = true;
	} else if (rx->in_msg && rx->msg_id == msg) {
		in_desc = rx->have_desc;
		rx_cut(d, vi, VIP_STATUS_PROTECTION_ERROR);
	}
	rx->in_msg = false;
	/* the NAK's IMMEDIATE bit: reported at this end already */
	if (via_rel_level(vi))
		via_rel_nak(d, vi, h, VIP_STATUS_RDMA_PROT_ERROR | VIP_STATUS_OP_RDMA_WRITE |
			    (in_desc ? VIP_STATUS_IMMEDIATE : 0), why);
}

/* An RDMA Read of the peer: answered from the send side, in order. */
static void
read_request(struct viad *d, struct via_vi *vi, const struct via_wire_hdr *h)
{
	struct via_vi_rel *r = &vi->rel;
	struct via_rdma_resp *a;
	const char *why;

	if (rdma_target(d, vi, h, VIA_MR_REMOTE_READ, &why) == NULL) {
		VLOG_INFO("VI %u: RDMA Read refused: %s", vi->id, why);
		via_rel_nak(d, vi, h, VIP_STATUS_RDMA_PROT_ERROR | VIP_STATUS_OP_RDMA_READ, why);
		return;
	}
	if (r->resp_tail - r->resp_head == VIA_MAX_READS) {
		/* the peer outran the reads it may have outstanding */
		via_rel_nak(d, vi, h, VIP_STATUS_FORMAT_ERROR | VIP_STATUS_OP_RDMA_READ,
			    "too many RDMA Reads outstanding");
		return;
	}
	a = &r->resp[r->resp_tail++ % VIA_MAX_READS];
	ring_again(vi);      /* answered from the send side */
	a->va = via_wire_rdma_va(h);
	a->handle = via_wire_rdma_handle(h);
	a->len = via_wire_msg_len(h);
	a->msg_id = via_wire_msg_id(h);
	a->seq = via_wire_seq(h);
	a->sent = 0;
	a->zc = NULL;
}

/* A frame of the answer to one of our RDMA Reads: into its scatter list. */
static void
read_answer(struct viad *d, struct via_vi *vi, const struct via_wire_hdr *h, const uint8_t *data,
	    uint32_t len)
{
	struct via_sq_pending *p = via_sq_read(vi, via_wire_msg_id(h));

	if (p == NULL)
		return;
	if (len > 0 && (p->status & VIP_STATUS_ERROR_MASK) == 0 &&
	    segs_copy(d, vi, p->segs, p->nb_segs, via_wire_offset(h), (uint8_t *)data, len, true,
		      true) != 0)
		p->status |= VIP_STATUS_PROTECTION_ERROR;  /* local scatter list gone */
	p->received += len;
	if (p->received >= via_wire_msg_len(h)) {
		vi->rel.reads--;
		p->wait = VIA_SQ_READY;
		via_sq_drain(d, vi);
	}
}

/* A frame's message data: behind its headers, or (zero copy) in its second segment. */
static const uint8_t *
frame_data(const struct rte_mbuf *m, const struct via_wire_hdr *h)
{
	return m->next != NULL ? rte_pktmbuf_mtod(m->next, const uint8_t *)
			       : (const uint8_t *)(h + 1) + via_wire_ops[h->opcode].ext_len;
}

/*
 * The first frame of message @p h: it becomes the message being placed and,
 * if it consumes one, takes a receive descriptor. @return false if the
 * message goes no further (no descriptor, too small a one: reported here).
 */
static bool
rx_begin(struct viad *d, struct via_vi *vi, const struct via_wire_hdr *h, bool consumes,
	 struct via_poll_stats *st)
{
	struct via_vi_rx *rx = &vi->rx;
	const bool write = h->opcode == VIA_OP_RDMA_WRITE, imm = via_wire_flags(h) & VIA_WF_IMM;
	int taken;

	rx->in_msg = true;
	rx->msg_id = via_wire_msg_id(h);
	rx->expected_off = 0;
	rx->imm = imm ? via_wire_imm(h) : 0;
	rx->status = (imm ? VIP_STATUS_IMMEDIATE : 0) | (write ? VIP_STATUS_OP_REMOTE_RDMA_WRITE : 0);
	if (!consumes)
		return true;
	taken = recv_take(d, vi);
	if (taken < 0) {
		rx->in_msg = false;
		via_rel_nak(d, vi, h, VIP_STATUS_REMOTE_DESC_ERROR, "receive descriptor error");
		return false;
	}
	if (taken == 0) {
		/* the message is lost (§2.5.1). §2.5.2: on a reliable level
		 * that is an error, §9.9.1 Receive Queue Empty, and breaks the
		 * connection; an Unreliable VI raises nothing (§7.1) */
		rx->in_msg = false;
		st->frames_dropped++;
		if (via_rel_level(vi)) {
			via_session_async_error(vi->owner, VIP_ERROR_RECVQ_EMPTY, vi->cookie,
						VIP_RESOURCE_VI, VIP_STATUS_OP_RECEIVE, 0);
			via_rel_nak(d, vi, h, VIP_STATUS_REMOTE_DESC_ERROR, "no receive descriptor");
		}
		return false;
	}
	if (!write && via_wire_msg_len(h) > rx->capacity) {
		/* VIA §6.4.1: too small a descriptor, Length 0; the message
		 * counts as delivered, so a duplicate of it cannot take another
		 * descriptor */
		recv_complete(d, vi, 0, 0, VIP_STATUS_LENGTH_ERROR);
		rx_delivered(rx, rx->msg_id);
		if (via_rel_level(vi))
			via_rel_nak(d, vi, h, VIP_STATUS_REMOTE_DESC_ERROR,
				    "receive descriptor too small");
		return false;
	}
	return true;
}

static void
rx_send(struct viad *d, struct via_nic *nic, const struct rte_ether_hdr *eth,
	const struct via_wire_hdr *h, const uint8_t *data, struct via_poll_stats *st)
{
	struct via_vi *vi = via_idtab_lookup(&d->vis, via_wire_dst_vi(h));
	uint32_t msg = via_wire_msg_id(h), off = via_wire_offset(h);
	uint32_t total = via_wire_msg_len(h), len = via_wire_data_len(h);
	const bool write = h->opcode == VIA_OP_RDMA_WRITE;
	/* a Send always consumes a receive descriptor, an RDMA Write only
	 * with immediate data (VIA §10.2 bit 2) */
	const bool consumes = !write || (via_wire_flags(h) & VIA_WF_IMM);
	struct via_mr *target = NULL;
	const char *why;
	struct via_vi_rx *rx;

	if (vi != NULL && vi->conn.requesting && vi->conn.id == via_wire_conn_id(h)) {
		/* the acceptor is connected and sends, but its CONN_ACCEPT is
		 * still on its way (or lost: the next CONN_REQ brings another):
		 * not a dead connection, so no RESET; the message is lost */
		st->frames_dropped++;
		return;
	}
	vi = via_vi_of_frame(d, nic, eth->src_addr.addr_bytes, via_wire_dst_vi(h),
				     via_wire_src_vi(h), via_wire_conn_id(h), st);
	if (vi == NULL) {
		/* VIA §4.2: the sender learns at its next transfer that this
		 * connection is gone; once per message is enough */
		st->frames_dropped++;
		if (off == 0)
			via_dp_send_ctrl(nic, eth->src_addr.addr_bytes, VIA_OP_RESET, 0,
					 via_wire_src_vi(h), via_wire_dst_vi(h),
					 via_wire_conn_id(h), NULL, 0);
		return;
	}
	rx = &vi->rx;
	/* VIA §6.3.1.1: on Reliable Reception a write or send behind an RDMA
	 * Read has no remote effect before the read is answered (its data
	 * taken); no room to answer now: the frame is not taken, it comes again */
	if (vi->attr.reliability == VIP_SERVICE_RELIABLE_RECEPTION &&
	    vi->rel.resp_head != vi->rel.resp_tail) {
		read_answers(d, vi, UINT32_MAX);
		if (vi->state != VIP_STATE_CONNECTED || vi->rel.resp_head != vi->rel.resp_tail) {
			vi->rel.ack_due = true;
			st->frames_dropped++;
			return;
		}
	}
	if (via_rel_level(vi) && !via_rel_accept(vi, h)) {
		st->frames_dropped++;                /* out of order: go back N */
		return;
	}
	if (h->opcode == VIA_OP_RDMA_READ_RESP) {
		read_answer(d, vi, h, data, len);
		return;
	}
	if (rx->delivered_any && (int32_t)(msg - rx->last_msg_id) <= 0) {
		st->frames_dropped++;                /* a duplicate: delivered already */
		return;
	}
	if (rx->in_msg && rx->msg_id == msg && off < rx->expected_off &&
	    off + len <= rx->expected_off) {
		st->frames_dropped++;                /* a copy of a frame placed already */
		return;
	}
	if (off != 0 && (!rx->in_msg || rx->msg_id != msg || off != rx->expected_off)) {
		/* a frame of this message was lost, or overtaken: it is cut
		 * short (only Unreliable Delivery loses frames, §2.5.1) */
		if (rx->in_msg && rx->msg_id == msg)
			rx_cut(d, vi, VIP_STATUS_PARTIAL_ERROR);
		st->frames_dropped++;
		return;
	}
	/* a new message: the one before lost its last frames */
	if (off == 0 && rx->in_msg)
		rx_cut(d, vi, VIP_STATUS_PARTIAL_ERROR);
	if (write && (target = rdma_target(d, vi, h, VIA_MR_REMOTE_WRITE, &why)) == NULL) {
		write_refused(d, vi, h, why, st);
		return;
	}
	if (off == 0 && !rx_begin(d, vi, h, consumes, st))
		return;
	if (write) {
		/* straight into the target region (VIA §2.3.2, §6.3.2) */
		if (len > 0 && via_mem_write(vi->owner, target, via_wire_rdma_va(h) + off, data,
					     len) != 0) {
			write_refused(d, vi, h, "the RDMA Write target vanished", st);
			return;
		}
	} else if (len > 0 && segs_copy(d, vi, rx->segs, rx->nb_segs, off, (uint8_t *)data, len,
					true, true) != 0) {
		recv_complete(d, vi, 0, 0, VIP_STATUS_PROTECTION_ERROR);
		rx_delivered(rx, msg);
		if (via_rel_level(vi))
			via_rel_nak(d, vi, h, VIP_STATUS_REMOTE_DESC_ERROR,
				    "receive buffer protection error");
		return;
	}
	rx->expected_off += len;
	if (rx->expected_off == total) {
		/* a Send's Length counts what was placed in the descriptor's
		 * buffers; an RDMA Write with immediate data placed none */
		if (consumes)
			recv_complete(d, vi, write ? 0 : total, rx->imm, rx->status);
		rx->in_msg = false;
		rx_delivered(rx, msg);
	}
}

/* An ACK, NAK or RDMA Read request, for a connection that exists. */
static void
rx_xport(struct viad *d, struct via_nic *nic, const struct rte_ether_hdr *eth,
	 const struct via_wire_hdr *h, struct via_poll_stats *st)
{
	struct via_vi *vi = via_vi_of_frame(d, nic, eth->src_addr.addr_bytes, via_wire_dst_vi(h),
				     via_wire_src_vi(h), via_wire_conn_id(h), st);

	/* the transport is the reliable levels' (a NAK from an older viad on
	 * an Unreliable connection is dropped too) */
	if (vi == NULL || !via_rel_level(vi)) {
		st->frames_dropped++;
		return;
	}
	if (h->opcode == VIA_OP_RDMA_READ_REQ) {
		/* sequenced like data: only in order */
		if (via_rel_accept(vi, h))
			read_request(d, vi, h);
		else
			st->frames_dropped++;
		return;
	}
	via_rel_input(d, vi, h, st);
}

/* A frame for a VI of this shard, checked. @return whether it was handed on
 * (else the caller frees it) */
static bool
rx_deliver(struct viad *d, struct via_nic *nic, struct rte_mbuf *m, struct via_poll_stats *st)
{
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	const struct via_wire_hdr *h = (const struct via_wire_hdr *)(eth + 1);

	if (via_wire_ops[h->opcode].flags & VIA_OPF_CM) {
		/* after the VI's earlier frames; the CM runs on the control thread */
		if (hand_over(d, nic, d->cm_inbox, &m, 1) == 1)
			return true;
		st->frames_dropped++;
	} else if (via_wire_ops[h->opcode].flags & VIA_OPF_XPORT) {
		rx_xport(d, nic, eth, h, st);
	} else {
		rx_send(d, nic, eth, h, frame_data(m, h), st);
	}
	return false;
}

/* Whether frame @p m from the port of @p nic is a sound VIA frame for it. */
static bool
rx_check(struct via_nic *nic, struct rte_mbuf *m, struct via_poll_stats *st)
{
	const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
	const struct via_wire_hdr *h = (const struct via_wire_hdr *)(eth + 1);
	int rc;

	/* other traffic on a shared link (IPv6 neighbour discovery on a veth,
	 * say) is none of viad's business and not counted */
	if (m->data_len < RTE_ETHER_HDR_LEN || eth->ether_type != rte_cpu_to_be_16(VIA_ETHERTYPE))
		return false;
	st->frames_rx++;
	if (m->nb_segs != 1 || m->data_len < VIA_FRAME_HDR_LEN ||
	    !rte_is_same_ether_addr(&eth->dst_addr, via_port_mac(nic->port))) {
		st->frames_dropped++;
		return false;
	}
	rc = via_wire_check(h, m->data_len - (uint32_t)VIA_FRAME_HDR_LEN);
	if (rc != 0) {
		st->frames_dropped++;
		if (rc == -EBADMSG)
			st->frames_corrupt++;
		return false;
	}
	return true;
}

/*
 * Frames from a port's receive queue: checked, then taken here, or handed to
 * the shard of their VI or to the control thread (connection manager).
 * Consumes them.
 */
static void
rx_port(struct viad *d, struct via_shard *me, struct via_nic *nic, struct rte_mbuf **pkts,
	uint16_t n, struct via_poll_stats *st)
{
	uint16_t k;

	for (k = 0; k < n; k++) {
		struct rte_mbuf *m = pkts[k];
		struct rte_ring *to;

		if (!rx_check(nic, m, st)) {
			rte_pktmbuf_free(m);
			continue;
		}
		to = frame_route(d, m);
		if (to == me->inbox) {
			if (!rx_deliver(d, nic, m, st))
				rte_pktmbuf_free(m);
		} else if (hand_over(d, nic, to, &m, 1) == 0) {
			st->frames_dropped++;
			rte_pktmbuf_free(m);
		}
	}
}

/* Frames other shards (or this one, sending to its own NIC) handed over. */
static unsigned
rx_inbox(struct viad *d, struct via_shard *me, struct via_poll_stats *st)
{
	struct rte_mbuf *pkts[DP_BURST];
	unsigned rounds = 0, n, k, work = 0;

	/* a few bursts: one message can be many frames */
	do {
		n = rte_ring_dequeue_burst(me->inbox, (void **)pkts, DP_BURST, NULL);
		for (k = 0; k < n; k++) {
			if (!rx_deliver(d, &d->nics[pkts[k]->port], pkts[k], st))
				rte_pktmbuf_free(pkts[k]);
		}
		work += n;
	} while (n == DP_BURST && ++rounds < INBOX_ROUNDS);
	return work;
}

void
via_dp_cm_input(struct viad *d)
{
	struct rte_mbuf *pkts[DP_BURST];
	unsigned n, k;

	while ((n = rte_ring_dequeue_burst(d->cm_inbox, (void **)pkts, DP_BURST, NULL)) > 0) {
		for (k = 0; k < n; k++) {
			const struct rte_ether_hdr *eth =
				rte_pktmbuf_mtod(pkts[k], const struct rte_ether_hdr *);

			via_cm_input(d, &d->nics[pkts[k]->port], eth->src_addr.addr_bytes,
				     (const struct via_wire_hdr *)(eth + 1));
		}
		rte_pktmbuf_free_bulk(pkts, n);
	}
}

/* ---- flush, reset, the poll iteration ------------------------------------- */

void
via_dp_vi_reset(struct via_vi *vi)
{
	struct via_dp_seg *segs = vi->rx.segs;

	via_rel_reset(vi);
	memset(&vi->rx, 0, sizeof(vi->rx));
	vi->rx.segs = segs;
	via_zc_drop(&vi->tx.zc);
	vi->tx.active = false;
	vi->tx_msg_id = 0;
	vi->tx_seq = 0;
}

/*
 * The completed-operation bits (§10.2 bits 18:16) of a descriptor flushed
 * from queue @p q before viad took it: a send-queue descriptor says in its
 * Control field whether it is a Send, an RDMA Write or an RDMA Read (read
 * now, as a fetch would). Its region @p mr may be NULL (POST_DESC): nothing
 * is written then.
 */
static uint32_t
flushed_op(const struct via_vi *vi, enum via_wq_kind q, const struct via_wqe *w,
	   const struct via_mr *mr)
{
	VIP_UINT16 control;

	if (q == VIA_WQ_RECV)
		return VIP_STATUS_OP_RECEIVE;
	if (mr == NULL || via_mem_read(vi->owner, mr, w->desc_va + CONTROL_OFF, &control,
				       sizeof(control)) != 0)
		return VIP_STATUS_OP_SEND;
	return op_status[control & VIP_CONTROL_OP_MASK];
}

void
via_dp_flush(struct viad *d, struct via_vi *vi)
{
	enum via_wq_kind q;

	/* the oldest first: what the send queue holds back, then the message
	 * being framed, precede its ring */
	via_sq_flush(d, vi, VIP_STATUS_DESC_FLUSHED_ERROR);
	if (vi->tx.active) {
		vi->tx.active = false;
		complete(d, vi, VIA_WQ_SEND, &vi->tx.wqe,
			 desc_region(d, vi, VIA_WQ_SEND, &vi->tx.wqe, VIP_ERROR_POST_DESC), 0, 0,
			 VIP_STATUS_DESC_FLUSHED_ERROR | vi->tx.status);
	}
	if (vi->rx.have_desc)
		recv_complete(d, vi, 0, 0, VIP_STATUS_DESC_FLUSHED_ERROR);
	for (q = 0; q < VIA_WQ_COUNT; q++) {
		struct via_ring *r = &vi->wq[q];

		while (via_ring_avail(r) > 0) {
			struct via_wqe w = *(const struct via_wqe *)via_ring_peek(r, 0);
			const struct via_mr *mr = desc_region(d, vi, q, &w, VIP_ERROR_POST_DESC);

			via_ring_consume(r, 1);
			complete(d, vi, q, &w, mr, 0, 0,
				 VIP_STATUS_DESC_FLUSHED_ERROR | flushed_op(vi, q, &w, mr));
		}
	}
	via_dp_vi_reset(vi);
}

/*
 * One more (@p delta 1) or one fewer (-1) poller asleep: every client's
 * segment says how many (via_abi.h poller_asleep, NEED_WAKEUP). Under
 * sleep_lock, so that the last count stored is the true one.
 */
static void
count_asleep(struct viad *d, int delta)
{
	struct via_session *s;
	uint32_t n;

	via_dp_lock(&d->sleep_lock);
	n = d->poller_asleep + (uint32_t)delta;
	__atomic_store_n(&d->poller_asleep, n, __ATOMIC_SEQ_CST);
	TAILQ_FOREACH(s, &d->session_list, link) {
		if (s->opened)
			__atomic_store_n(&((struct via_shm_header *)s->seg.va)->poller_asleep, n,
					 __ATOMIC_SEQ_CST);
	}
	via_dp_unlock(&d->sleep_lock);
}

uint32_t
via_dp_prepare_sleep(struct viad *d, struct via_shard *me)
{
	uint32_t us = d->conf.adaptive_timeout_us;
	struct via_session *s;
	unsigned i;

	/* the count first, then the last look (seq_cst both): a client that
	 * rang after our look sees the count and writes the eventfd */
	count_asleep(d, 1);
	if (!rte_ring_empty(me->inbox) || via_zc_pending(me))
		return 0;
	for (i = 0; me->index == 0 && i < d->nb_nics; i++) {
		if (!rte_ring_empty(d->nics[i].backlog))
			return 0;
	}
	TAILQ_FOREACH(s, &d->session_list, link) {
		if (!s->opened)
			continue;
		for (i = 0; i < via_bell_summary_words(s->bell_words_live); i++) {
			if (__atomic_load_n(&s->bell_summary[i], __ATOMIC_SEQ_CST) &
			    me->bell_masks[i])
				return 0;
		}
	}
	/* reliable connections keep timers: wake up in time for them */
	if (!TAILQ_EMPTY(&me->rel_vis))
		us = RTE_MIN(us, d->conf.rel_rto_min_us);
	return us;
}

uint32_t
via_dp_end_sleep(struct viad *d)
{
	count_asleep(d, -1);
	return __atomic_load_n(&d->poller_asleep, __ATOMIC_SEQ_CST);
}

/* Counters of the lcore that runs the data path: a poll lcore's own, or
 * (NULL) the control thread's while it flushes or sends CM frames. */
static struct via_poll_stats ctl_stats;
static RTE_DEFINE_PER_LCORE(struct via_poll_stats *, cur_stats);

static struct via_poll_stats *
dp_stats(void)
{
	struct via_poll_stats *st = RTE_PER_LCORE(cur_stats);

	return st != NULL ? st : &ctl_stats;
}

/*
 * The doorbells of summary word @p j of session @p s that are this shard's
 * (its words only: the others' VIs are not its own): take each word whose
 * summary bit is set, visit the VIs whose bits are. A word beyond the
 * session's is not looked at (a client may set any summary bit); one
 * without a VI is emptied all the same, or its stale bits would keep a
 * later post from setting the summary bit again.
 */
static unsigned
bells_take(struct viad *d, struct via_shard *me, struct via_session *s, uint32_t j)
{
	uint64_t mine = me->bell_masks[j], sum;
	unsigned work = 0;

	if ((__atomic_load_n(&s->bell_summary[j], __ATOMIC_RELAXED) & mine) == 0)
		return 0;
	sum = __atomic_fetch_and(&s->bell_summary[j], ~mine, __ATOMIC_ACQUIRE) & mine;
	while (sum != 0) {
		uint32_t i = j * 64 + (uint32_t)__builtin_ctzll(sum);
		uint64_t w;

		sum &= sum - 1;
		if (i >= s->bell_words)
			continue;
		w = __atomic_exchange_n(&s->bells[i], 0, __ATOMIC_ACQUIRE);
		while (w != 0) {
			struct via_vi *vi = s->by_bell[i * 64 + (uint32_t)__builtin_ctzll(w)];

			w &= w - 1;
			if (vi != NULL)
				work += vi_visit(d, vi);
		}
	}
	return work;
}

unsigned
via_dp_poll(struct viad *d, struct via_shard *me, struct via_poll_stats *st)
{
	struct rte_mbuf *pkts[DP_BURST];
	struct via_session *s;
	struct via_vi *vi, *next;
	unsigned i, work = 0;
	uint64_t now;

	RTE_PER_LCORE(cur_stats) = st;
	RTE_PER_LCORE(cur_inbox) = me->inbox;
	/* sends whose frames were freed since (zero copy) complete first */
	work += via_zc_reap(d, me);
	for (i = 0; i < d->nb_nics; i++) {
		struct via_nic *nic = &d->nics[i];
		uint16_t n;

		/* port receive queue N belongs to shard N */
		if (me->index < via_port_nb_rxq(nic->port)) {
			n = via_port_rx_burst(nic->port, (uint16_t)me->index, pkts, DP_BURST);
			via_capture(nic, pkts, n, VIA_CAPTURE_RX);
			st->rx_bursts += n != 0;
			st->rx_burst_frames += n;
			rx_port(d, me, nic, pkts, n, st);
			work += n;
		}
		if (me->index == 0) {
			via_dp_lock(&nic->tx_lock);
			if (!rte_ring_empty(nic->backlog))
				work += backlog_flush(nic, st) + 1;
			/* a port that holds frames back (the faulty glue's delay
			 * and reordering) releases them on a burst, even empty */
			via_port_tx_burst(nic->port, 0, NULL, 0);
			via_dp_unlock(&nic->tx_lock);
		}
	}
	work += rx_inbox(d, me, st);
	/* VIA §11.2.2.1: the VIs whose doorbell rang get a bounded turn each,
	 * so idle VIs cost nothing; connected reliable VIs also run their
	 * timers and acknowledgments every iteration */
	now = rte_get_timer_cycles();
	TAILQ_FOREACH_SAFE(vi, &me->rel_vis, rel_link, next)
		via_rel_poll(d, vi, now, st);
	TAILQ_FOREACH(s, &d->session_list, link) {
		if (!s->opened)
			continue;
		for (i = 0; i < via_bell_summary_words(s->bell_words_live); i++)
			work += bells_take(d, me, s, i);
	}
	return work;
}
