/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file
 * The little JSON viactl needs: parse DPDK telemetry's replies into a tree,
 * look members up, print a tree back (--json). Numbers keep the text they
 * were written with, so that a 64-bit counter is never rounded through a
 * double.
 */
#ifndef VIACTL_JSON_H
#define VIACTL_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum vj_type { VJ_NULL, VJ_BOOL, VJ_NUMBER, VJ_STRING, VJ_ARRAY, VJ_OBJECT };

/** A value; an array's or an object's members are its children, in order. */
struct vj {
	enum vj_type type;
	char *key;          /**< the member's name in an object, else NULL */
	char *text;         /**< VJ_STRING: the string; VJ_NUMBER: its digits */
	bool truth;         /**< VJ_BOOL */
	struct vj *child;   /**< the first member */
	struct vj *next;    /**< the next member of the parent */
};

/**
 * Parse @p text (one value, blanks around it allowed).
 * @return the tree (vj_free() it), or NULL with errno EINVAL (malformed,
 *         nested deeper than 64) or ENOMEM
 */
struct vj *vj_parse(const char *text);

/** Free a tree; NULL is a no-op. */
void vj_free(struct vj *v);

/** The member @p key of object @p obj, or NULL (absent, or @p obj not an object). */
const struct vj *vj_get(const struct vj *obj, const char *key);

/** A number as an unsigned 64-bit integer; 0 for anything else (or a negative number). */
uint64_t vj_u64(const struct vj *v);

/** A number as a signed 64-bit integer; 0 for anything else. */
int64_t vj_i64(const struct vj *v);

/** A string's or a number's text, "true"/"false", "" for anything else or NULL. */
const char *vj_text(const struct vj *v);

/** How many members an array or object has. */
unsigned vj_count(const struct vj *v);

/**
 * Detach member @p key from object @p obj and return it (the caller frees
 * it); NULL if absent.
 */
struct vj *vj_take(struct vj *obj, const char *key);

/** Append @p member (its key already set for an object) to @p parent. */
void vj_append(struct vj *parent, struct vj *member);

/** A new empty array or object; NULL with errno ENOMEM. */
struct vj *vj_new(enum vj_type type);

/**
 * Print @p v as JSON: indented by two blanks per level with @p pretty,
 * else on one line. No newline after it.
 */
void vj_print(FILE *f, const struct vj *v, bool pretty);

#endif /* VIACTL_JSON_H */
