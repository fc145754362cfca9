/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A message's bytes cut into frames of the connection's payload, for the
 * requester (sends, RDMA Writes, Read requests) and the responder (Read
 * answers) alike: each frame's data copied behind its headers, or chained
 * in place from provider memory (dp_zc.c); numbered by the reliable transport
 * (dp_rel.c) or in sequence; sealed with its CRC unless it never leaves
 * memory; transmitted (dp_net.c).
 */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include <rte_ring.h>

#include <vipl.h>

#include "dp.h"

#define DP_TXQ_BYTES    (32u * 1024u) /* queued ahead of a message: port or inbox */
/* frames of less data are copied: an external buffer's bookkeeping (an
 * mbuf, its attach, the tracker's atomics) costs more than copying them */
#define ZC_MIN_BYTES    1024

/*
 * Where a zero-copy frame of the @p len bytes of @p msg at its offset finds
 * them: viad's mapping of provider memory, when they lie in one segment of
 * it (its allocation in *@p pmem); NULL if the frame must copy them.
 */
static void *
zc_source(const struct via_dp_msg *msg, uint32_t len, struct via_pmem **pmem)
{
	const struct via_dp_seg *segs = msg->segs;
	uint32_t off = msg->off;
	uint16_t i;

	for (i = 0; i < msg->nb_segs && off >= segs[i].len; i++)
		off -= segs[i].len;
	if (i == msg->nb_segs || segs[i].len - off < len || segs[i].mr->pmem == NULL)
		return NULL;
	*pmem = segs[i].mr->pmem;
	return via_mem_direct(segs[i].mr, segs[i].va + off);
}

/*
 * Where the data of frame @p m go, the iov->iov_len bytes of @p msg at its
 * offset: chained in place (zero copy, counted by msg->zc, made on the
 * first such frame) where the message allows and the bytes lie in provider
 * memory (iov->iov_base NULL then: nothing to copy), else room behind the
 * headers (iov->iov_base), which the caller fills for the whole burst at
 * once. @return the data, for the CRC; NULL: out of mbufs
 */
static const void *
frame_data_place(struct viad *d, struct via_vi *vi, struct via_dp_msg *msg, struct rte_mbuf *m,
		 struct iovec *iov)
{
	const uint16_t len = (uint16_t)iov->iov_len;
	struct via_pmem *pmem;
	struct rte_mbuf *ext;
	void *src;

	iov->iov_base = NULL;
	if (msg->fs.data == NULL && msg->zero_copy && len >= ZC_MIN_BYTES &&
	    (src = zc_source(msg, len, &pmem)) != NULL &&
	    (msg->zc != NULL || (msg->zc = via_zc_new(d, vi, pmem)) != NULL) &&
	    (ext = via_zc_attach(msg->zc, pmem, src, len)) != NULL) {
		rte_pktmbuf_chain(m, ext);
		return src;
	}
	src = rte_pktmbuf_append(m, len);
	if (src != NULL && msg->fs.data != NULL)
		/* bytes in viad's reach already (inline): no region, no copy path */
		memcpy(src, msg->fs.data + msg->off, len);
	else
		iov->iov_base = src;
	return src;
}

/* The headers of frame @p h of @p msg, at its offset. */
static void
frame_hdr_fill(struct via_wire_hdr *h, const struct via_vi *vi, const struct via_dp_msg *msg)
{
	const struct via_frame_spec *fs = &msg->fs;
	const uint16_t ext = via_wire_ops[fs->opcode].ext_len;

	h->opcode = fs->opcode;
	via_wire_set_flags(h, fs->flags);
	via_wire_set_dst_vi(h, vi->conn.remote_vi);
	via_wire_set_src_vi(h, vi->id);
	via_wire_set_conn_id(h, vi->conn.id);
	via_wire_set_msg_id(h, fs->msg_id);
	via_wire_set_msg_len(h, fs->msg_len);
	via_wire_set_offset(h, msg->off);
	via_wire_set_imm(h, fs->imm);
	if (ext > 0) {
		const struct via_wire_rdma rdma = {
			.va = rte_cpu_to_be_64(fs->rdma_va), .handle = rte_cpu_to_be_32(fs->rdma_handle),
		};

		memcpy(h + 1, &rdma, ext);
	}
}

/* The header of frame @p m. */
static struct via_wire_hdr *
frame_hdr(struct rte_mbuf *m)
{
	return rte_pktmbuf_mtod_offset(m, struct via_wire_hdr *, RTE_ETHER_HDR_LEN);
}

/*
 * Frame @p frames of @p msg from its offset, one burst (VIA_DP_BURST at
 * most): the frames made (dp_net.c), their headers and data, the data
 * copied at once (dp_desc.c), numbered (dp_rel.c or in sequence), sealed,
 * transmitted (dp_net.c). @return 0, -ENOBUFS (out of mbufs: fewer
 * frames went), -EACCES (the data vanished: none went)
 */
static __rte_always_inline int
frame_burst(struct viad *d, struct via_vi *vi, struct via_dp_msg *msg, uint16_t frames)
{
	const uint16_t ext = via_wire_ops[msg->fs.opcode].ext_len;
	const uint32_t chunk = via_net_vi_payload(vi) - ext, first = msg->off;
	struct via_net_burst b;
	struct iovec iov[VIA_DP_BURST];
	const void *data[VIA_DP_BURST];
	uint16_t n, i, copies = 0;
	int rc = 0;

	n = via_net_burst_alloc(vi, &b, frames, ext);
	/* frames crossing a port other than by virtual address copy their data */
	if (!b.in_memory && !(vi->owner->nic->caps & VIA_PORT_CAP_TX_BY_VA))
		msg->zero_copy = false;
	for (i = 0; i < n; i++) {
		iov[i].iov_len = RTE_MIN(chunk, msg->total - msg->off);
		frame_hdr_fill(frame_hdr(b.pkts[i]), vi, msg);
		data[i] = frame_data_place(d, vi, msg, b.pkts[i], &iov[i]);
		if (data[i] == NULL)
			break;
		b.zero_copy += b.pkts[i]->next != NULL;
		copies += iov[i].iov_base != NULL;
		msg->off += (uint32_t)iov[i].iov_len;
	}
	if (i < n) {
		/* no room for its data: the frames before it go */
		rte_pktmbuf_free_bulk(b.pkts + i, n - i);
		b.n = n = i;
	}
	if (n < frames)
		rc = -ENOBUFS;
	/* the copied frames' data, the burst at once (the rest were zero copy
	 * or inline, placed already) */
	if (copies > 0) {
		const uint32_t end = msg->off;

		msg->off = first;
		if (via_segs_copy(vi, msg, iov, n, VIA_COPY_FROM_SEGS) != 0) {
			rte_pktmbuf_free_bulk(b.pkts, n);
			return -EACCES;
		}
		msg->off = end;
	}
	if (via_rel_level(vi))
		via_rel_track(d, vi, b.pkts, n);
	for (i = 0; i < n; i++) {
		struct via_wire_hdr *h = frame_hdr(b.pkts[i]);
		const uint16_t len = (uint16_t)iov[i].iov_len;

		if (!via_rel_level(vi))
			via_wire_set_seq(h, vi->tx_seq++);
		/* frames that never cross a port are never checked: no CRCs to make */
		if (b.in_memory)
			via_wire_finish(h, (uint16_t)(ext + len));
		else if (vi->conn.unsummed && (via_wire_ops[msg->fs.opcode].flags & VIA_OPF_DATA))
			via_wire_seal_unsummed(h, (uint16_t)(ext + len));
		else if (b.pkts[i]->next != NULL)
			via_wire_seal(h, ext, data[i], len);
		else
			via_wire_seal(h, (uint16_t)(ext + len), NULL, 0);
	}
	via_net_burst_xmit(vi, &b);
	return rc;
}

int
via_frame_send(struct viad *d, struct via_vi *vi, struct via_dp_msg *msg, uint32_t budget)
{
	const uint32_t chunk = via_net_vi_payload(vi) - via_wire_ops[msg->fs.opcode].ext_len;
	/* frames until its end or the budget (at least one: a 0-byte message has one) */
	uint64_t frames = RTE_MIN((uint64_t)(msg->total - msg->off), (uint64_t)budget);
	int rc;

	frames = RTE_MAX((frames + chunk - 1) / chunk, (uint64_t)1);
	do {
		uint16_t n = (uint16_t)RTE_MIN(frames, (uint64_t)VIA_DP_BURST);

		rc = frame_burst(d, vi, msg, n);
		frames -= n;
	} while (rc == 0 && frames > 0);
	/* out of mbufs: Unreliable Delivery frames the rest in a later turn
	 * (what the port drops meanwhile it may lose); a reliable level fails */
	return rc == -ENOBUFS && !via_rel_level(vi) ? 0 : rc;
}

/*
 * Whether the frames of one more message of @p vi fit where they go next (the
 * peer VI's inbox when it is on this NIC, else the backlog should the port be busy): a
 * descriptor is taken only then, so a sender outrunning the port waits in
 * its own queue instead of losing messages. Waiting there, it also waits its
 * turn (dp.c, vi_send): so the shared FIFO is kept short (DP_TXQ_BYTES), or a bulk
 * sender would queue milliseconds of frames ahead of every small message.
 */
static bool
tx_room(const struct via_vi *vi)
{
	const struct via_nic *nic = vi->owner->nic;
	uint32_t chunk = via_net_vi_payload(vi), need = via_net_msg_frames(vi);
	const struct via_vi *peer = via_net_to_self(nic, vi->conn.remote_mac)
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

bool
via_frame_room(struct via_vi *vi, bool new_msg)
{
	return tx_room(vi) && via_sq_room(vi) &&
	       (!via_rel_level(vi) || (new_msg ? via_rel_room_new(vi) : via_rel_room(vi)));
}
