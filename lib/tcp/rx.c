/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The receiving side of a connection (VIA §6.3, §2.5, §7), on the NIC's
 * progress thread. A frame's header says where its payload goes - the
 * next receive descriptor's scatter list, an RDMA Write's target region,
 * an RDMA Read's local buffers - and after the checks the payload is read
 * straight there (readv), as it comes. A payload that goes nowhere (an
 * error on an Unreliable VI) is read and dropped, so the stream stays in
 * step.
 *
 * Errors by level (VIA §2.5, Table 1, §7.1, §7.2, §10.2):
 * - a receive descriptor in error or too small: it completes with the
 *   error bits (§6.4.1: a too small one with LENGTH_ERROR, Length 0);
 * - no receive descriptor: the message is dropped, VIP_ERROR_RECVQ_EMPTY
 *   (§9.9.1);
 * - an RDMA Write the VI or the region refuses: nothing is written, the
 *   initiator gets a NAK and reports VIP_ERROR_RDMAW_PROT (§9.9.1);
 * - on Reliable Delivery each of these also breaks the connection (§2.5.2:
 *   "Upon detection of any error, the VI transitions to the Error state"),
 *   the peer told by a NAK first when the stream allows;
 * - a frame that breaks the protocol, or the end of the stream, breaks the
 *   connection at every level (§4.2: the VI is no longer connected);
 * - DISC, the peer's VipDisconnect, ends it too, but is no error.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "tcp_prov.h"

/* bytes read from one stream per event, so that one busy VI does not hold the others up */
#define RX_BUDGET (256u * 1024u)
/* what a NAK says of an RDMA Write the target refused (§10.2 bit 7) */
#define WRITE_REFUSED (VIP_STATUS_RDMA_PROT_ERROR | VIP_STATUS_OP_RDMA_WRITE)

void
tcp_rx_reset(struct tcp_vi *vi)
{
	struct tcp_rx *rx = &vi->rx;

	rx->phase = TCP_RX_HDR;
	rx->got = 0;
	rx->left = 0;
	rx->seq = 0;
	rx->end = TCP_RX_END_NONE;
	rx->nb_segs = 0;
}

static bool
reliable(const struct tcp_vi *vi)
{
	return vi->reliability != VIP_SERVICE_UNRELIABLE;
}

static void
protocol_error(struct tcp_vi *vi, const char *why)
{
	tcp_vi_break(vi, NULL, why);
}

/* A NAK for the frame being read, with @p status. */
static struct tcp_wire_hdr
nak(const struct tcp_vi *vi, uint32_t status)
{
	return (struct tcp_wire_hdr){ .type = TCP_WIRE_NAK, .seq = vi->rx.hdr.seq, .arg = status };
}

/* The payload goes nowhere: read and drop it. */
static void
discard(struct tcp_vi *vi)
{
	vi->rx.end = TCP_RX_END_NONE;
	vi->rx.left = vi->rx.hdr.len;
	vi->rx.phase = vi->rx.left > 0 ? TCP_RX_DISCARD : TCP_RX_HDR;
}

/*
 * A receive descriptor could not take the message: on Reliable Delivery
 * the connection breaks, the peer told (REMOTE_DESC_ERROR, §10.2 bit 8);
 * on Unreliable the message is dropped.
 */
static void
receive_failed(struct tcp_vi *vi, const char *why)
{
	if (reliable(vi)) {
		struct tcp_wire_hdr h = nak(vi, VIP_STATUS_REMOTE_DESC_ERROR);

		tcp_vi_break(vi, &h, why);
		return;
	}
	discard(vi);
}

static void payload_end(struct tcp_vi *vi);

/* Read the payload into rx->segs[0 .. nb_segs), which hold at least its length. */
static void
payload_start(struct tcp_vi *vi, unsigned nb_segs, uint32_t access, enum tcp_rx_end end,
	      uint32_t pos)
{
	struct tcp_rx *rx = &vi->rx;
	uint32_t need = rx->hdr.len;
	unsigned i;

	rx->iov_cnt = 0;
	for (i = 0; i < nb_segs && need > 0; i++) {
		uint32_t take = rx->segs[i].len < need ? rx->segs[i].len : need;

		rx->iov[i].iov_base = (void *)(uintptr_t)rx->segs[i].va;
		rx->iov[i].iov_len = take;
		rx->iov_cnt++;
		need -= take;
	}
	rx->iov_pos = 0;
	rx->nb_segs = rx->iov_cnt;
	rx->access = access;
	rx->mr_gen = vi->nic->mr_gen;
	rx->end = end;
	rx->wqe_pos = pos;
	rx->left = rx->hdr.len;
	rx->phase = TCP_RX_DATA;
	if (rx->left == 0)
		payload_end(vi);
}

/*
 * Take the next receive descriptor for the frame being read and check it.
 * @return whether it can take the frame (else it is dealt with)
 */
static bool
receive_take(struct tcp_vi *vi, uint32_t *pos, uint32_t op, uint32_t need)
{
	struct tcp_desc d;
	uint32_t err;

	if (!tcp_wq_peek(&vi->rq, pos)) {
		/* §9.9.1 Receive Queue Empty: the message is dropped */
		tcp_async_error(vi->nic, VIP_ERROR_RECVQ_EMPTY, VIP_RESOURCE_VI, vi, NULL,
				VIP_STATUS_OP_RECEIVE);
		receive_failed(vi, "no receive descriptor");
		return false;
	}
	vi->rq.next++;
	err = tcp_desc_read(vi, &vi->rq, *pos, &d, vi->rx.segs);
	/* §6.4.1, §10.2 bit 3: too small for the message */
	if (err == 0 && d.total < need)
		err = VIP_STATUS_LENGTH_ERROR;
	if (err != 0) {
		tcp_wqe_complete(vi, &vi->rq, *pos, err | op, 0, 0);
		receive_failed(vi, "a receive descriptor in error");
		return false;
	}
	vi->rx.nb_segs = d.nb_segs;
	return true;
}

/* A Send's data (VIA §2.3.1). */
static void
rx_send(struct tcp_vi *vi)
{
	uint32_t pos;

	if (receive_take(vi, &pos, VIP_STATUS_OP_RECEIVE, vi->rx.hdr.len))
		payload_start(vi, vi->rx.nb_segs, TCP_LOCAL_WRITE, TCP_RX_END_RECV, pos);
}

/* An RDMA Write's data (VIA §2.3.2), with or without immediate data. */
static void
rx_write(struct tcp_vi *vi)
{
	const struct tcp_wire_hdr *h = &vi->rx.hdr;
	uint32_t pos = 0;

	/* §3.2.2.2, §6.3.2: the VI and the region must allow it, the tags match */
	if (!vi->rdma_write || tcp_mr_check(vi->nic, h->rdma_handle, h->rdma_va, h->len, vi->ptag,
					    TCP_REMOTE_WRITE) != 0) {
		struct tcp_wire_hdr n = nak(vi, WRITE_REFUSED);

		if (reliable(vi)) {
			tcp_vi_break(vi, &n, "an RDMA Write the VI or region does not allow");
			return;
		}
		/* Unreliable: refused, the connection stays; a NAK that finds
		 * too many queued is dropped, as Unreliable may (§2.5.1) */
		if (tcp_tx_ctl(vi, &n) == 0)
			tcp_tx_push(vi);
		discard(vi);
		return;
	}
	/* §2.3.2: immediate data consumes a receive descriptor; its buffers
	 * take nothing (Length 0) */
	if ((h->flags & TCP_WIRE_F_IMM) &&
	    !receive_take(vi, &pos, VIP_STATUS_OP_REMOTE_RDMA_WRITE, 0))
		return;
	vi->rx.segs[0] = (struct tcp_seg){ .va = h->rdma_va, .len = h->len, .mh = h->rdma_handle };
	payload_start(vi, h->len > 0 ? 1 : 0, TCP_REMOTE_WRITE,
		      h->flags & TCP_WIRE_F_IMM ? TCP_RX_END_WRITE_IMM : TCP_RX_END_NONE, pos);
}

/* An RDMA Read asked of this VI: its answer is queued (tx.c checks and sends it). */
static void
rx_read_req(struct tcp_vi *vi)
{
	struct tcp_wire_hdr r = vi->rx.hdr;

	/* no payload, no more than the MTU, not on Unreliable (§2.5.1) */
	if (r.len != 0 || r.arg > vi->max_transfer || !reliable(vi)) {
		protocol_error(vi, "a malformed RDMA Read request");
		return;
	}
	/* a peer cannot have more Reads outstanding than its send queue holds */
	r.type = TCP_WIRE_READ_RESP;
	if (tcp_tx_ctl(vi, &r) != 0) {
		protocol_error(vi, "more RDMA Read requests than a send queue holds");
		return;
	}
	vi->rx.phase = TCP_RX_HDR;
	tcp_tx_push(vi);
}

/* The oldest RDMA Read waiting for its answer (§6.3.1.1: they complete in order). */
static bool
read_oldest(struct tcp_vi *vi, uint32_t *pos)
{
	uint32_t p;

	for (p = vi->sq.head; p != vi->sq.next; p++) {
		const struct tcp_wqe *w = tcp_wq_at(&vi->sq, p);

		if (w->issued && !(w->status & VIP_STATUS_DONE)) {
			*pos = p;
			return true;
		}
	}
	return false;
}

/* The answer to an RDMA Read of this VI. */
static void
rx_read_resp(struct tcp_vi *vi)
{
	const struct tcp_wire_hdr *h = &vi->rx.hdr;
	struct tcp_desc d;
	struct tcp_wqe *w;
	uint32_t pos, err;

	if (!read_oldest(vi, &pos) || tcp_wq_at(&vi->sq, pos)->seq != h->seq) {
		protocol_error(vi, "an RDMA Read answer for no request");
		return;
	}
	w = tcp_wq_at(&vi->sq, pos);
	if (h->arg != 0) {
		if (h->len != 0) {
			protocol_error(vi, "a refused RDMA Read answer with data");
			return;
		}
		/* refused at the target (§10.2 bit 7); the error breaks the
		 * connection (§2.5.2), which the target breaks too */
		vi->tx.reads--;
		tcp_wqe_complete(vi, &vi->sq, pos,
				 (h->arg & VIP_STATUS_ERROR_MASK) | VIP_STATUS_OP_RDMA_READ, 0, 0);
		tcp_vi_break(vi, NULL, "the peer refused an RDMA Read");
		return;
	}
	if (h->len != w->total) {
		protocol_error(vi, "an RDMA Read answer of another length");
		return;
	}
	/* the scatter list, read again: its memory may have gone meanwhile */
	err = tcp_desc_read(vi, &vi->sq, pos, &d, vi->rx.segs);
	if (err == 0 && d.total != w->total)
		err = VIP_STATUS_LENGTH_ERROR;
	if (err != 0) {
		vi->tx.reads--;
		tcp_wqe_complete(vi, &vi->sq, pos, err | VIP_STATUS_OP_RDMA_READ, 0, 0);
		tcp_vi_break(vi, NULL, "an RDMA Read descriptor in error");
		return;
	}
	payload_start(vi, d.nb_segs, TCP_LOCAL_WRITE, TCP_RX_END_READ, pos);
}

/* The peer refused a data frame of this VI. */
static void
rx_nak(struct tcp_vi *vi)
{
	const struct tcp_wire_hdr *h = &vi->rx.hdr;

	vi->rx.phase = TCP_RX_HDR;
	/* §9.9.1: the Write completed already; its error can only be reported now */
	if ((h->arg & VIP_STATUS_OP_MASK) == VIP_STATUS_OP_RDMA_WRITE &&
	    (h->arg & VIP_STATUS_RDMA_PROT_ERROR))
		tcp_async_error(vi->nic, VIP_ERROR_RDMAW_PROT, VIP_RESOURCE_VI, vi, NULL,
				VIP_STATUS_OP_RDMA_WRITE);
	if (reliable(vi))
		tcp_vi_break(vi, NULL, "the peer refused a frame");
}

/* A whole header is in: decode it and see where its payload goes. */
static void
rx_frame(struct tcp_vi *vi)
{
	struct tcp_wire_hdr *h = &vi->rx.hdr;

	tcp_wire_hdr_decode(h, h);
	vi->rx.phase = TCP_RX_HDR;
	if (h->reserved != 0 || (h->flags & ~TCP_WIRE_F_IMM) != 0) {
		protocol_error(vi, "a frame with reserved bits set");
		return;
	}
	if (h->type == TCP_WIRE_SEND || h->type == TCP_WIRE_RDMA_WRITE ||
	    h->type == TCP_WIRE_READ_REQ) {
		/* numbered from 0: TCP neither loses nor reorders, so a gap is
		 * a peer that does not speak this protocol */
		if (h->seq != vi->rx.seq++) {
			protocol_error(vi, "a data frame out of sequence");
			return;
		}
		/* both ends agreed on the MTU (VIA §4.1) */
		if (h->len > vi->max_transfer) {
			protocol_error(vi, "a message above the MTU");
			return;
		}
	}
	switch (h->type) {
	case TCP_WIRE_SEND:
		rx_send(vi);
		break;
	case TCP_WIRE_RDMA_WRITE:
		rx_write(vi);
		break;
	case TCP_WIRE_READ_REQ:
		rx_read_req(vi);
		break;
	case TCP_WIRE_READ_RESP:
		rx_read_resp(vi);
		break;
	case TCP_WIRE_NAK:
		if (h->len != 0)
			protocol_error(vi, "a NAK with a payload");
		else
			rx_nak(vi);
		break;
	case TCP_WIRE_DISC:
		if (h->len != 0)
			protocol_error(vi, "a DISC with a payload");
		else
			tcp_vi_hangup(vi);
		break;
	default:
		protocol_error(vi, "an unknown frame");
		break;
	}
}

/* The payload is in. */
static void
payload_end(struct tcp_vi *vi)
{
	struct tcp_rx *rx = &vi->rx;
	uint32_t imm_flag = rx->hdr.flags & TCP_WIRE_F_IMM ? VIP_STATUS_IMMEDIATE : 0;

	rx->phase = TCP_RX_HDR;
	switch (rx->end) {
	case TCP_RX_END_RECV:
		tcp_wqe_complete(vi, &vi->rq, rx->wqe_pos, VIP_STATUS_OP_RECEIVE | imm_flag,
				 rx->hdr.len, rx->hdr.imm);
		break;
	case TCP_RX_END_WRITE_IMM:
		/* §10.2 bits 18:16 011b and bit 19: the Write consumed it */
		tcp_wqe_complete(vi, &vi->rq, rx->wqe_pos,
				 VIP_STATUS_OP_REMOTE_RDMA_WRITE | VIP_STATUS_IMMEDIATE, 0,
				 rx->hdr.imm);
		break;
	case TCP_RX_END_READ:
		vi->tx.reads--;
		tcp_wqe_complete(vi, &vi->sq, rx->wqe_pos, VIP_STATUS_OP_RDMA_READ, rx->hdr.len, 0);
		/* a fenced descriptor may go now (§6.3.1.2) */
		tcp_tx_push(vi);
		break;
	case TCP_RX_END_NONE:
		break;
	}
	rx->end = TCP_RX_END_NONE;
}

/*
 * The payload's buffers went while it was coming in (deregistered, or
 * unmapped: EFAULT). A reference to deregistered memory is a protection
 * error (VIA §3.2.1); the rest of the payload is dropped.
 */
static void
payload_failed(struct tcp_vi *vi)
{
	struct tcp_rx *rx = &vi->rx;
	enum tcp_rx_end end = rx->end;
	uint32_t left = rx->left;

	rx->end = TCP_RX_END_NONE;
	if (end == TCP_RX_END_READ) {
		vi->tx.reads--;
		tcp_wqe_complete(vi, &vi->sq, rx->wqe_pos,
				 VIP_STATUS_PROTECTION_ERROR | VIP_STATUS_OP_RDMA_READ, 0, 0);
		tcp_vi_break(vi, NULL, "an RDMA Read buffer went");
		return;
	}
	if (end == TCP_RX_END_RECV) {
		tcp_wqe_complete(vi, &vi->rq, rx->wqe_pos,
				 VIP_STATUS_PROTECTION_ERROR | VIP_STATUS_OP_RECEIVE, 0, 0);
		receive_failed(vi, "a receive buffer went");
	} else {
		/* an RDMA Write's target went: refused as rx_write refuses */
		struct tcp_wire_hdr n = nak(vi, WRITE_REFUSED);

		if (end == TCP_RX_END_WRITE_IMM)
			tcp_wqe_complete(vi, &vi->rq, rx->wqe_pos, VIP_STATUS_PROTECTION_ERROR |
					 VIP_STATUS_OP_REMOTE_RDMA_WRITE, 0, 0);
		if (reliable(vi))
			tcp_vi_break(vi, &n, "an RDMA Write target went");
		else if (tcp_tx_ctl(vi, &n) == 0)
			tcp_tx_push(vi);
	}
	if (vi->state != VIP_STATE_CONNECTED)
		return;
	rx->left = left;
	rx->phase = left > 0 ? TCP_RX_DISCARD : TCP_RX_HDR;
}

/* Whether the payload's buffers still pass their check. */
static bool
payload_segs_valid(struct tcp_vi *vi)
{
	struct tcp_rx *rx = &vi->rx;
	unsigned i;

	if (rx->mr_gen == vi->nic->mr_gen)
		return true;
	for (i = 0; i < rx->nb_segs; i++) {
		if (tcp_mr_check(vi->nic, rx->segs[i].mh, rx->segs[i].va, rx->segs[i].len, vi->ptag,
				 rx->access) != 0)
			return false;
	}
	rx->mr_gen = vi->nic->mr_gen;
	return true;
}

/* Skip @p n read payload bytes. */
static void
payload_advance(struct tcp_rx *rx, size_t n)
{
	rx->left -= (uint32_t)n;
	if (rx->phase != TCP_RX_DATA)
		return;
	while (n > 0) {
		struct iovec *v = &rx->iov[rx->iov_pos];

		if (n < v->iov_len) {
			v->iov_base = (uint8_t *)v->iov_base + n;
			v->iov_len -= n;
			return;
		}
		n -= v->iov_len;
		rx->iov_pos++;
	}
}

/*
 * What a read of the stream returned. @return whether to go on: false at
 * the end of what is there (EAGAIN) or of the stream (the connection is
 * lost, VIA §4.2, §5.4)
 */
static bool
read_ok(struct tcp_vi *vi, ssize_t n)
{
	if (n > 0)
		return true;
	if (n == 0) {
		tcp_vi_break(vi, NULL, "the peer closed the connection");
		return false;
	}
	if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
		return false;
	tcp_vi_break(vi, NULL, strerror(errno));
	return false;
}

void
tcp_rx_pull(struct tcp_vi *vi)
{
	struct tcp_rx *rx = &vi->rx;
	size_t budget = RX_BUDGET;
	ssize_t n;

	while (vi->state == VIP_STATE_CONNECTED && budget > 0) {
		if (rx->phase == TCP_RX_HDR) {
			n = recv(vi->fd, (uint8_t *)&rx->hdr + rx->got, sizeof(rx->hdr) - rx->got,
				 MSG_DONTWAIT);
			if (!read_ok(vi, n))
				return;
			rx->got += (size_t)n;
			budget -= (size_t)n < budget ? (size_t)n : budget;
			if (rx->got == sizeof(rx->hdr)) {
				rx->got = 0;
				rx_frame(vi);
			}
			continue;
		}
		if (rx->phase == TCP_RX_DATA) {
			if (!payload_segs_valid(vi)) {
				payload_failed(vi);
				continue;
			}
			n = readv(vi->fd, &rx->iov[rx->iov_pos], (int)(rx->iov_cnt - rx->iov_pos));
			if (n < 0 && errno == EFAULT) {
				payload_failed(vi);
				continue;
			}
		} else {
			n = recv(vi->fd, vi->nic->scratch,
				 rx->left < sizeof(vi->nic->scratch) ? rx->left
								     : sizeof(vi->nic->scratch),
				 MSG_DONTWAIT);
		}
		if (!read_ok(vi, n))
			return;
		payload_advance(rx, (size_t)n);
		budget -= (size_t)n < budget ? (size_t)n : budget;
		if (rx->left == 0)
			payload_end(vi);
	}
}
