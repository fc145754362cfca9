/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The sending side of a connection (VIA §6.3). Frames go out one after the
 * other, each written straight from the consumer's buffers (a gather list
 * is one sendmsg), as far as the socket takes them; the rest waits for
 * EPOLLOUT. The thread that posts writes at once; the progress thread
 * carries on.
 *
 * Order (VIA §6.3.1.1): the send queue is processed in order. A Send or an
 * RDMA Write completes once its last byte is in the kernel's hands (TCP
 * then delivers it or breaks the stream: the "in-flight" completion of
 * Table 1, §2.5.2); an RDMA Read completes when its data is back (rx.c),
 * so Sends and Writes behind it pass it, as §6.3.1.1 allows, unless they
 * carry the Queue Fence (§6.3.1.2). Answers the VI owes its peer (an RDMA
 * Read's data, a NAK) go between two frames, before the next descriptor.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "tcp_prov.h"

void
tcp_wire_hdr_encode(const struct tcp_wire_hdr *h, struct tcp_wire_hdr *w)
{
	w->type = h->type;
	w->flags = h->flags;
	w->reserved = 0;
	w->len = htobe32(h->len);
	w->seq = htobe32(h->seq);
	w->imm = htobe32(h->imm);
	w->rdma_va = htobe64(h->rdma_va);
	w->rdma_handle = htobe32(h->rdma_handle);
	w->arg = htobe32(h->arg);
}

void
tcp_wire_hdr_decode(const struct tcp_wire_hdr *w, struct tcp_wire_hdr *h)
{
	struct tcp_wire_hdr t = {
		.type = w->type,
		.flags = w->flags,
		.reserved = be16toh(w->reserved),
		.len = be32toh(w->len),
		.seq = be32toh(w->seq),
		.imm = be32toh(w->imm),
		.rdma_va = be64toh(w->rdma_va),
		.rdma_handle = be32toh(w->rdma_handle),
		.arg = be32toh(w->arg),
	};

	*h = t;
}

void
tcp_tx_reset(struct tcp_vi *vi)
{
	struct tcp_tx *tx = &vi->tx;
	struct tcp_ctl *c;

	while ((c = STAILQ_FIRST(&tx->ctl)) != NULL) {
		STAILQ_REMOVE_HEAD(&tx->ctl, link);
		free(c);
	}
	tx->nb_ctl = 0;
	tx->busy = false;
	tx->want_out = false;
	tx->has_wqe = false;
	tx->left = 0;
	tx->seq = 0;
	tx->reads = 0;
}

int
tcp_tx_ctl(struct tcp_vi *vi, const struct tcp_wire_hdr *hdr)
{
	struct tcp_ctl *c;

	if (vi->tx.nb_ctl >= TCP_MAX_CTL)
		return -ENOSPC;
	c = malloc(sizeof(*c));
	if (c == NULL)
		return -ENOMEM;
	c->hdr = *hdr;
	STAILQ_INSERT_TAIL(&vi->tx.ctl, c, link);
	vi->tx.nb_ctl++;
	return 0;
}

void
tcp_tx_last(struct tcp_vi *vi, const struct tcp_wire_hdr *hdr)
{
	struct tcp_wire_hdr w;

	/* in the middle of a frame the peer would read it as payload */
	if (vi->fd < 0 || vi->tx.busy)
		return;
	tcp_wire_hdr_encode(hdr, &w);
	if (send(vi->fd, &w, sizeof(w), MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		tcp_log("VI %u: the last frame is lost: %s", vi->obj.id, strerror(errno));
}

/* Poll the stream for room (EPOLLOUT) or stop. */
static void
want_out(struct tcp_vi *vi, bool on)
{
	struct epoll_event ev = {
		.events = EPOLLIN | (on ? EPOLLOUT : 0), .data.u64 = tcp_ep_key(vi->obj.id),
	};

	if (vi->tx.want_out == on || vi->fd < 0)
		return;
	if (epoll_ctl(vi->nic->ep_fd, EPOLL_CTL_MOD, vi->fd, &ev) == 0)
		vi->tx.want_out = on;
}

/* Make @p h (host order) and the first @p nb_segs of tx->segs the frame to write. */
static void
frame_start(struct tcp_vi *vi, const struct tcp_wire_hdr *h, unsigned nb_segs, uint32_t access)
{
	struct tcp_tx *tx = &vi->tx;
	unsigned i;

	tcp_wire_hdr_encode(h, &tx->hdr);
	tx->iov[0].iov_base = &tx->hdr;
	tx->iov[0].iov_len = sizeof(tx->hdr);
	for (i = 0; i < nb_segs; i++) {
		tx->iov[i + 1].iov_base = (void *)(uintptr_t)tx->segs[i].va;
		tx->iov[i + 1].iov_len = tx->segs[i].len;
	}
	tx->iov_pos = 0;
	tx->iov_cnt = nb_segs + 1;
	tx->left = sizeof(tx->hdr) + h->len;
	tx->nb_segs = nb_segs;
	tx->access = access;
	tx->mr_gen = vi->nic->mr_gen;
	tx->busy = true;
}

/*
 * Start the answer @p c. An RDMA Read is checked here, as its data is
 * about to be read (VIA §3.2.2.2, §6.3.2: the VI and the region must allow
 * it, the tags match). @return whether a frame was started
 */
static bool
frame_ctl(struct tcp_vi *vi, const struct tcp_ctl *c)
{
	struct tcp_wire_hdr h = {
		.type = c->hdr.type, .seq = c->hdr.seq, .arg = c->hdr.arg,
	};

	vi->tx.has_wqe = false;
	if (c->hdr.type != TCP_WIRE_READ_RESP) {
		frame_start(vi, &h, 0, 0);
		return true;
	}
	h.len = c->hdr.arg;
	h.arg = 0;
	if (!vi->rdma_read || tcp_mr_check(vi->nic, c->hdr.rdma_handle, c->hdr.rdma_va, h.len,
					   vi->ptag, TCP_REMOTE_READ) != 0) {
		/* nothing is read; the requester's descriptor says why
		 * (RDMA_PROT_ERROR, §10.2 bit 7), and on Reliable Delivery,
		 * the only level with reads, the error breaks (§2.5.2) */
		h.len = 0;
		h.arg = VIP_STATUS_RDMA_PROT_ERROR | VIP_STATUS_OP_RDMA_READ;
		tcp_vi_break(vi, &h, "an RDMA Read the VI or region does not allow");
		return false;
	}
	vi->tx.segs[0] = (struct tcp_seg){
		.va = c->hdr.rdma_va, .len = h.len, .mh = c->hdr.rdma_handle,
	};
	frame_start(vi, &h, h.len > 0 ? 1 : 0, TCP_REMOTE_READ);
	return true;
}

static const uint8_t frame_type[] = {
	[VIP_CONTROL_OP_SENDRECV] = TCP_WIRE_SEND,
	[VIP_CONTROL_OP_RDMAWRITE] = TCP_WIRE_RDMA_WRITE,
	[VIP_CONTROL_OP_RDMAREAD] = TCP_WIRE_READ_REQ,
};

/*
 * Start the frame of the next send-queue descriptor, completing those
 * that fail their checks on the way. @return whether a frame was started
 */
static bool
frame_desc(struct tcp_vi *vi)
{
	struct tcp_tx *tx = &vi->tx;
	struct tcp_wire_hdr h;
	struct tcp_desc d;
	struct tcp_wqe *w;
	uint32_t pos, err;

	while (vi->state == VIP_STATE_CONNECTED && tcp_wq_peek(&vi->sq, &pos)) {
		w = tcp_wq_at(&vi->sq, pos);
		err = tcp_desc_read(vi, &vi->sq, pos, &d, tx->segs);
		/* §6.3.1.2: a fenced descriptor waits for the RDMA Reads before it */
		if (err == 0 && (d.control & VIP_CONTROL_QFENCE) && tx->reads > 0)
			return false;
		vi->sq.next++;
		/* §10.2 bit 3: the segments must sum to Length and fit the MTU */
		if (err == 0 && (d.total != d.length || d.total > vi->max_transfer))
			err = VIP_STATUS_LENGTH_ERROR;
		if (err != 0) {
			tcp_wqe_complete(vi, &vi->sq, pos, err | tcp_op_status(&vi->sq, w->op), 0, 0);
			/* §2.5.2: on Reliable Delivery every error breaks the connection */
			if (vi->reliability != VIP_SERVICE_UNRELIABLE)
				tcp_vi_break(vi, NULL, "a descriptor in error on the send queue");
			continue;
		}
		memset(&h, 0, sizeof(h));
		h.type = frame_type[d.op];
		h.seq = tx->seq++;
		/* immediate data goes with Sends and Writes, not Reads (§10.2 bit 2) */
		if ((d.control & VIP_CONTROL_IMMEDIATE) && d.op != VIP_CONTROL_OP_RDMAREAD) {
			h.flags = TCP_WIRE_F_IMM;
			h.imm = d.imm;
		}
		if (d.op != VIP_CONTROL_OP_SENDRECV) {
			h.rdma_va = d.raddr.Data.AddressBits;
			h.rdma_handle = d.raddr.Handle;
		}
		if (d.op == VIP_CONTROL_OP_RDMAREAD) {
			/* the request only: the scatter list is read again for the answer */
			h.arg = (uint32_t)d.total;
			w->seq = h.seq;
			w->total = (uint32_t)d.total;
			frame_start(vi, &h, 0, 0);
		} else {
			h.len = (uint32_t)d.total;
			frame_start(vi, &h, d.nb_segs, TCP_LOCAL_READ);
		}
		tx->has_wqe = true;
		tx->wqe_pos = pos;
		return true;
	}
	return false;
}

/* Whether the frame's buffers still pass their check (a region went or changed). */
static bool
frame_segs_valid(struct tcp_vi *vi)
{
	struct tcp_tx *tx = &vi->tx;
	unsigned i;

	if (tx->mr_gen == vi->nic->mr_gen)
		return true;
	for (i = 0; i < tx->nb_segs; i++) {
		if (tcp_mr_check(vi->nic, tx->segs[i].mh, tx->segs[i].va, tx->segs[i].len, vi->ptag,
				 tx->access) != 0)
			return false;
	}
	tx->mr_gen = vi->nic->mr_gen;
	return true;
}

/* The frame was written whole. */
static void
frame_done(struct tcp_vi *vi)
{
	struct tcp_tx *tx = &vi->tx;
	struct tcp_wqe *w;

	tx->busy = false;
	if (!tx->has_wqe)
		return;
	tx->has_wqe = false;
	w = tcp_wq_at(&vi->sq, tx->wqe_pos);
	if (tx->hdr.type == TCP_WIRE_READ_REQ) {
		w->issued = true;
		tx->reads++;
		return;
	}
	tcp_wqe_complete(vi, &vi->sq, tx->wqe_pos, tcp_op_status(&vi->sq, w->op),
			 be32toh(tx->hdr.len), 0);
}

/*
 * The frame cannot be finished: a buffer of it went. What is on the
 * stream cannot be taken back, so the connection breaks, on both levels:
 * the peer would read what follows as the rest of this frame.
 */
static void
frame_failed(struct tcp_vi *vi)
{
	struct tcp_tx *tx = &vi->tx;

	if (tx->has_wqe) {
		struct tcp_wqe *w = tcp_wq_at(&vi->sq, tx->wqe_pos);

		tx->has_wqe = false;
		tcp_wqe_complete(vi, &vi->sq, tx->wqe_pos,
				 VIP_STATUS_PROTECTION_ERROR | tcp_op_status(&vi->sq, w->op), 0, 0);
	}
	tcp_vi_break(vi, NULL, "a buffer of a frame being sent went");
}

/* Skip @p n written bytes of the frame. */
static void
frame_advance(struct tcp_tx *tx, size_t n)
{
	tx->left -= n;
	while (n > 0) {
		struct iovec *v = &tx->iov[tx->iov_pos];

		if (n < v->iov_len) {
			v->iov_base = (uint8_t *)v->iov_base + n;
			v->iov_len -= n;
			return;
		}
		n -= v->iov_len;
		tx->iov_pos++;
	}
}

void
tcp_tx_push(struct tcp_vi *vi)
{
	struct tcp_tx *tx = &vi->tx;
	struct msghdr mh;
	ssize_t n;

	while (vi->state == VIP_STATE_CONNECTED) {
		if (!tx->busy) {
			struct tcp_ctl *c = STAILQ_FIRST(&tx->ctl);
			bool started;

			if (c != NULL) {
				STAILQ_REMOVE_HEAD(&tx->ctl, link);
				tx->nb_ctl--;
				started = frame_ctl(vi, c);
				free(c);
			} else {
				started = frame_desc(vi);
			}
			if (!started) {
				if (c == NULL)
					break;
				continue;
			}
		}
		if (!frame_segs_valid(vi)) {
			frame_failed(vi);
			return;
		}
		/* skip empty segments: a frame's last iovec may be one */
		while (tx->iov_pos < tx->iov_cnt && tx->iov[tx->iov_pos].iov_len == 0)
			tx->iov_pos++;
		if (tx->left > 0) {
			memset(&mh, 0, sizeof(mh));
			mh.msg_iov = &tx->iov[tx->iov_pos];
			mh.msg_iovlen = tx->iov_cnt - tx->iov_pos;
			n = sendmsg(vi->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n < 0) {
				if (errno == EINTR)
					continue;
				if (errno == EAGAIN || errno == EWOULDBLOCK) {
					want_out(vi, true);
					return;
				}
				if (errno == EFAULT)
					frame_failed(vi);
				else
					tcp_vi_break(vi, NULL, strerror(errno));
				return;
			}
			frame_advance(tx, (size_t)n);
		}
		if (tx->left == 0)
			frame_done(vi);
	}
	if (vi->state == VIP_STATE_CONNECTED)
		want_out(vi, false);
}
