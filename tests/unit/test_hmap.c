/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The hash map of lib/viad/via_hmap.c against a plain array, under a seeded mix
 * of inserts, updates and deletes over a small key space (so probe runs
 * collide, wrap around the table and are shifted back by deletions), then
 * iteration, reserve and the error cases.
 */
#include <errno.h>
#include <stdlib.h>

#include "test_common.h"
#include "via_hmap.h"

#define KEYS 4096u
#define OPS  400000u

static uint64_t ref[KEYS + 1];  /* value + 1; 0 = absent */

static void
check_against_ref(const struct via_hmap *m)
{
	unsigned present = 0, seen = 0, wrong = 0;
	uint32_t cursor = 0;
	uint64_t key, val;
	unsigned k;

	for (k = 1; k <= KEYS; k++) {
		const uint64_t *v = via_hmap_find(m, k);

		present += ref[k] != 0;
		if ((v == NULL) != (ref[k] == 0) || (v != NULL && *v + 1 != ref[k]))
			wrong++;
	}
	CHECK_EQ(wrong, 0);
	CHECK_EQ(m->count, present);
	while ((key = via_hmap_next(m, &cursor, &val)) != 0) {
		seen++;
		CHECK(key <= KEYS && ref[key] == val + 1);
	}
	CHECK_EQ(seen, present);
}

int
main(void)
{
	struct via_hmap m = VIA_HMAP_INITIALIZER;
	unsigned i, bad = 0;
	uint64_t *v;

	srand(7);
	CHECK(via_hmap_find(&m, 1) == NULL);
	CHECK_EQ(via_hmap_del(&m, 1), -ENOENT);
	CHECK(via_hmap_get(&m, 0) == NULL);
	for (i = 0; i < OPS; i++) {
		uint64_t k = 1 + (unsigned)rand() % KEYS;

		if (rand() % 3 == 0) {
			int rc = via_hmap_del(&m, k);

			bad += rc != (ref[k] != 0 ? 0 : -ENOENT);
			ref[k] = 0;
		} else {
			v = via_hmap_get(&m, k);
			if (v == NULL || *v + 1 != (ref[k] != 0 ? ref[k] : 1)) {
				bad++;
				continue;
			}
			*v = i;
			ref[k] = (uint64_t)i + 1;
		}
	}
	CHECK_EQ(bad, 0);
	check_against_ref(&m);

	/* reserve keeps every key and makes the next puts allocation-free */
	CHECK_EQ(via_hmap_reserve(&m, 4 * KEYS), 0);
	check_against_ref(&m);
	CHECK_EQ(via_hmap_reserve(&m, (1ull << 30) + 1), -E2BIG);

	/* empty it through deletion: nothing left behind */
	for (i = 1; i <= KEYS; i++) {
		if (ref[i] != 0)
			CHECK_EQ(via_hmap_del(&m, i), 0);
		ref[i] = 0;
	}
	check_against_ref(&m);
	via_hmap_fini(&m);
	CHECK(via_hmap_find(&m, 5) == NULL);
	return test_summary("hmap");
}
