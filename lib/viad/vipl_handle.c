/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Handles. VIPL handles are void *, but a raw object pointer cannot tell a
 * destroyed VI from a live one (VIA §9.3.2: using a destroyed handle must
 * fail). A handle is therefore a type, a slot of one process-wide handle
 * table and the object's life (vipl_dpdk_dp.h has the bits): a stale one
 * never matches its object's handle word, and a CQ handle passed as a VI
 * fails.
 *
 * The data path looks handles up without a lock (vipl_dpdk_dp_get), and a
 * thread may destroy a VI while another polls it. So the memory a lookup
 * reads must stay readable: objects are never freed, and a slot keeps its
 * object for good. A destroyed object waits on its type's free list for the
 * next object of the same type and shape; the shape (a VI's number of
 * descriptors a queue holds) keeps the arrays a racing poll reads the same
 * size. This rather than a deferred free (RCU, epochs): a deferred free
 * needs every polling thread to announce itself, a store and a fence per
 * poll or registered threads, where a kept object costs nothing on the data
 * path. What it costs is memory: as many objects of each kind as were ever
 * live at once, which the program had allocated then anyway.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <vipl_provider.h>

#include "vipl_priv.h"

#define CHUNK_SLOTS (1u << VIPL_DPDK_HANDLE_CHUNK_SHIFT)
/* the reuse count's bits in an id, above the slot */
#define ID_GEN_MASK ((1u << (32 - VIPL_DPDK_HANDLE_SLOT_BITS)) - 1)

_Static_assert(VIPL_DPDK_OBJ_CONN <= VIPL_DPDK_HANDLE_TYPE_MASK, "handle types fit their bits");
_Static_assert(VIPL_DPDK_HANDLE_TYPE_SHIFT + 4 <= VIPL_HANDLE_TAG_SHIFT,
	       "the type bits are below the provider's tag");

/* everything below, and the table's chunks and slots (stored once each) */
static pthread_mutex_t handles_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t nb_slots;               /* slots given an object: 1 .. nb_slots (0 is none) */
static uint32_t next_serial;
static struct vipl_dpdk_obj *free_objs[VIPL_DPDK_OBJ_CONN + 1];
static uint8_t handle_tag;

void
vipl_handle_set_tag(uint8_t tag)
{
	handle_tag = tag;
}

/* Give the new @p obj the next slot, for good. Under handles_lock. */
static int
slot_new(struct vipl_dpdk_obj *obj, uint32_t *slot)
{
	uint32_t s = nb_slots + 1;
	struct vipl_dpdk_obj ***chunkp = &vipl_dpdk_dp.handles[s >> VIPL_DPDK_HANDLE_CHUNK_SHIFT];

	if (s > VIPL_DPDK_HANDLE_SLOT_MASK)
		return -ENOSPC;
	if (*chunkp == NULL) {
		struct vipl_dpdk_obj **chunk = calloc(CHUNK_SLOTS, sizeof(*chunk));

		if (chunk == NULL)
			return -ENOMEM;
		/* zeroed before a lookup can reach it */
		__atomic_store_n(chunkp, chunk, __ATOMIC_RELEASE);
	}
	/* the object as set up so far (type, shape, the arrays a reuse
	 * keeps) before a lookup can reach it; it has no handle yet */
	__atomic_store_n(&(*chunkp)[s & (CHUNK_SLOTS - 1)], obj, __ATOMIC_RELEASE);
	nb_slots = s;
	*slot = s;
	return 0;
}

void *
vipl_obj_get(enum vipl_dpdk_obj_type type, size_t size, uint32_t shape, bool *reused)
{
	struct vipl_dpdk_obj **pp, *obj = NULL;
	uint32_t slot, gen = 0;

	pthread_mutex_lock(&handles_lock);
	for (pp = &free_objs[type]; *pp != NULL; pp = &(*pp)->next_free) {
		if ((*pp)->shape == shape) {
			obj = *pp;
			*pp = obj->next_free;
			break;
		}
	}
	*reused = obj != NULL;
	if (obj != NULL) {
		slot = obj->id & VIPL_DPDK_HANDLE_SLOT_MASK;
		gen = ((obj->id >> VIPL_DPDK_HANDLE_SLOT_BITS) + 1) & ID_GEN_MASK;
	} else {
		obj = calloc(1, size);
		if (obj == NULL || slot_new(obj, &slot) != 0) {
			pthread_mutex_unlock(&handles_lock);
			free(obj);
			return NULL;
		}
		obj->type = type;
		obj->shape = shape;
	}
	obj->id = gen << VIPL_DPDK_HANDLE_SLOT_BITS | slot;
	obj->serial = ++next_serial & VIPL_DPDK_HANDLE_SERIAL_MASK;
	obj->next_free = NULL;
	pthread_mutex_unlock(&handles_lock);
	return obj;
}

void *
vipl_obj_get_zeroed(enum vipl_dpdk_obj_type type, size_t size)
{
	bool reused;
	struct vipl_dpdk_obj *obj = vipl_obj_get(type, size, 0, &reused);

	if (obj != NULL && reused)
		memset(obj + 1, 0, size - sizeof(*obj));
	return obj;
}

void *
vipl_handle_of(const struct vipl_dpdk_obj *obj)
{
	return (void *)(((uintptr_t)handle_tag << VIPL_HANDLE_TAG_SHIFT) |
			((uintptr_t)obj->type << VIPL_DPDK_HANDLE_TYPE_SHIFT) |
			((uintptr_t)obj->serial << VIPL_DPDK_HANDLE_SERIAL_SHIFT) | obj->id);
}

void *
vipl_handle_publish(struct vipl_dpdk_obj *obj)
{
	void *h = vipl_handle_of(obj);

	/* after everything the owner set up: a lookup that finds the handle
	 * (load-acquire) sees it */
	__atomic_store_n(&obj->handle, (uintptr_t)h, __ATOMIC_RELEASE);
	return h;
}

void
vipl_handle_retire(struct vipl_dpdk_obj *obj)
{
	/* release: what the owner did with the object while it was live is
	 * done before a lookup sees the handle go (and the object reused) */
	__atomic_store_n(&obj->handle, 0, __ATOMIC_RELEASE);
}

void
vipl_obj_put(struct vipl_dpdk_obj *obj)
{
	vipl_handle_retire(obj);
	pthread_mutex_lock(&handles_lock);
	obj->next_free = free_objs[obj->type];
	free_objs[obj->type] = obj;
	pthread_mutex_unlock(&handles_lock);
}
