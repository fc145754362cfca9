/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The name-service hosts file parser (daemon/hosts.c) on arbitrary files,
 * then the lookups viad's NS_BY_NAME and NS_BY_ADDR requests make.
 *
 * The input is the file. Every name the file could hold is looked up by
 * taking each line's first word; every MAC found is looked up back.
 *
 * Properties: no memory error; on success every entry's name is at most
 * VIA_HOSTS_NAME_MAX characters and its MAC is unicast; by_addr returns a
 * name that by_name maps to a list containing that MAC; an error message is
 * a NUL-terminated string of its buffer; via_parse_mac() accepts exactly the
 * 17-character form.
 */
#include "fuzz_common.h"

#include <errno.h>

#include "hosts.h"

/* Look @p name up at every index; each hit is looked up back. */
static void
lookups(const struct via_hosts *h, const char *name)
{
	unsigned idx;
	uint8_t mac[6];

	for (idx = 0; idx < 64; idx++) {
		const char *back = NULL;
		unsigned j;
		bool found = false;

		if (via_hosts_by_name(h, name, idx, mac) != 0)
			break;
		FUZZ_ASSERT(via_mac_is_unicast(mac));
		FUZZ_ASSERT(via_hosts_by_addr(h, mac, &back) == 0);
		FUZZ_ASSERT(back != NULL && strlen(back) <= VIA_HOSTS_NAME_MAX);
		/* the first name listed with this MAC maps back to it */
		for (j = 0; j < 64 && !found; j++) {
			uint8_t m2[6];

			if (via_hosts_by_name(h, back, j, m2) != 0)
				break;
			found = memcmp(m2, mac, 6) == 0;
		}
		FUZZ_ASSERT(found);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct via_hosts *h = NULL;
	char err[512];
	char *text, *line, *save = NULL;
	uint8_t mac[6];
	int rc;

	memset(err, 0xa5, sizeof(err));
	rc = via_hosts_load(&h, fuzz_file(data, size), err, sizeof(err));
	if (rc != 0) {
		FUZZ_ASSERT(h == NULL);
		FUZZ_ASSERT(memchr(err, '\0', sizeof(err)) != NULL);
	}

	text = malloc(size + 1);
	if (text == NULL) {
		via_hosts_free(h);
		return 0;
	}
	memcpy(text, data, size);
	text[size] = '\0';
	for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		char *word, *wsave = NULL;
		size_t len = strlen(line);

		/* a whole line as a MAC: only "xx:xx:xx:xx:xx:xx" parses */
		if (via_parse_mac(line, mac) == 0)
			FUZZ_ASSERT(len == 17);
		word = strtok_r(line, " \t\r#", &wsave);
		if (word != NULL && rc == 0)
			lookups(h, word);
		if (word != NULL && via_parse_mac(word, mac) == 0) {
			const char *name;

			if (via_hosts_by_addr(h, mac, &name) == 0)
				FUZZ_ASSERT(strlen(name) <= VIA_HOSTS_NAME_MAX);
		}
	}
	free(text);
	/* NULL behaves as an empty table */
	FUZZ_ASSERT(via_hosts_by_name(NULL, "x", 0, mac) == -ENOENT);
	via_hosts_free(h);
	return 0;
}
