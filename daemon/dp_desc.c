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

#include <vipl.h>

#include "dp.h"

#define DESC_CS_SIZE    sizeof(VIP_CONTROL_SEGMENT)
#define DESC_SEG_SIZE   sizeof(VIP_DATA_SEGMENT)
#define CONTROL_OFF     offsetof(VIP_CONTROL_SEGMENT, Control)
#define CONTROL_KNOWN   (VIP_CONTROL_OP_MASK | VIP_CONTROL_IMMEDIATE | VIP_CONTROL_QFENCE)

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
const struct via_mr *
via_desc_fetch(struct viad *d, struct via_vi *vi, enum via_wq_kind q, const struct via_wqe *w,
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
	mr = via_desc_region(d, vi, q, w, VIP_ERROR_POST_DESC);
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
int
via_segs_copy(struct viad *d, struct via_vi *vi, struct via_dp_seg *segs, uint16_t n, uint64_t off,
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

/* The QFENCE bit of the next descriptor (VIA §6.3.1.2), without taking it. */
bool
via_desc_fenced(struct viad *d, struct via_vi *vi, const struct via_wqe *w)
{
	const struct via_mr *mr;
	VIP_CONTROL_SEGMENT cs;
	int err;

	mr = via_mr_check(d, vi->owner, w->desc_handle, w->desc_va, DESC_CS_SIZE, vi->attr.ptag,
			  VIA_MR_LOCAL_READ, &err);
	return mr != NULL && via_mem_read(vi->owner, mr, w->desc_va, &cs, sizeof(cs)) == 0 &&
	       (cs.Control & VIP_CONTROL_QFENCE);
}

static const uint32_t op_status[] = {
	[VIP_CONTROL_OP_SENDRECV] = VIP_STATUS_OP_SEND,
	[VIP_CONTROL_OP_RDMAWRITE] = VIP_STATUS_OP_RDMA_WRITE,
	[VIP_CONTROL_OP_RDMAREAD] = VIP_STATUS_OP_RDMA_READ,
	[VIP_CONTROL_OP_MASK] = VIP_STATUS_OP_SEND,
};

uint32_t
via_desc_op_status(uint32_t control_op)
{
	return op_status[control_op & VIP_CONTROL_OP_MASK];
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
	VIP_UINT16 control;

	if (q == VIA_WQ_RECV)
		return VIP_STATUS_OP_RECEIVE;
	if (mr == NULL || via_mem_read(vi->owner, mr, w->desc_va + CONTROL_OFF, &control,
				       sizeof(control)) != 0)
		return VIP_STATUS_OP_SEND;
	return op_status[control & VIP_CONTROL_OP_MASK];
}
