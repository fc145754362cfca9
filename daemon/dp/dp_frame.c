/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A message's bytes cut into frames of the connection's payload, for the
 * requester (sends, RDMA Writes, Read requests) and the responder (Read
 * answers) alike: each frame's data copied behind its headers, or chained
 * in place from provider memory (dp_zc.c); numbered by the reliable transport
 * (dp_rel.c) or in sequence; sealed with its CRC unless it never leaves
 * memory; transmitted (dp_net.c).
 */
#include <string.h>

#include <rte_ring.h>

#include <vipl.h>

#include "dp.h"

#define DP_TXQ_BYTES    (32u * 1024u) /* queued ahead of a message: port or inbox */
/* frames of less data are copied: an external buffer's bookkeeping (an
 * mbuf, its attach, the tracker's atomics) costs more than copying them */
#define ZC_MIN_BYTES    1024

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
	       const uint8_t *data, struct via_dp_seg *segs, uint16_t nb_segs, uint32_t off,
	       uint16_t len)
{
	struct via_pmem *pmem;
	struct rte_mbuf *ext;
	uint8_t *dst;
	void *src;

	if (data != NULL) {
		/* bytes in viad's reach already (inline): no region, no copy path */
		dst = (uint8_t *)rte_pktmbuf_append(m, len);
		if (dst != NULL)
			memcpy(dst, data + off, len);
		return dst;
	}
	if (zc != NULL && len >= ZC_MIN_BYTES &&
	    (src = zc_source(segs, nb_segs, off, len, &pmem)) != NULL &&
	    (*zc != NULL || (*zc = via_zc_new(d, vi, pmem)) != NULL) && via_zc_fits(*zc, pmem) &&
	    (ext = via_zc_attach(*zc, src, len)) != NULL) {
		rte_pktmbuf_chain(m, ext);
		via_dp_stats()->frames_tx_zero_copy++;
		return src;
	}
	dst = (uint8_t *)rte_pktmbuf_append(m, len);
	if (dst == NULL || via_segs_copy(d, vi, segs, nb_segs, off, dst, len, false, false) != 0)
		return NULL;
	return dst;
}

bool
via_frame_send(struct viad *d, struct via_vi *vi, const struct via_frame_spec *fs,
	       struct via_dp_seg *segs, uint16_t nb_segs, uint32_t total, uint32_t *off,
	       uint32_t budget, struct via_zc **zc)
{
	struct via_nic *nic = vi->owner->nic;
	const uint16_t ext = via_wire_ops[fs->opcode].ext_len;
	const uint32_t chunk = via_net_vi_payload(vi) - ext;
	/* frames that never cross a port are never checked: no CRCs to make */
	const bool in_memory = via_net_to_self(nic, vi->conn.remote_mac);
	struct rte_mbuf *pkts[VIA_DP_BURST];
	uint32_t framed = 0;
	uint16_t n = 0;

	if (!in_memory && !(nic->caps & VIA_PORT_CAP_TX_BY_VA))
		zc = NULL;
	do {
		uint16_t len = (uint16_t)RTE_MIN(chunk, total - *off);
		struct rte_mbuf *m = rte_pktmbuf_alloc(via_nics_pool());
		struct via_wire_hdr *h;
		const void *data;

		h = m != NULL ? via_net_frame_init(m, nic, vi->conn.remote_mac, ext) : NULL;
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
		data = frame_data_put(d, vi, m, zc, fs->data, segs, nb_segs, *off, len);
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
		else if (vi->conn.unsummed && (via_wire_ops[fs->opcode].flags & VIA_OPF_DATA))
			via_wire_seal_unsummed(h, (uint16_t)(ext + len));
		else if (m->next != NULL)
			via_wire_seal(h, ext, data, len);
		else
			via_wire_seal(h, (uint16_t)(ext + len), NULL, 0);
		pkts[n++] = m;
		*off += len;
		framed += len;
		if (n == VIA_DP_BURST) {
			via_dp_xmit(nic, pkts, n);
			n = 0;
		}
	} while (*off < total && framed < budget);
	via_dp_xmit(nic, pkts, n);
	return true;
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
via_frame_room(struct via_vi *vi)
{
	return tx_room(vi) && via_sq_room(vi) && (!via_rel_level(vi) || via_rel_room(vi));
}
