/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * viad's configuration parser (daemon/conf.c) on arbitrary files.
 *
 * The input is the file, read by via_conf_load() as viad reads viad.conf.
 * Its lines are then also given one by one as command-line overrides
 * ("--set SECTION.KEY=VALUE", split as daemon/main.c splits them), and the
 * result is checked with via_conf_check().
 *
 * Properties: no memory error; a failed load leaves the configuration as it
 * was; every string of a loaded configuration is NUL-terminated inside its
 * buffer; never more ports than VIA_CONF_MAX_PORTS; an error message is a
 * NUL-terminated string of its buffer.
 */

#include "fuzz_common.h"

#include "conf.h"

static void
check_str(const char *s, size_t size)
{
	FUZZ_ASSERT(memchr(s, '\0', size) != NULL);
}

static void
check_conf(const struct via_conf *c)
{
	unsigned i;

	check_str(c->instance, sizeof(c->instance));
	check_str(c->socket_path, sizeof(c->socket_path));
	check_str(c->hosts_path, sizeof(c->hosts_path));
	check_str(c->glue_dir, sizeof(c->glue_dir));
	check_str(c->log_level, sizeof(c->log_level));
	FUZZ_ASSERT(c->nb_ports <= VIA_CONF_MAX_PORTS);
	for (i = 0; i < c->nb_ports; i++) {
		const struct via_port_conf *p = &c->ports[i];

		check_str(p->name, sizeof(p->name));
		check_str(p->glue, sizeof(p->glue));
		check_str(p->devargs, sizeof(p->devargs));
		check_str(p->mac, sizeof(p->mac));
		check_str(p->inner, sizeof(p->inner));
	}
}

/* "port.via1.mtu=9000": daemon/main.c's apply_set() */
static void
apply_set(struct via_conf *c, char *arg)
{
	struct via_conf before = *c;
	char *eq = strchr(arg, '=');
	char *dot;
	char err[256];

	if (eq == NULL)
		return;
	*eq = '\0';
	dot = strrchr(arg, '.');
	if (dot == NULL)
		return;
	*dot = '\0';
	memset(err, 0xa5, sizeof(err));
	if (via_conf_set(c, arg, dot + 1, eq + 1, err, sizeof(err)) != 0) {
		check_str(err, sizeof(err));
		/* on error c is unchanged */
		FUZZ_ASSERT(memcmp(&before, c, sizeof(before)) == 0);
	}
	check_conf(c);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct via_conf c, before;
	char err[512];
	char *text, *line, *save = NULL;
	int rc;

	via_conf_defaults(&c);
	before = c;
	memset(err, 0xa5, sizeof(err));
	rc = via_conf_load(&c, fuzz_file(data, size), err, sizeof(err));
	if (rc != 0) {
		check_str(err, sizeof(err));
		FUZZ_ASSERT(memcmp(&before, &c, sizeof(c)) == 0);
	}
	check_conf(&c);

	/* the same bytes as overrides, one per line, on what was loaded */
	text = malloc(size + 1);
	if (text == NULL)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save))
		apply_set(&c, line);
	free(text);
	memset(err, 0xa5, sizeof(err));
	if (via_conf_check(&c, err, sizeof(err)) != 0)
		check_str(err, sizeof(err));
	return 0;
}
