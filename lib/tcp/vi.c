/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * VIs (VIA §3.3, §5, §9.3, §9.8.2, §9.8.3): creation Idle, attributes
 * that change only while Idle, destruction only when Idle with empty work
 * queues, and the state changes a connection makes - Connected, broken
 * (Error: VIA §5.4), disconnected (Idle: §4.2, §9.4.5).
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcp_prov.h"

/* entries a work queue ring starts with; it doubles up to TCP_MAX_DESC_PER_QUEUE */
#define WQ_FIRST_CAP 64u

static int
wq_init(struct tcp_wq *q, struct tcp_cq *cq, bool recv)
{
	q->ring = calloc(WQ_FIRST_CAP, sizeof(*q->ring));
	if (q->ring == NULL)
		return -ENOMEM;
	q->cap = WQ_FIRST_CAP;
	q->cq = cq;
	q->recv = recv;
	return 0;
}

/* VIA §9.10.5 attributes, checked in the order §9.3.1 lists their errors. */
static int
vi_attr_check(struct tcp_nic *nic, const VIP_VI_ATTRIBUTES *a, struct tcp_ptag **ptag)
{
	const VIP_RELIABILITY_LEVEL supported = VIP_SERVICE_UNRELIABLE |
						VIP_SERVICE_RELIABLE_DELIVERY;

	/* one level, and one the NIC has */
	if (a->ReliabilityLevel == 0 || (a->ReliabilityLevel & (a->ReliabilityLevel - 1)) != 0 ||
	    (a->ReliabilityLevel & supported) == 0)
		return -EPROTONOSUPPORT;
	if (a->MaxTransferSize == 0 || a->MaxTransferSize > TCP_MAX_TRANSFER)
		return -EMSGSIZE;
	/* one class of service: TCP's */
	if (a->QoS != 0)
		return -EDOM;
	*ptag = tcp_ptag_in(nic, a->Ptag);
	if (*ptag == NULL)
		return -ESRCH;
	if ((unsigned)a->EnableRdmaWrite > VIP_TRUE || (unsigned)a->EnableRdmaRead > VIP_TRUE)
		return -EINVAL;
	return 0;
}

static void
vi_attr_set(struct tcp_vi *vi, const VIP_VI_ATTRIBUTES *a, struct tcp_ptag *ptag)
{
	if (vi->ptag != NULL)
		vi->ptag->users--;
	ptag->users++;
	vi->ptag = ptag;
	vi->reliability = a->ReliabilityLevel;
	vi->max_transfer = (uint32_t)a->MaxTransferSize;
	vi->qos = a->QoS;
	vi->rdma_write = a->EnableRdmaWrite;
	vi->rdma_read = a->EnableRdmaRead;
}

static void
vi_attr_get(const struct tcp_vi *vi, VIP_VI_ATTRIBUTES *a)
{
	memset(a, 0, sizeof(*a));
	a->ReliabilityLevel = vi->reliability;
	a->MaxTransferSize = vi->max_transfer;
	a->QoS = vi->qos;
	a->Ptag = tcp_handle_of(vi->nic, &vi->ptag->obj);
	a->EnableRdmaWrite = vi->rdma_write ? VIP_TRUE : VIP_FALSE;
	a->EnableRdmaRead = vi->rdma_read ? VIP_TRUE : VIP_FALSE;
}

void
tcp_vi_attr_to_wire(const struct tcp_vi *vi, struct tcp_wire_attr *w)
{
	memset(w, 0, sizeof(*w));
	w->max_transfer = htobe32(vi->max_transfer);
	w->qos = htobe32((uint32_t)vi->qos);
	w->reliability = htobe16(vi->reliability);
	w->rdma_write = vi->rdma_write;
	w->rdma_read = vi->rdma_read;
}

void
tcp_vi_attr_from_wire(const struct tcp_wire_attr *w, VIP_VI_ATTRIBUTES *a)
{
	memset(a, 0, sizeof(*a));
	a->ReliabilityLevel = be16toh(w->reliability);
	a->MaxTransferSize = be32toh(w->max_transfer);
	a->QoS = be32toh(w->qos);
	/* the remote tag means nothing here (VIA §3.2.2.1: tags are local) */
	a->Ptag = NULL;
	a->EnableRdmaWrite = w->rdma_write ? VIP_TRUE : VIP_FALSE;
	a->EnableRdmaRead = w->rdma_read ? VIP_TRUE : VIP_FALSE;
}

static void
vi_free(struct tcp_nic *nic, struct tcp_vi *vi)
{
	tcp_tx_reset(vi);
	if (vi->sq.cq != NULL)
		vi->sq.cq->users--;
	if (vi->rq.cq != NULL)
		vi->rq.cq->users--;
	vi->ptag->users--;
	tcp_obj_del(nic, &vi->obj);
	nic->nb_vi--;
	free(vi->sq.ring);
	free(vi->rq.ring);
	free(vi);
}

VIP_RETURN
tcp_create_vi(VIP_NIC_HANDLE NicHandle, VIP_VI_ATTRIBUTES *ViAttribs, VIP_CQ_HANDLE SendCQHandle,
	      VIP_CQ_HANDLE RecvCQHandle, VIP_VI_HANDLE *ViHandle)
{
	struct tcp_cq *scq = NULL, *rcq = NULL;
	struct tcp_ptag *ptag;
	struct tcp_nic *nic;
	struct tcp_vi *vi;
	int rc;

	if (ViAttribs == NULL || ViHandle == NULL)
		return VIP_INVALID_PARAMETER;
	nic = tcp_nic_enter(NicHandle, TCP_OBJ_NIC, NULL);
	if (nic == NULL)
		return VIP_INVALID_PARAMETER;
	/* a CQ, if given, of this NIC (VIA §3.4) */
	if (SendCQHandle != NULL)
		scq = tcp_obj_in(nic, SendCQHandle, TCP_OBJ_CQ);
	if (RecvCQHandle != NULL)
		rcq = tcp_obj_in(nic, RecvCQHandle, TCP_OBJ_CQ);
	if ((SendCQHandle != NULL && scq == NULL) || (RecvCQHandle != NULL && rcq == NULL)) {
		tcp_nic_leave(nic);
		return VIP_INVALID_PARAMETER;
	}
	rc = vi_attr_check(nic, ViAttribs, &ptag);
	if (rc == 0 && nic->nb_vi >= TCP_MAX_VI)
		rc = -ENOSPC;
	vi = rc == 0 ? calloc(1, sizeof(*vi)) : NULL;
	if (rc == 0 && (vi == NULL || wq_init(&vi->sq, scq, false) != 0 ||
			wq_init(&vi->rq, rcq, true) != 0))
		rc = -ENOMEM;
	if (rc == 0)
		rc = tcp_obj_add(nic, &vi->obj, TCP_OBJ_VI);
	if (rc != 0) {
		if (vi != NULL) {
			free(vi->sq.ring);
			free(vi->rq.ring);
			free(vi);
		}
		tcp_nic_leave(nic);
		return via_vip_return(rc);
	}
	vi->nic = nic;
	vi->state = VIP_STATE_IDLE;
	vi->fd = -1;
	vi->cm_fd = -1;
	STAILQ_INIT(&vi->tx.ctl);
	vi_attr_set(vi, ViAttribs, ptag);
	if (scq != NULL)
		scq->users++;
	if (rcq != NULL)
		rcq->users++;
	nic->nb_vi++;
	*ViHandle = tcp_handle_of(nic, &vi->obj);
	tcp_nic_leave(nic);
	return VIP_SUCCESS;
}

VIP_RETURN
tcp_destroy_vi(VIP_VI_HANDLE ViHandle)
{
	struct tcp_nic *nic;
	struct tcp_vi *vi;

	nic = tcp_nic_enter(ViHandle, TCP_OBJ_VI, (void **)&vi);
	if (nic == NULL)
		return VIP_INVALID_PARAMETER;
	/* VIA §9.3.2: Idle, and every descriptor dequeued */
	if (vi->state != VIP_STATE_IDLE || vi->sq.head != vi->sq.tail || vi->rq.head != vi->rq.tail) {
		tcp_nic_leave(nic);
		return VIP_ERROR_RESOURCE;
	}
	/* a waiter on its queues finds the handle stale */
	pthread_cond_broadcast(tcp_cond_of(nic, vi->obj.id));
	vi_free(nic, vi);
	tcp_nic_leave(nic);
	return VIP_SUCCESS;
}

VIP_RETURN
tcp_query_vi(VIP_VI_HANDLE ViHandle, VIP_VI_STATE *State, VIP_VI_ATTRIBUTES *Attributes,
	     VIP_BOOLEAN *SendQueueEmpty, VIP_BOOLEAN *RecvQueueEmpty)
{
	struct tcp_nic *nic;
	struct tcp_vi *vi;

	if (State == NULL || Attributes == NULL || SendQueueEmpty == NULL || RecvQueueEmpty == NULL)
		return VIP_INVALID_PARAMETER;
	nic = tcp_nic_enter(ViHandle, TCP_OBJ_VI, (void **)&vi);
	if (nic == NULL)
		return VIP_INVALID_PARAMETER;
	*State = vi->state;
	vi_attr_get(vi, Attributes);
	*SendQueueEmpty = vi->sq.head == vi->sq.tail ? VIP_TRUE : VIP_FALSE;
	*RecvQueueEmpty = vi->rq.head == vi->rq.tail ? VIP_TRUE : VIP_FALSE;
	tcp_nic_leave(nic);
	return VIP_SUCCESS;
}

VIP_RETURN
tcp_set_vi_attributes(VIP_VI_HANDLE ViHandle, VIP_VI_ATTRIBUTES *Attributes)
{
	struct tcp_ptag *ptag;
	struct tcp_nic *nic;
	struct tcp_vi *vi;
	int rc;

	if (Attributes == NULL)
		return VIP_INVALID_PARAMETER;
	nic = tcp_nic_enter(ViHandle, TCP_OBJ_VI, (void **)&vi);
	if (nic == NULL)
		return VIP_INVALID_PARAMETER;
	/* VIA §9.8.2: not in a state that allows it, i.e. not Idle */
	rc = vi->state != VIP_STATE_IDLE ? -EPERM : vi_attr_check(nic, Attributes, &ptag);
	if (rc == 0)
		vi_attr_set(vi, Attributes, ptag);
	tcp_nic_leave(nic);
	return via_vip_return(rc);
}

/* ---- connection states --------------------------------------------------- */

int
tcp_vi_connected(struct tcp_vi *vi, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = tcp_ep_key(vi->obj.id) };

	if (epoll_ctl(vi->nic->ep_fd, EPOLL_CTL_ADD, fd, &ev) != 0 &&
	    (errno != EEXIST || epoll_ctl(vi->nic->ep_fd, EPOLL_CTL_MOD, fd, &ev) != 0))
		return -errno;
	tcp_tx_reset(vi);
	tcp_rx_reset(vi);
	vi->fd = fd;
	vi->state = VIP_STATE_CONNECTED;
	return 0;
}

/* Every posted descriptor completes, flushed (VIA §4.2, §5.4, §10.2 bit 5). */
static void
vi_flush(struct tcp_vi *vi)
{
	tcp_wq_flush(vi, &vi->sq, VIP_STATUS_DESC_FLUSHED_ERROR);
	tcp_wq_flush(vi, &vi->rq, VIP_STATUS_DESC_FLUSHED_ERROR);
	tcp_tx_reset(vi);
	tcp_rx_reset(vi);
}

/* The VI lets go of its stream: the peer reads what was sent, then the end. */
static void
vi_close_stream(struct tcp_vi *vi)
{
	if (vi->fd < 0)
		return;
	tcp_linger_close(vi->nic, vi->fd);
	vi->fd = -1;
}

void
tcp_vi_break(struct tcp_vi *vi, const struct tcp_wire_hdr *last, const char *why)
{
	if (vi->state != VIP_STATE_CONNECTED)
		return;
	tcp_log("VI %u: connection broken: %s", vi->obj.id, why);
	if (last != NULL)
		tcp_tx_last(vi, last);
	vi_close_stream(vi);
	/* VIA §2.5.2, §5.4: Error state, every posted descriptor in error, and
	 * the asynchronous report (§7.2; §9.9.1 Connection Lost) */
	vi->state = VIP_STATE_ERROR;
	vi_flush(vi);
	tcp_async_error(vi->nic, VIP_ERROR_CONN_LOST, VIP_RESOURCE_VI, vi, NULL, 0);
}

void
tcp_vi_hangup(struct tcp_vi *vi)
{
	tcp_log("VI %u: the peer disconnected", vi->obj.id);
	vi_close_stream(vi);
	/*
	 * VIA §4.2: the provider "is required to detect that a VI is no longer
	 * connected and notify the VI consumer", at the latest at the next
	 * data transfer: the flush does, at once, and so does the Error state
	 * (VipDisconnect brings it back to Idle). The asynchronous
	 * notification of a remote disconnect is "not a requirement", and a
	 * hang-up is not a lost connection: no CONN_LOST.
	 */
	vi->state = VIP_STATE_ERROR;
	vi_flush(vi);
}

void
tcp_vi_disconnect(struct tcp_vi *vi)
{
	static const struct tcp_wire_hdr disc = { .type = TCP_WIRE_DISC };

	/* a VipConnectRequest in progress sees its stream end and gives up */
	if (vi->state == VIP_STATE_CONNECT_PENDING && vi->cm_fd >= 0)
		shutdown(vi->cm_fd, SHUT_RDWR);
	/* the peer hears of the hang-up, unless a frame is half written: then
	 * the stream's end mid-frame tells it the connection was lost */
	if (vi->state == VIP_STATE_CONNECTED)
		tcp_tx_last(vi, &disc);
	vi_close_stream(vi);
	vi->state = VIP_STATE_IDLE;
	vi_flush(vi);
}

void
tcp_vi_fini_all(struct tcp_nic *nic)
{
	struct tcp_obj *obj;
	uint32_t cursor = 0;

	while ((obj = via_idtab_next(&nic->objs, &cursor, NULL)) != NULL) {
		struct tcp_vi *vi = (struct tcp_vi *)obj;

		if (obj->type != TCP_OBJ_VI)
			continue;
		if (vi->fd >= 0)
			close(vi->fd);
		/* the requesting thread owns cm_fd and closes it */
		if (vi->cm_fd >= 0)
			shutdown(vi->cm_fd, SHUT_RDWR);
		vi_free(nic, vi);
	}
}
