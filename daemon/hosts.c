/*
 * Name-service hosts file.
 *
 * Entries live in one array in file order.  Lookups are linear scans: the
 * file lists a handful of hosts and is consulted at connection set-up, never
 * on the datapath, so an index would only add code.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hosts.h"

struct via_host_entry {
	char *name;
	uint8_t mac[6];
};

struct via_hosts {
	size_t nb;
	size_t cap;
	struct via_host_entry *e;
};

static void __attribute__((format(printf, 3, 4)))
hosts_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static int
hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int
via_parse_mac(const char *s, uint8_t mac[6])
{
	uint8_t tmp[6];
	int hi, lo;
	unsigned int i;

	if (s == NULL || mac == NULL)
		return -EINVAL;
	for (i = 0; i < 6; i++) {
		hi = hex_digit(s[0]);
		lo = hi < 0 ? -1 : hex_digit(s[1]);
		if (lo < 0)
			return -EINVAL;
		tmp[i] = (uint8_t)(hi << 4 | lo);
		if (s[2] != (i == 5 ? '\0' : ':'))
			return -EINVAL;
		s += 3;
	}
	memcpy(mac, tmp, sizeof(tmp));
	return 0;
}

void
via_hosts_free(struct via_hosts *h)
{
	size_t i;

	if (h == NULL)
		return;
	for (i = 0; i < h->nb; i++)
		free(h->e[i].name);
	free(h->e);
	free(h);
}

static int
hosts_add(struct via_hosts *h, const char *name, size_t len,
	  const uint8_t mac[6])
{
	struct via_host_entry *e;
	size_t cap;

	if (h->nb == h->cap) {
		cap = h->cap ? h->cap * 2 : 16;
		e = realloc(h->e, cap * sizeof(*e));
		if (e == NULL)
			return -ENOMEM;
		h->e = e;
		h->cap = cap;
	}
	e = &h->e[h->nb];
	e->name = strndup(name, len);
	if (e->name == NULL)
		return -ENOMEM;
	memcpy(e->mac, mac, 6);
	h->nb++;
	return 0;
}

/*
 * Parse one line into the table.  Returns 0 (entry added, or nothing to
 * add), -EINVAL with a message lacking the file:line prefix, or -ENOMEM.
 */
static int
hosts_parse_line(struct via_hosts *h, char *line, char *msg, size_t msglen)
{
	char *name, *addr, *addr_end, *p;
	size_t name_len, i;
	uint8_t mac[6];

	/* Drop the newline and trailing blanks so messages quote clean text. */
	p = line + strlen(line);
	while (p > line && isspace((unsigned char)p[-1]))
		*--p = '\0';
	p = line;
	while (isspace((unsigned char)*p))
		p++;
	if (*p == '\0' || *p == '#')
		return 0;

	name = p;
	while (*p != '\0' && !isspace((unsigned char)*p) && *p != '#')
		p++;
	name_len = (size_t)(p - name);
	if (*p == '#') {
		hosts_err(msg, msglen, "'#' is not allowed in a host name");
		return -EINVAL;
	}
	if (name_len > VIA_HOSTS_NAME_MAX) {
		hosts_err(msg, msglen, "host name longer than %d characters",
			  VIA_HOSTS_NAME_MAX);
		return -EINVAL;
	}
	while (isspace((unsigned char)*p))
		p++;
	if (*p == '\0' || *p == '#') {
		hosts_err(msg, msglen, "expected 'name aa:bb:cc:dd:ee:ff'");
		return -EINVAL;
	}

	addr = p;
	while (*p != '\0' && !isspace((unsigned char)*p) && *p != '#')
		p++;
	addr_end = p;
	while (isspace((unsigned char)*p))
		p++;
	/* Only a comment may follow the address. */
	if (*p != '\0' && *p != '#') {
		hosts_err(msg, msglen, "unexpected text after the MAC address: '%s'",
			  p);
		return -EINVAL;
	}
	*addr_end = '\0';
	if (via_parse_mac(addr, mac) < 0) {
		hosts_err(msg, msglen, "invalid MAC address '%s'", addr);
		return -EINVAL;
	}
	if (!via_mac_is_unicast(mac)) {
		hosts_err(msg, msglen,
			  "MAC address '%s' is not a unicast NIC address", addr);
		return -EINVAL;
	}

	/*
	 * A repeated (name, MAC) pair would give one NIC two NameIndex
	 * values, which is never intended.
	 */
	for (i = 0; i < h->nb; i++) {
		if (memcmp(h->e[i].mac, mac, 6) == 0 &&
		    strlen(h->e[i].name) == name_len &&
		    memcmp(h->e[i].name, name, name_len) == 0) {
			hosts_err(msg, msglen, "duplicate entry '%.*s %s'",
				  (int)name_len, name, addr);
			return -EINVAL;
		}
	}
	return hosts_add(h, name, name_len, mac);
}

int
via_hosts_load(struct via_hosts **out, const char *path, char *err,
	       size_t errlen)
{
	struct via_hosts *h;
	char msg[512];
	char *line = NULL;
	size_t cap = 0;
	unsigned int lineno = 0;
	FILE *f;
	int rc = 0;

	if (out == NULL || path == NULL) {
		hosts_err(err, errlen, "invalid argument");
		return -EINVAL;
	}
	f = fopen(path, "r");
	if (f == NULL) {
		rc = -errno;
		hosts_err(err, errlen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	h = calloc(1, sizeof(*h));
	if (h == NULL) {
		fclose(f);
		hosts_err(err, errlen, "%s: %s", path, strerror(ENOMEM));
		return -ENOMEM;
	}

	for (;;) {
		errno = 0;
		if (getline(&line, &cap, f) < 0) {
			/* getline() reports EOF and errors alike. */
			if (ferror(f) || errno == ENOMEM) {
				rc = errno ? -errno : -EIO;
				hosts_err(err, errlen, "%s: %s", path,
					  strerror(-rc));
			}
			break;
		}
		lineno++;
		msg[0] = '\0';
		rc = hosts_parse_line(h, line, msg, sizeof(msg));
		if (rc < 0) {
			hosts_err(err, errlen, "%s:%u: %s", path, lineno,
				  rc == -ENOMEM ? strerror(ENOMEM) : msg);
			break;
		}
	}
	free(line);
	fclose(f);
	if (rc < 0) {
		via_hosts_free(h);
		return rc;
	}
	*out = h;
	return 0;
}

int
via_hosts_by_name(const struct via_hosts *h, const char *name,
		  unsigned int index, uint8_t mac[6])
{
	size_t i;

	if (name == NULL || mac == NULL)
		return -EINVAL;
	if (h == NULL)
		return -ENOENT;
	for (i = 0; i < h->nb; i++) {
		if (strcmp(h->e[i].name, name) != 0)
			continue;
		if (index-- == 0) {
			memcpy(mac, h->e[i].mac, 6);
			return 0;
		}
	}
	return -ENOENT;
}

int
via_hosts_by_addr(const struct via_hosts *h, const uint8_t mac[6],
		  const char **name)
{
	size_t i;

	if (mac == NULL || name == NULL)
		return -EINVAL;
	if (h == NULL)
		return -ENOENT;
	for (i = 0; i < h->nb; i++) {
		if (memcmp(h->e[i].mac, mac, 6) == 0) {
			*name = h->e[i].name;
			return 0;
		}
	}
	return -ENOENT;
}

int
via_hosts_entry(const struct via_hosts *h, size_t index, const char **name, uint8_t mac[6])
{
	if (name == NULL || mac == NULL)
		return -EINVAL;
	if (h == NULL || index >= h->nb)
		return -ENOENT;
	*name = h->e[index].name;
	memcpy(mac, h->e[index].mac, 6);
	return 0;
}
