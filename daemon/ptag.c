/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Protection tags (VIA §3.2.2, §9.5.1-9.5.2). A tag belongs to the process
 * that created it: another process's tag id never resolves, so it can
 * neither be used nor destroyed outside its owner.
 */
#include <errno.h>
#include <stdlib.h>

#include "viad.h"

int
via_ptag_create(struct viad *d, struct via_session *s, uint32_t *id)
{
	struct via_ptag *p = calloc(1, sizeof(*p));
	int rc;

	if (p == NULL)
		return -ENOMEM;
	rc = via_user_charge(d, s, VIA_USER_PTAGS, 1);
	if (rc == 0 && (rc = via_idtab_alloc(&d->ptags, p, &p->id)) != 0)
		via_user_uncharge(d, s, VIA_USER_PTAGS, 1);
	if (rc != 0) {
		free(p);
		return rc;
	}
	p->owner = s;
	TAILQ_INSERT_TAIL(&s->ptags, p, link);
	d->counters.ptags_created++;
	*id = p->id;
	return 0;
}

struct via_ptag *
via_ptag_get(struct viad *d, struct via_session *s, uint32_t id)
{
	struct via_ptag *p = via_idtab_lookup(&d->ptags, id);

	return p != NULL && p->owner == s ? p : NULL;
}

int
via_ptag_destroy(struct viad *d, struct via_session *s, uint32_t id)
{
	struct via_ptag *p = via_ptag_get(d, s, id);

	if (p == NULL)
		return -ENOENT;
	if (p->refs != 0)
		return -EBUSY;
	TAILQ_REMOVE(&s->ptags, p, link);
	via_idtab_free(&d->ptags, id);
	via_user_uncharge(d, s, VIA_USER_PTAGS, 1);
	free(p);
	return 0;
}
