/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A recursive-descent JSON parser (RFC 8259) and printer, for viactl. The
 * input is DPDK telemetry's, but nothing about it is trusted: a malformed
 * reply is an error, never a crash.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

#define MAX_DEPTH 64

struct parser {
	const char *p;
	unsigned depth;
};

static void
skip_blanks(struct parser *ps)
{
	while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')
		ps->p++;
}

struct vj *
vj_new(enum vj_type type)
{
	struct vj *v = calloc(1, sizeof(*v));

	if (v != NULL)
		v->type = type;
	return v;
}

void
vj_free(struct vj *v)
{
	while (v != NULL) {
		struct vj *next = v->next;

		vj_free(v->child);
		free(v->key);
		free(v->text);
		free(v);
		v = next;
	}
}

static int
hex4(const char *s, unsigned *out)
{
	unsigned i, v = 0;

	for (i = 0; i < 4; i++) {
		char c = s[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return -EINVAL;
	}
	*out = v;
	return 0;
}

/* Code point @p cp as UTF-8 at @p o. @return bytes written */
static size_t
utf8(char *o, unsigned cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | cp >> 18);
	o[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	o[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* A string at ps->p (its opening quote). @return it (malloc'ed) or NULL */
static char *
parse_string(struct parser *ps)
{
	const char *s = ps->p + 1, *end = s;
	char *out, *o;

	/* an escape never makes a string longer: its length bounds the output */
	while (*end != '"') {
		if (*end == '\0')
			return NULL;
		if (*end == '\\' && end[1] != '\0')
			end++;
		end++;
	}
	out = o = malloc((size_t)(end - s) + 1);
	if (out == NULL)
		return NULL;
	while (s < end) {
		unsigned cp, lo;

		if ((unsigned char)*s < 0x20)
			goto bad;
		if (*s != '\\') {
			*o++ = *s++;
			continue;
		}
		s++;
		switch (*s++) {
		case '"': *o++ = '"'; break;
		case '\\': *o++ = '\\'; break;
		case '/': *o++ = '/'; break;
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case 'u':
			if (end - s < 4 || hex4(s, &cp) != 0)
				goto bad;
			s += 4;
			/* a surrogate pair is one code point (and six bytes in, four out) */
			if (cp >= 0xd800 && cp < 0xdc00 && end - s >= 6 && s[0] == '\\' &&
			    s[1] == 'u' && hex4(s + 2, &lo) == 0 && lo >= 0xdc00 && lo < 0xe000) {
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				s += 6;
			}
			o += utf8(o, cp);
			break;
		default:
			goto bad;
		}
	}
	*o = '\0';
	ps->p = end + 1;
	return out;
bad:
	free(out);
	return NULL;
}

static struct vj *parse_value(struct parser *ps);

/* The members of an array or object, after its opening bracket. */
static int
parse_members(struct parser *ps, struct vj *v, char close)
{
	skip_blanks(ps);
	if (*ps->p == close) {
		ps->p++;
		return 0;
	}
	for (;;) {
		char *key = NULL;
		struct vj *m;

		skip_blanks(ps);
		if (close == '}') {
			if (*ps->p != '"' || (key = parse_string(ps)) == NULL)
				return -EINVAL;
			skip_blanks(ps);
			if (*ps->p++ != ':') {
				free(key);
				return -EINVAL;
			}
		}
		m = parse_value(ps);
		if (m == NULL) {
			free(key);
			return -EINVAL;
		}
		m->key = key;
		vj_append(v, m);
		skip_blanks(ps);
		if (*ps->p == ',') {
			ps->p++;
			continue;
		}
		if (*ps->p++ != close)
			return -EINVAL;
		return 0;
	}
}

static struct vj *
parse_number(struct parser *ps)
{
	const char *s = ps->p;
	struct vj *v;

	if (*ps->p == '-')
		ps->p++;
	if (*ps->p < '0' || *ps->p > '9')
		return NULL;
	while ((*ps->p >= '0' && *ps->p <= '9') || *ps->p == '.' || *ps->p == 'e' ||
	       *ps->p == 'E' || *ps->p == '+' || *ps->p == '-')
		ps->p++;
	v = vj_new(VJ_NUMBER);
	if (v != NULL)
		v->text = strndup(s, (size_t)(ps->p - s));
	if (v != NULL && v->text == NULL) {
		vj_free(v);
		v = NULL;
	}
	return v;
}

static struct vj *
parse_value(struct parser *ps)
{
	struct vj *v = NULL;

	if (++ps->depth > MAX_DEPTH)
		return NULL;
	skip_blanks(ps);
	switch (*ps->p) {
	case '{':
	case '[': {
		char close = *ps->p == '{' ? '}' : ']';

		v = vj_new(close == '}' ? VJ_OBJECT : VJ_ARRAY);
		ps->p++;
		if (v != NULL && parse_members(ps, v, close) != 0) {
			vj_free(v);
			v = NULL;
		}
		break;
	}
	case '"':
		v = vj_new(VJ_STRING);
		if (v != NULL && (v->text = parse_string(ps)) == NULL) {
			vj_free(v);
			v = NULL;
		}
		break;
	case 't':
	case 'f':
	case 'n': {
		static const char *const words[] = { "true", "false", "null" };
		unsigned i;

		for (i = 0; i < 3 && strncmp(ps->p, words[i], strlen(words[i])) != 0; i++)
			;
		if (i == 3)
			break;
		v = vj_new(i == 2 ? VJ_NULL : VJ_BOOL);
		if (v != NULL)
			v->truth = i == 0;
		ps->p += strlen(words[i]);
		break;
	}
	default:
		v = parse_number(ps);
		break;
	}
	ps->depth--;
	return v;
}

struct vj *
vj_parse(const char *text)
{
	struct parser ps = { .p = text };
	struct vj *v = parse_value(&ps);

	if (v != NULL) {
		skip_blanks(&ps);
		if (*ps.p == '\0')
			return v;
		vj_free(v);
	}
	errno = EINVAL;
	return NULL;
}

const struct vj *
vj_get(const struct vj *obj, const char *key)
{
	const struct vj *m;

	if (obj == NULL || obj->type != VJ_OBJECT)
		return NULL;
	for (m = obj->child; m != NULL; m = m->next) {
		if (strcmp(m->key, key) == 0)
			return m;
	}
	return NULL;
}

uint64_t
vj_u64(const struct vj *v)
{
	if (v == NULL || v->type != VJ_NUMBER || v->text[0] == '-')
		return 0;
	return strtoull(v->text, NULL, 10);
}

int64_t
vj_i64(const struct vj *v)
{
	if (v == NULL || v->type != VJ_NUMBER)
		return 0;
	return strtoll(v->text, NULL, 10);
}

const char *
vj_text(const struct vj *v)
{
	if (v == NULL)
		return "";
	if (v->type == VJ_STRING || v->type == VJ_NUMBER)
		return v->text;
	if (v->type == VJ_BOOL)
		return v->truth ? "true" : "false";
	return "";
}

unsigned
vj_count(const struct vj *v)
{
	const struct vj *m;
	unsigned n = 0;

	if (v == NULL || (v->type != VJ_ARRAY && v->type != VJ_OBJECT))
		return 0;
	for (m = v->child; m != NULL; m = m->next)
		n++;
	return n;
}

struct vj *
vj_take(struct vj *obj, const char *key)
{
	struct vj **link;

	if (obj == NULL || obj->type != VJ_OBJECT)
		return NULL;
	for (link = &obj->child; *link != NULL; link = &(*link)->next) {
		struct vj *m = *link;

		if (strcmp(m->key, key) == 0) {
			*link = m->next;
			m->next = NULL;
			return m;
		}
	}
	return NULL;
}

void
vj_append(struct vj *parent, struct vj *member)
{
	struct vj **link = &parent->child;

	while (*link != NULL)
		link = &(*link)->next;
	*link = member;
}

static void
print_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void
print_value(FILE *f, const struct vj *v, bool pretty, unsigned depth)
{
	const struct vj *m;

	switch (v->type) {
	case VJ_NULL:
		fputs("null", f);
		return;
	case VJ_BOOL:
		fputs(v->truth ? "true" : "false", f);
		return;
	case VJ_NUMBER:
		fputs(v->text, f);
		return;
	case VJ_STRING:
		print_string(f, v->text);
		return;
	case VJ_ARRAY:
	case VJ_OBJECT:
		break;
	}
	fputc(v->type == VJ_OBJECT ? '{' : '[', f);
	for (m = v->child; m != NULL; m = m->next) {
		if (pretty)
			fprintf(f, "\n%*s", (int)(2 * depth + 2), "");
		if (v->type == VJ_OBJECT) {
			print_string(f, m->key);
			fputs(pretty ? ": " : ":", f);
		}
		print_value(f, m, pretty, depth + 1);
		if (m->next != NULL)
			fputc(',', f);
	}
	if (pretty && v->child != NULL)
		fprintf(f, "\n%*s", (int)(2 * depth), "");
	fputc(v->type == VJ_OBJECT ? '}' : ']', f);
}

void
vj_print(FILE *f, const struct vj *v, bool pretty)
{
	print_value(f, v, pretty, 0);
}
