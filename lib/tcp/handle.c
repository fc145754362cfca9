/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Handles. A handle names the slot of its NIC, the open generation of that
 * slot and the object's id in the NIC's object table:
 *
 *   63     56 55  52 51  48 47         32 31                    0
 *   |  tag   | type | slot | generation  |  id in nic->objs      |
 *
 * The tag is the one libvipl.so gave the provider (vipl_provider.h); it
 * dispatches on it. NIC structures are never freed (a closed slot is
 * reused), so a call can lock the NIC of any handle and then look its
 * object up under the lock: a destroyed object, a closed NIC or a made-up
 * value never resolves (VIA §9.3.2: "Use of the destroyed handle in any
 * subsequent operation will fail"), and an object cannot be destroyed by
 * another thread while a call uses it.
 */
#include <errno.h>
#include <time.h>

#include <vipl_provider.h>

#include "tcp_prov.h"

#define TYPE_SHIFT 52
#define SLOT_SHIFT 48
#define GEN_SHIFT 32

_Static_assert(TCP_OBJ_LINGER <= 0xf, "object types fit 4 bits");
_Static_assert(TCP_MAX_NICS <= 16, "NIC slots fit 4 bits");
_Static_assert(VIPL_HANDLE_TAG_SHIFT == 56, "the tag is bits 63:56");

uint8_t tcp_handle_tag;

void *
tcp_handle_of(const struct tcp_nic *nic, const struct tcp_obj *obj)
{
	uintptr_t h = ((uintptr_t)tcp_handle_tag << VIPL_HANDLE_TAG_SHIFT) |
		      ((uintptr_t)nic->slot << SLOT_SHIFT) | ((uintptr_t)nic->gen << GEN_SHIFT);

	if (obj == NULL)
		return (void *)(h | ((uintptr_t)TCP_OBJ_NIC << TYPE_SHIFT));
	return (void *)(h | ((uintptr_t)obj->type << TYPE_SHIFT) | obj->id);
}

void *
tcp_handle_by_id(struct tcp_nic *nic, uint32_t id, uint32_t type)
{
	struct tcp_obj *obj = via_idtab_lookup(&nic->objs, id);

	return obj != NULL && obj->type == type ? tcp_handle_of(nic, obj) : NULL;
}

/* The object @p h names in @p nic (locked, open, of h's generation). */
static void *
obj_lookup(struct tcp_nic *nic, uintptr_t h, uint32_t type)
{
	struct tcp_obj *obj;

	if (((h >> GEN_SHIFT) & 0xffff) != nic->gen)
		return NULL;
	if (type == TCP_OBJ_NIC)
		return (uint32_t)h == 0 ? nic : NULL;
	obj = via_idtab_lookup(&nic->objs, (uint32_t)h);
	return obj != NULL && obj->type == type ? obj : NULL;
}

/* Whether @p h carries this provider's tag and @p type. */
static bool
handle_of_type(uintptr_t h, uint32_t type)
{
	return (h >> VIPL_HANDLE_TAG_SHIFT) == tcp_handle_tag &&
	       ((h >> TYPE_SHIFT) & 0xf) == type;
}

struct tcp_nic *
tcp_nic_enter(const void *handle, uint32_t type, void **obj)
{
	uintptr_t h = (uintptr_t)handle;
	struct tcp_nic *nic;
	void *o;

	if (h == 0 || !handle_of_type(h, type))
		return NULL;
	nic = tcp_nic_slot((h >> SLOT_SHIFT) & 0xf);
	if (nic == NULL)
		return NULL;
	pthread_mutex_lock(&nic->lock);
	o = nic->open ? obj_lookup(nic, h, type) : NULL;
	if (o == NULL) {
		pthread_mutex_unlock(&nic->lock);
		return NULL;
	}
	if (obj != NULL)
		*obj = o;
	return nic;
}

void *
tcp_obj_in(struct tcp_nic *nic, const void *handle, uint32_t type)
{
	uintptr_t h = (uintptr_t)handle;

	if (h == 0 || !nic->open || !handle_of_type(h, type) ||
	    ((h >> SLOT_SHIFT) & 0xf) != nic->slot)
		return NULL;
	return obj_lookup(nic, h, type);
}

void
tcp_nic_leave(struct tcp_nic *nic)
{
	pthread_mutex_unlock(&nic->lock);
}

int
tcp_obj_add(struct tcp_nic *nic, struct tcp_obj *obj, uint32_t type)
{
	obj->type = type;
	return via_idtab_alloc(&nic->objs, obj, &obj->id);
}

void
tcp_obj_del(struct tcp_nic *nic, struct tcp_obj *obj)
{
	via_idtab_free(&nic->objs, obj->id);
}

uint64_t
tcp_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

uint64_t
tcp_deadline(VIP_ULONG timeout)
{
	return timeout >= VIP_INFINITE ? UINT64_MAX : tcp_now_ms() + timeout;
}

int
tcp_cond_wait(pthread_cond_t *cond, pthread_mutex_t *lock, uint64_t deadline)
{
	struct timespec ts;

	if (deadline == UINT64_MAX)
		return -pthread_cond_wait(cond, lock);
	/* the conditions run on CLOCK_MONOTONIC (nic.c) */
	ts.tv_sec = (time_t)(deadline / 1000);
	ts.tv_nsec = (long)(deadline % 1000) * 1000000;
	return -pthread_cond_timedwait(cond, lock, &ts);
}

pthread_cond_t *
tcp_cond_of(struct tcp_nic *nic, uint32_t id)
{
	return &nic->conds[id % TCP_NB_CONDS];
}
