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
#include <vipl_provider.h>

#include "vipl_priv.h"

/*
 * A handle: tag (8 bits) | type (4 bits) | serial (20 bits) | id (32 bits).
 * The tag is libvipl.so's, which dispatches on it (vipl_provider.h; 0 when
 * this library is linked directly). The id's own generation is short; the
 * serial, taken from a process-wide counter when the object is created,
 * makes a stale handle fail until the same slot has been reused 2^20 times.
 */
#define HANDLE_TAG_SHIFT VIPL_HANDLE_TAG_SHIFT
#define HANDLE_TYPE_SHIFT 52
#define HANDLE_TYPE_MASK 0xfu
#define HANDLE_SERIAL_SHIFT 32
#define HANDLE_SERIAL_MASK 0xfffffu
#define MAX_HANDLES (1u << 22)

_Static_assert(VIPL_OBJ_CONN <= HANDLE_TYPE_MASK, "handle types fit their bits");

static struct via_idtab handles;
static pthread_mutex_t handles_lock = PTHREAD_MUTEX_INITIALIZER;
static bool handles_ready;
static uint32_t next_serial;
static uint8_t handle_tag;

void
vipl_handle_set_tag(uint8_t tag)
{
	handle_tag = tag;
}

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
	obj->serial = ++next_serial & HANDLE_SERIAL_MASK;
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

	if (h == 0 || (h >> HANDLE_TAG_SHIFT) != handle_tag ||
	    ((h >> HANDLE_TYPE_SHIFT) & HANDLE_TYPE_MASK) != type ||
	    !__atomic_load_n(&handles_ready, __ATOMIC_ACQUIRE))
		return NULL;
	obj = via_idtab_lookup(&handles, (uint32_t)h);
	if (obj == NULL || obj->type != type ||
	    obj->serial != ((h >> HANDLE_SERIAL_SHIFT) & HANDLE_SERIAL_MASK))
		return NULL;
	return obj;
}

void *
vipl_handle_of(const struct vipl_obj *obj)
{
	return (void *)(((uintptr_t)handle_tag << HANDLE_TAG_SHIFT) |
			((uintptr_t)obj->type << HANDLE_TYPE_SHIFT) |
			((uintptr_t)obj->serial << HANDLE_SERIAL_SHIFT) | obj->id);
}

void *
vipl_handle_by_id(uint32_t id, enum vipl_obj_type type)
{
	struct vipl_obj *obj;
	void *h = NULL;

	if (!__atomic_load_n(&handles_ready, __ATOMIC_ACQUIRE))
		return NULL;
	/* the library asks this for ids it did not get from the application
	 * (CQ entries, error reports), whose object another thread may be
	 * destroying: the lock keeps the object until its fields are read */
	pthread_mutex_lock(&handles_lock);
	obj = via_idtab_lookup(&handles, id);
	if (obj != NULL && obj->type == type)
		h = vipl_handle_of(obj);
	pthread_mutex_unlock(&handles_lock);
	return h;
}
