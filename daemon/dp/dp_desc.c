/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Descriptors (VIA §10): a posted descriptor is copied out of the client's
 * registered memory and validated as VIA §10.2-10.4 say (format,
 * protection, length) before anything acts on it; message bytes move
 * between frames and its data segments here too, each segment's region
 * checked (VIA §3.2.2).
 */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include <vipl.h>

#include "dp.h"

#define DESC_CS_SIZE    sizeof(VIP_CONTROL_SEGMENT)
#define DESC_SEG_SIZE   sizeof(VIP_DATA_SEGMENT)
#define CONTROL_OFF     offsetof(VIP_CONTROL_SEGMENT, Control)
#define CONTROL_KNOWN   (VIP_CONTROL_OP_MASK | VIP_CONTROL_IMMEDIATE | VIP_CONTROL_QFENCE)

/* The completion's op bits of each VIP_CONTROL_OP_* (§10.2). */
static const uint32_t op_status[] = {
	[VIP_CONTROL_OP_SENDRECV] = VIP_STATUS_OP_SEND,
	[VIP_CONTROL_OP_RDMAWRITE] = VIP_STATUS_OP_RDMA_WRITE,
	[VIP_CONTROL_OP_RDMAREAD] = VIP_STATUS_OP_RDMA_READ,
	[VIP_CONTROL_OP_MASK] = VIP_STATUS_OP_SEND,
};

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
const struct via_mr *
via_desc_region(struct viad *d, struct via_vi *vi, enum via_wq_kind q, const struct via_wqe *w,
	    uint32_t code)
{
	const struct via_mr *mr;
	int err;

	/* a VI of line entries too: its completion goes into the ring entry,
	 * but the library copies it into this descriptor at the dequeue, so a
	 * region deregistered meanwhile is still COMP_PROT (§9.9.1, §2.5) and
	 * the descriptor's address is the one the callback names. One lookup,
	 * at the completion only: the fetch of an entry carrying its
	 * descriptor looks up no more than this head (via_desc_fetch) */
	mr = via_mr_check(d, vi->owner, w->desc_handle, w->desc_va, DESC_CS_SIZE, vi->attr.ptag,
			  VIA_MR_LOCAL_READ | VIA_MR_LOCAL_WRITE, &err);
	if (mr == NULL || w->reserved != 0) {
		desc_invalid(vi, q, w, code);
		return NULL;
	}
	return mr;
}

/* The entry taken last from queue @p q of @p vi, if it carries its
 * descriptor (a line entry with VIA_WQE_DESC; via_desc_take copied it). */
static const struct via_wqe_line *
taken_desc(const struct via_vi *vi, enum via_wq_kind q)
{
	return via_vi_lines(vi) && (vi->taken[q].status & VIA_WQE_DESC) ? &vi->taken[q] : NULL;
}

/* The control segment a line entry carries (Next and Status are the
 * library's and viad's, not read). */
static void
entry_cs(const struct via_wqe_line *e, VIP_CONTROL_SEGMENT *cs)
{
	memset(cs, 0, sizeof(*cs));
	cs->SegCount = e->seg_count;
	cs->Control = e->control;
	cs->ImmediateData = e->imm;
	cs->Length = e->length;
}

const void *
via_desc_take(struct via_vi *vi, enum via_wq_kind q, struct via_wqe *w)
{
	struct via_ring *r = &vi->wq[q];
	const void *slot = via_ring_peek(r, 0);

	/* copied out before anything reads it: the client may rewrite the slot */
	if (via_vi_lines(vi)) {
		memcpy(&vi->taken[q], slot, sizeof(vi->taken[q]));
		w->desc_va = vi->taken[q].desc_va;
		w->desc_handle = vi->taken[q].desc_handle;
		w->reserved = 0;
	} else {
		memcpy(w, slot, sizeof(*w));
	}
	via_ring_consume(r, 1);
	return slot;
}

void
via_desc_line_done(struct via_vi *vi, enum via_wq_kind q, uint32_t len, uint32_t imm,
		   uint32_t status)
{
	struct via_ring *r = &vi->wq[q];
	struct via_wqe_line *e;
	uint32_t i = vi->completed[q];

	/* completions go in ring order, one per entry taken: one more than
	 * taken is viad's bug, and must not touch an entry still posted */
	if (i == r->local) {
		VLOG_ERR("VI %u: a %s completion with no entry taken: not written", vi->id,
			 q == VIA_WQ_SEND ? "send" : "receive");
		return;
	}
	vi->completed[q] = i + 1;
	e = (struct via_wqe_line *)(r->slots + (size_t)(i & r->mask) * r->slot_size);
	__atomic_store_n(&e->length, len, __ATOMIC_RELAXED);
	__atomic_store_n(&e->imm, imm, __ATOMIC_RELAXED);
	/* last: the library's poll acquires it (via_abi.h, struct via_wqe_line) */
	__atomic_store_n(&e->status, status | VIP_STATUS_DONE, __ATOMIC_RELEASE);
}

const struct via_mr *
via_desc_next(struct viad *d, struct via_vi *vi, enum via_wq_kind q, struct via_dp_msg *msg,
	      VIP_CONTROL_SEGMENT *cs)
{
	const uint8_t *slot = via_desc_take(vi, q, &msg->wqe);
	const struct via_mr *mr = via_desc_fetch(d, vi, q, msg, cs);

	msg->fs.data = via_vi_lines(vi) && (vi->taken[q].status & VIA_WQE_INLINE)
			       ? slot + VIA_WQE_LINE_SIZE : NULL;
	if (mr != NULL && q == VIA_WQ_SEND)
		msg->status = op_status[cs->Control & VIP_CONTROL_OP_MASK];
	return mr;
}

/*
 * Fetch the descriptor of msg->wqe (VIA §10.2-10.4) and its data segments
 * into msg->segs: from the line entry taken last when it carries them, else
 * from registered memory.
 */
const struct via_mr *
via_desc_fetch(struct viad *d, struct via_vi *vi, enum via_wq_kind q, struct via_dp_msg *msg,
	       VIP_CONTROL_SEGMENT *cs)
{
	const struct via_wqe_line *e = taken_desc(vi, q);
	const struct via_wqe *w = &msg->wqe;
	struct via_session *s = vi->owner;
	VIP_DATA_SEGMENT ds[16];
	const struct via_mr *mr;
	uint32_t op, seg_access;
	uint16_t i, n, first;
	uint64_t total = 0, desc_len, segs_epoch = via_mr_epoch(d);
	int err;

	msg->err = 0;
	msg->total = 0;
	msg->nb_segs = 0;
	msg->desc_mr.epoch = 0;
	msg->segs_epoch = 0;
	mr = via_desc_region(d, vi, q, w, VIP_ERROR_POST_DESC);
	if (mr == NULL)
		return NULL;
	msg->desc_mr = (struct via_desc_mr){ mr, via_mr_epoch_of(d, w->desc_handle) };
	if (e != NULL) {
		entry_cs(e, cs);
	} else if (via_mem_read(s, mr, w->desc_va, cs, sizeof(*cs)) != 0) {
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
		msg->err = -EBADMSG;
		return mr;
	}
	/* a line entry holds two segments; its data, a Send's or an RDMA
	 * Write's, no more than the entry has room for */
	if (e != NULL &&
	    (n > VIA_WQE_LINE_SEGS || (e->status & ~VIA_WQE_FLAGS) != 0 ||
	     ((e->status & VIA_WQE_INLINE) &&
	      (q != VIA_WQ_SEND || op == VIP_CONTROL_OP_RDMAREAD ||
	       e->length > vi->entry_size - VIA_WQE_LINE_SIZE)))) {
		msg->err = -EBADMSG;
		return mr;
	}
	/* VIA §10.2: RDMA only on the send queue; §2.5.1: no RDMA Read on an
	 * Unreliable VI; §10.3: an RDMA descriptor starts with its address
	 * segment, counted in SegCount */
	if (op != VIP_CONTROL_OP_SENDRECV &&
	    (q == VIA_WQ_RECV || n == 0 ||
	     (op == VIP_CONTROL_OP_RDMAREAD &&
	      (!via_rel_level(vi) || !s->nic->info.rdma_read_support)))) {
		msg->err = -EBADMSG;
		return mr;
	}
	/* the whole descriptor in its region, when viad reads it: the region
	 * its head was found in (read and written back) mostly holds it */
	desc_len = DESC_CS_SIZE + (uint64_t)n * DESC_SEG_SIZE;
	if (e == NULL && !via_mr_holds(mr, w->desc_handle, w->desc_va, desc_len) &&
	    via_mr_check(d, s, w->desc_handle, w->desc_va, desc_len, vi->attr.ptag,
			 VIA_MR_LOCAL_READ, &err) == NULL) {
		msg->err = -EACCES;
		return mr;
	}
	/* a send or RDMA Write gathers, a receive or RDMA Read scatters */
	seg_access = q == VIA_WQ_RECV || op == VIP_CONTROL_OP_RDMAREAD ? VIA_MR_LOCAL_WRITE
								       : VIA_MR_LOCAL_READ;
	for (i = 0; i < n; i++) {
		const VIP_DATA_SEGMENT *sg;
		struct via_dp_seg *seg;

		if (i % 16 == 0 && e != NULL) {
			_Static_assert(sizeof(e->seg) <= sizeof(ds), "a line entry's segments fit");
			memcpy(ds, e->seg, sizeof(e->seg));
		} else if (i % 16 == 0 &&
			   via_mem_read(s, mr, w->desc_va + DESC_CS_SIZE + (uint64_t)i * DESC_SEG_SIZE,
					ds, (size_t)RTE_MIN(16u, (unsigned)(n - i)) * DESC_SEG_SIZE) != 0) {
			msg->err = -EACCES;
			return mr;
		}
		sg = &ds[i % 16];
		if (i < first) {
			VIP_ADDRESS_SEGMENT raddr;

			memcpy(&raddr, sg, sizeof(raddr));
			if (raddr.Reserved != 0) {
				msg->err = -EBADMSG;
				return mr;
			}
			msg->fs.rdma_va = raddr.Data.AddressBits;
			msg->fs.rdma_handle = raddr.Handle;
			continue;
		}
		seg = &msg->segs[i - first];
		seg->va = sg->Data.AddressBits;
		seg->len = sg->Length;
		seg->handle = sg->Handle;
		seg->mr = NULL;
		total += sg->Length;
		/* a zero-length segment names no memory */
		if (sg->Length > 0) {
			seg->mr = via_mr_check(d, s, sg->Handle, sg->Data.AddressBits, sg->Length,
					       vi->attr.ptag, seg_access, &err);
			if (seg->mr == NULL) {
				msg->err = -EACCES;
				return mr;
			}
			segs_epoch = RTE_MIN(segs_epoch, via_mr_epoch_of(d, sg->Handle));
		}
	}
	msg->nb_segs = (uint16_t)(n - first);
	msg->segs_epoch = segs_epoch;
	/* more than a message may hold (a Length is 32 bits, §10.2) */
	if (total > UINT32_MAX)
		msg->err = -EMSGSIZE;
	msg->total = (uint32_t)total;
	return mr;
}

/* The pieces of one via_segs_copy() bound for (or read from) copied memory
 * that follow each other in the client's address space: moved by one
 * via_mem_copyv(), so a burst of frames into one buffer is one system call
 * (procmem.c), not one per frame. Pieces in place are copied at once. */
#define COPY_RUN_IOVS 64

struct copy_run {
	const struct via_session *s;
	bool write;                       /**< into the client's memory */
	uint64_t va;                      /**< the client address of the run's first byte */
	size_t len;
	unsigned cnt;
	struct iovec iov[COPY_RUN_IOVS];  /**< viad's side of each piece */
};

static int
run_flush(struct copy_run *run)
{
	const unsigned cnt = run->cnt;

	run->cnt = 0;
	return via_mem_copyv(run->s, run->va, run->iov, cnt, run->len, run->write);
}

/* Piece @p piece of viad's side, at client address @p va of a copied region. */
static int
run_add(struct copy_run *run, uint64_t va, struct iovec piece)
{
	if (run->cnt != 0 && (run->va + run->len != va || run->cnt == COPY_RUN_IOVS)) {
		int rc = run_flush(run);

		if (rc != 0)
			return rc;
	}
	if (run->cnt == 0) {
		run->va = va;
		run->len = 0;
	}
	run->iov[run->cnt++] = piece;
	run->len += piece.iov_len;
	return 0;
}

/*
 * Copy between buffers and the segments of @p msg (dp.h). With
 * VIA_COPY_RECHECK each region is looked up again by handle, once per
 * call, if the table changed since msg->segs_epoch: a receive descriptor
 * outlives the iteration that fetched it, and the client may deregister a
 * region meanwhile (an access to it is then a protection error, VIA §3.2.1).
 */
int
via_segs_copy(struct via_vi *vi, const struct via_dp_msg *msg, const struct iovec *iov,
	      unsigned n, unsigned how)
{
	struct via_session *s = vi->owner;
	struct via_dp_seg *segs = msg->segs;
	const bool to_segs = how & VIA_COPY_TO_SEGS;
	struct copy_run run;         /* its iovecs filled as it grows: not zeroed */
	uint64_t off = msg->off;     /* into segment i */
	uint16_t i = 0, checked = UINT16_MAX;
	unsigned k;

	if (msg->segs_epoch == via_mr_epoch(s->nic->d))
		how &= ~VIA_COPY_RECHECK;
	run.s = s;
	run.write = to_segs;
	run.cnt = 0;

	for (k = 0; k < n; k++) {
		uint8_t *buf = iov[k].iov_base;
		size_t len = iov[k].iov_len;

		while (len > 0 && i < msg->nb_segs) {
			uint32_t take;
			int rc;

			if (off >= segs[i].len) {
				off -= segs[i].len;
				i++;
				continue;
			}
			take = (uint32_t)RTE_MIN((uint64_t)len, segs[i].len - off);
			if (buf != NULL && (how & VIA_COPY_RECHECK) && checked != i) {
				segs[i].mr = via_mr_check(s->nic->d, s, segs[i].handle, segs[i].va,
							  segs[i].len, vi->attr.ptag,
							  to_segs ? VIA_MR_LOCAL_WRITE
								  : VIA_MR_LOCAL_READ, &rc);
				if (segs[i].mr == NULL)
					return -EACCES;
				checked = i;
			}
			if (buf != NULL) {
				const uint64_t va = segs[i].va + off;

				/* in place (provider memory, the share file): at once */
				if (segs[i].mr->pmem != NULL)
					rc = to_segs ? via_mem_write(s, segs[i].mr, va, buf, take)
						     : via_mem_read(s, segs[i].mr, va, buf, take);
				else
					rc = run_add(&run, va, (struct iovec){ buf, take });
				if (rc != 0)
					return -EACCES;
				buf += take;
			}
			len -= take;
			off += take;
		}
	}
	return run.cnt == 0 || run_flush(&run) == 0 ? 0 : -EACCES;
}

/* The QFENCE bit of the next send descriptor (VIA §6.3.1.2), without
 * taking it: the ring has one (via_ring_avail() said so). */
bool
via_desc_fenced(struct viad *d, struct via_vi *vi)
{
	const void *slot = via_ring_peek(&vi->wq[VIA_WQ_SEND], 0);
	const struct via_mr *mr;
	VIP_CONTROL_SEGMENT cs;
	struct via_wqe w;
	int err;

	if (via_vi_lines(vi)) {
		struct via_wqe_line e;

		memcpy(&e, slot, sizeof(e));
		if (e.status & VIA_WQE_DESC)
			return e.control & VIP_CONTROL_QFENCE;
		w.desc_va = e.desc_va;
		w.desc_handle = e.desc_handle;
	} else {
		memcpy(&w, slot, sizeof(w));
	}
	mr = via_mr_check(d, vi->owner, w.desc_handle, w.desc_va, DESC_CS_SIZE, vi->attr.ptag,
			  VIA_MR_LOCAL_READ, &err);
	return mr != NULL && via_mem_read(vi->owner, mr, w.desc_va, &cs, sizeof(cs)) == 0 &&
	       (cs.Control & VIP_CONTROL_QFENCE);
}

/*
 * The completed-operation bits (§10.2 bits 18:16) of a descriptor flushed
 * from queue @p q before viad took it: a send-queue descriptor says in its
 * Control field whether it is a Send, an RDMA Write or an RDMA Read (read
 * now, as a fetch would). Its region @p mr may be NULL (POST_DESC): nothing
 * is written then.
 */
uint32_t
via_desc_flushed_op(const struct via_vi *vi, enum via_wq_kind q, const struct via_wqe *w,
	   const struct via_mr *mr)
{
	const struct via_wqe_line *e = taken_desc(vi, q);
	VIP_UINT16 control;

	if (q == VIA_WQ_RECV)
		return VIP_STATUS_OP_RECEIVE;
	if (e != NULL)
		control = e->control;
	else if (mr == NULL || via_mem_read(vi->owner, mr, w->desc_va + CONTROL_OFF, &control,
					    sizeof(control)) != 0)
		return VIP_STATUS_OP_SEND;
	return op_status[control & VIP_CONTROL_OP_MASK];
}
