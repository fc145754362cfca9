/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completion queues. Entries are kept in the widest format (tagged) and
 * cut to the CQ's format when read; the ring grows instead of overrunning.
 * Reading progresses the endpoints bound to the CQ (FI_PROGRESS_MANUAL);
 * fi_cq_sread sleeps in VipCQWait on the endpoint's VIA completion queue,
 * which every descriptor of every VI of the endpoint completes into.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "via_fi.h"

/* The longest sleep in VipCQWait before looking again: events that do not
 * pass through the VIA CQ (another thread's completions, fi_cq_signal,
 * a second endpoint on the CQ) are seen within it. */
#define VF_SREAD_SLICE_MS 100

int
vf_cq_push(struct vf_cq *cq, const struct fi_cq_tagged_entry *e, fi_addr_t src)
{
	struct vf_cqe *slot;

	if (cq->count == cq->cap) {
		size_t cap = 2 * cq->cap, i;
		struct vf_cqe *ring = malloc(cap * sizeof(*ring));

		if (ring == NULL)
			return -ENOMEM;
		for (i = 0; i < cq->count; i++)
			ring[i] = cq->ring[(cq->head + i) % cq->cap];
		free(cq->ring);
		cq->ring = ring;
		cq->cap = cap;
		cq->head = 0;
	}
	slot = &cq->ring[(cq->head + cq->count) % cq->cap];
	slot->e = *e;
	slot->src = src;
	cq->count++;
	return 0;
}

int
vf_cq_push_err(struct vf_cq *cq, const struct fi_cq_err_entry *e)
{
	struct vf_cq_err *n = malloc(sizeof(*n));

	if (n == NULL)
		return -ENOMEM;
	n->e = *e;
	vf_list_add_tail(&cq->errs, &n->link);
	return 0;
}

static size_t
vf_cq_entry_size(enum fi_cq_format f)
{
	switch (f) {
	case FI_CQ_FORMAT_MSG: return sizeof(struct fi_cq_msg_entry);
	case FI_CQ_FORMAT_DATA: return sizeof(struct fi_cq_data_entry);
	case FI_CQ_FORMAT_TAGGED: return sizeof(struct fi_cq_tagged_entry);
	default: return sizeof(struct fi_cq_entry);
	}
}

static void
vf_cq_progress(struct vf_cq *cq)
{
	unsigned i;

	for (i = 0; i < cq->neps; i++)
		vf_progress(cq->eps[i]);
}

/* Each narrower format is a prefix of fi_cq_tagged_entry. */
static ssize_t
vf_cq_take(struct vf_cq *cq, void *buf, size_t count, fi_addr_t *src)
{
	size_t sz = vf_cq_entry_size(cq->format), n = 0;

	if (!vf_list_empty(&cq->errs))
		return -FI_EAVAIL;
	while (n < count && cq->count > 0) {
		struct vf_cqe *e = &cq->ring[cq->head];

		memcpy((uint8_t *)buf + n * sz, &e->e, sz);
		if (src)
			src[n] = e->src;
		cq->head = (cq->head + 1) % cq->cap;
		cq->count--;
		n++;
	}
	return n ? (ssize_t)n : -FI_EAGAIN;
}

/*
 * A polling reader that keeps finding nothing gives its CPU away at each
 * further empty read (sched_yield): with more busy threads than CPUs (MPI
 * ranks spinning beside viad's poll lcore on a small machine) the peer or
 * viad is what it waits for.
 */
static ssize_t
vf_cq_readfrom(struct fid_cq *fcq, void *buf, size_t count, fi_addr_t *src)
{
	struct vf_cq *cq = vf_container_of(fcq, struct vf_cq, cq);
	unsigned yield_after = cq->dom->p.yield_polls;
	bool yield = false;
	ssize_t ret;

	pthread_mutex_lock(&cq->dom->lock);
	vf_cq_progress(cq);
	ret = vf_cq_take(cq, buf, count, src);
	if (ret != -FI_EAGAIN)
		cq->empty_reads = 0;
	else if (yield_after && ++cq->empty_reads >= yield_after)
		yield = true;
	pthread_mutex_unlock(&cq->dom->lock);
	if (yield)
		sched_yield();
	return ret;
}

static ssize_t
vf_cq_read(struct fid_cq *fcq, void *buf, size_t count)
{
	return vf_cq_readfrom(fcq, buf, count, NULL);
}

static ssize_t
vf_cq_readerr(struct fid_cq *fcq, struct fi_cq_err_entry *buf, uint64_t flags)
{
	struct vf_cq *cq = vf_container_of(fcq, struct vf_cq, cq);
	struct vf_cq_err *n;
	size_t sz = sizeof(*buf);

	(void)flags;
	pthread_mutex_lock(&cq->dom->lock);
	n = vf_list_first(&cq->errs, struct vf_cq_err, link);
	if (n != NULL)
		vf_list_del(&n->link);
	pthread_mutex_unlock(&cq->dom->lock);
	if (n == NULL)
		return -FI_EAGAIN;
	/* the entry of API 1.4 and before ends before err_data_size; no
	 * provider error data is given either way */
	if (FI_VERSION_LT(cq->dom->api_version, FI_VERSION(1, 5)))
		sz = offsetof(struct fi_cq_err_entry, err_data_size);
	else
		n->e.err_data_size = 0;
	n->e.err_data = NULL;
	memcpy(buf, &n->e, sz);
	free(n);
	return 1;
}

static ssize_t
vf_cq_sreadfrom(struct fid_cq *fcq, void *buf, size_t count, fi_addr_t *src, const void *cond,
		int timeout)
{
	struct vf_cq *cq = vf_container_of(fcq, struct vf_cq, cq);
	uint64_t deadline = timeout < 0 ? UINT64_MAX : vf_now_ms() + (uint64_t)timeout;
	ssize_t ret;

	(void)cond;   /* a threshold is a hint: one entry ends the wait */
	for (;;) {
		struct vf_ep *ep = NULL;
		VIP_CQ_HANDLE vcq = NULL;
		VIP_VI_HANDLE vi;
		VIP_BOOLEAN recvq;
		uint64_t now, wait;
		VIP_RETURN rc;

		pthread_mutex_lock(&cq->dom->lock);
		vf_cq_progress(cq);
		ret = vf_cq_take(cq, buf, count, src);
		if (ret == -FI_EAGAIN && cq->signaled) {
			cq->signaled = false;
			pthread_mutex_unlock(&cq->dom->lock);
			return -FI_EAGAIN;
		}
		if (ret != -FI_EAGAIN) {
			pthread_mutex_unlock(&cq->dom->lock);
			return ret;
		}
		now = vf_now_ms();
		if (now >= deadline) {
			pthread_mutex_unlock(&cq->dom->lock);
			return -FI_EAGAIN;
		}
		wait = deadline - now < VF_SREAD_SLICE_MS ? deadline - now : VF_SREAD_SLICE_MS;
		if (cq->neps > 0 && cq->eps[0]->vcq != NULL) {
			ep = cq->eps[0];
			vcq = ep->vcq;
			ep->cq_waiters++;
		}
		pthread_mutex_unlock(&cq->dom->lock);
		if (vcq == NULL) {
			struct timespec ts = { 0, (long)wait * 1000000 };

			nanosleep(&ts, NULL);
			continue;
		}
		/* sleeps (no CPU) until a descriptor of the endpoint completes */
		rc = VipCQWait(vcq, (VIP_ULONG)wait, &vi, &recvq);
		pthread_mutex_lock(&cq->dom->lock);
		ep->cq_waiters--;
		if (rc == VIP_SUCCESS)
			vf_progress_one(ep, vi, recvq);
		pthread_mutex_unlock(&cq->dom->lock);
	}
}

static ssize_t
vf_cq_sread(struct fid_cq *fcq, void *buf, size_t count, const void *cond, int timeout)
{
	return vf_cq_sreadfrom(fcq, buf, count, NULL, cond, timeout);
}

static int
vf_cq_signal(struct fid_cq *fcq)
{
	struct vf_cq *cq = vf_container_of(fcq, struct vf_cq, cq);

	pthread_mutex_lock(&cq->dom->lock);
	cq->signaled = true;
	pthread_mutex_unlock(&cq->dom->lock);
	return 0;
}

static const char *
vf_cq_strerror(struct fid_cq *cq, int prov_errno, const void *err_data, char *buf, size_t len)
{
	(void)cq;
	(void)err_data;
	if (buf && len)
		snprintf(buf, len, "%s", fi_strerror(prov_errno));
	return fi_strerror(prov_errno);
}

static int
vf_cq_close(struct fid *fid)
{
	struct vf_cq *cq = vf_container_of(fid, struct vf_cq, cq.fid);
	struct vf_domain *d = cq->dom;
	struct vf_list *pos, *tmp;

	pthread_mutex_lock(&d->lock);
	if (cq->neps) {
		pthread_mutex_unlock(&d->lock);
		return -FI_EBUSY;
	}
	d->refs--;
	pthread_mutex_unlock(&d->lock);
	vf_list_for_each_safe(pos, tmp, &cq->errs)
		free(vf_container_of(pos, struct vf_cq_err, link));
	free(cq->ring);
	free(cq);
	return 0;
}

static struct fi_ops vf_cq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = vf_cq_close,
	.bind = vf_no_bind,
	.control = vf_no_control,
	.ops_open = vf_no_ops_open,
	.tostr = vf_no_tostr,
	.ops_set = vf_no_ops_set,
};

static struct fi_ops_cq vf_cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = vf_cq_read,
	.readfrom = vf_cq_readfrom,
	.readerr = vf_cq_readerr,
	.sread = vf_cq_sread,
	.sreadfrom = vf_cq_sreadfrom,
	.signal = vf_cq_signal,
	.strerror = vf_cq_strerror,
};

int
vf_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **cqp, void *context)
{
	struct vf_domain *d = vf_container_of(domain, struct vf_domain, fid);
	struct vf_cq *cq;

	if (attr->format > FI_CQ_FORMAT_TAGGED)
		return -FI_ENOSYS;
	/* sread sleeps in VipCQWait: no fd or wait set to hand out */
	if (attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC)
		return -FI_ENOSYS;
	cq = calloc(1, sizeof(*cq));
	if (cq == NULL)
		return -FI_ENOMEM;
	cq->dom = d;
	cq->format = attr->format == FI_CQ_FORMAT_UNSPEC ? FI_CQ_FORMAT_CONTEXT : attr->format;
	cq->cap = attr->size > 256 ? attr->size : 256;
	cq->ring = malloc(cq->cap * sizeof(*cq->ring));
	if (cq->ring == NULL) {
		free(cq);
		return -FI_ENOMEM;
	}
	vf_list_init(&cq->errs);
	cq->cq.fid.fclass = FI_CLASS_CQ;
	cq->cq.fid.context = context;
	cq->cq.fid.ops = &vf_cq_fi_ops;
	cq->cq.ops = &vf_cq_ops;
	pthread_mutex_lock(&d->lock);
	d->refs++;
	pthread_mutex_unlock(&d->lock);
	*cqp = &cq->cq;
	return 0;
}
