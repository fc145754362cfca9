/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Handles. VIPL handles are void *, but a raw object pointer cannot tell a
 * destroyed VI from a live one (VIA §9.3.2: using a destroyed handle must
 * fail). A handle is therefore a type and an id of one process-wide id
 * table; a stale id never resolves and a CQ handle passed as a VI fails.
 */
#include <errno.h>
#include <pthread.h>

#include "via_idtab.h"
#include "vipl_priv.h"

#define HANDLE_TYPE_SHIFT 32
#define MAX_HANDLES (1u << 22)

static struct via_idtab handles;
static pthread_mutex_t handles_lock = PTHREAD_MUTEX_INITIALIZER;
static bool handles_ready;

int
vipl_handle_new(struct vipl_obj *obj, enum vipl_obj_type type)
{
	int rc = 0;

	pthread_mutex_lock(&handles_lock);
	if (!handles_ready) {
		rc = via_idtab_init(&handles, MAX_HANDLES);
		/* published under the lock; readers only reach the table
		 * through a handle returned after this */
		__atomic_store_n(&handles_ready, rc == 0, __ATOMIC_RELEASE);
	}
	obj->type = type;
	if (rc == 0)
		rc = via_idtab_alloc(&handles, obj, &obj->id);
	pthread_mutex_unlock(&handles_lock);
	return rc;
}

void
vipl_handle_free(struct vipl_obj *obj)
{
	pthread_mutex_lock(&handles_lock);
	via_idtab_free(&handles, obj->id);
	pthread_mutex_unlock(&handles_lock);
}

void *
vipl_handle_get(const void *handle, enum vipl_obj_type type)
{
	uintptr_t h = (uintptr_t)handle;
	struct vipl_obj *obj;

	if (h == 0 || (h >> HANDLE_TYPE_SHIFT) != type ||
	    !__atomic_load_n(&handles_ready, __ATOMIC_ACQUIRE))
		return NULL;
	obj = via_idtab_lookup(&handles, (uint32_t)h);
	return obj != NULL && obj->type == type ? obj : NULL;
}

void *
vipl_handle_make(enum vipl_obj_type type, uint32_t id)
{
	return (void *)(((uintptr_t)type << HANDLE_TYPE_SHIFT) | id);
}

void *
vipl_handle_of(const struct vipl_obj *obj)
{
	return vipl_handle_make(obj->type, obj->id);
}
