/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libvipl.so: the multiplexing layer of the M-VIA 2 provider model
 * (include/vipl_provider.h; docs/design.md, "Providers"). Applications link
 * `-lvipl` and run on any provider without relinking: each VipOpenNic picks
 * a provider for the NIC's name, loads it once from the provider path, and
 * gives it a handle tag; every later call is sent to the provider whose tag
 * its first handle carries. Handles are never translated, so the cost of a
 * call is one table index and one indirect call.
 *
 * Choosing a provider for a NIC name, first match wins:
 *   1. VIPL_PROVIDER=NAME in the environment: every NIC;
 *   2. the providers file (VIPL_PROVIDERS_CONF, else
 *      SYSCONFDIR/vipl/providers.conf): lines "PATTERN PROVIDER", PATTERN
 *      an fnmatch(3) pattern of NIC names, '#' starts a comment;
 *   3. built in: via*, /dev/via_* -> dpdk (viad); tcp* -> tcp.
 * A provider NAME lives in libvipl-NAME.so, looked up in each directory of
 * VIPL_PROVIDER_PATH (colon separated), else in the installed provider
 * directory.
 *
 * Ops tables start full: a provider's optional slots left NULL get the
 * defaults below; a provider without a required slot, or built for another
 * ABI, is refused with a log line and its NICs do not open.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vipl_provider.h>

#define MUX_EXPORT __attribute__((visibility("default")))
#define MAX_PROVIDERS 255         /* tags 1..255; 0 is no provider's */
#define PROVIDER_NAME_MAX 32

struct provider {
	char name[PROVIDER_NAME_MAX];
	struct vipl_provider_ops ops;  /* the provider's, defaults filled in */
	void *dl;
};

/*
 * Loaded providers by tag. A slot is written once, under load_lock, before
 * its tag is published in nb_tags with a release store; a dispatching
 * thread reads nb_tags with acquire before the slot, so it never sees a
 * half-written table. Providers are never unloaded: a handle of a closed
 * NIC must still find code that says VIP_INVALID_PARAMETER.
 */
static struct provider providers[MAX_PROVIDERS + 1];
static unsigned nb_tags;           /* tags 1..nb_tags are loaded */
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

static void __attribute__((format(printf, 1, 2)))
mux_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("libvipl: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* ---- defaults of the optional calls ---------------------------------------- */

/* A provider that leaves an optional call out gets one of these: the
 * return code vipl_provider.h lists for it, whatever the arguments. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define DEFAULT(name, params, args, required, dflt) DEFAULT_##required(name, params, dflt)
#define DEFAULT_0(name, params, dflt) static VIP_RETURN default_##name params { return dflt; }
#define DEFAULT_1(name, params, dflt)
VIPL_PROVIDER_CALLS(DEFAULT)
#undef DEFAULT
#pragma GCC diagnostic pop

/* ---- loading ---------------------------------------------------------------- */

/* Fill @p ops from @p from: NULL optional slots get the defaults. @return the
 * name of a missing required slot, or NULL */
static const char *
fill_ops(struct vipl_provider_ops *ops, const struct vipl_provider_ops *from)
{
	const char *missing = NULL;

#define FILL(name, params, args, required, dflt) FILL_##required(name)
#define FILL_1(name) \
	if ((ops->name = from->name) == NULL && missing == NULL) \
		missing = #name;
#define FILL_0(name) ops->name = from->name != NULL ? from->name : default_##name;
	VIPL_PROVIDER_CALLS(FILL)
#undef FILL
#undef FILL_0
#undef FILL_1
	return missing;
}

/* dlopen libvipl-@p name.so from the provider path. @return its handle, or
 * NULL after a log line */
static void *
open_provider_file(const char *name)
{
	/* secure_getenv, as every variable that picks code or a file: a
	 * set-user-ID program must not load a provider from the user's
	 * directory (it sees none of them) */
	const char *set = secure_getenv("VIPL_PROVIDER_PATH");
	const char *path = set != NULL && set[0] != '\0' ? set : VIPL_PROVIDER_DIR;
	char file[4096];
	void *dl;

	while (*path != '\0') {
		size_t len = strcspn(path, ":");

		if (len > 0 && len < sizeof(file) - 64) {
			snprintf(file, sizeof(file), "%.*s/libvipl-%s.so", (int)len, path, name);
			/* RTLD_LOCAL: a provider's own symbols stay its own */
			dl = dlopen(file, RTLD_NOW | RTLD_LOCAL);
			if (dl != NULL)
				return dl;
		}
		path += len + (path[len] == ':');
	}
	mux_log("no provider \"%s\": libvipl-%s.so is not in %s (VIPL_PROVIDER_PATH)", name,
		name, set != NULL && set[0] != '\0' ? set : VIPL_PROVIDER_DIR);
	return NULL;
}

/* The tag of provider @p name, loaded now if it was not. @return 1..255, or 0 */
static unsigned
provider_tag(const char *name)
{
	const struct vipl_provider *desc;
	vipl_provider_entry_fn entry;
	struct provider *p;
	const char *missing;
	unsigned tag, i;

	if (strlen(name) >= PROVIDER_NAME_MAX) {
		mux_log("provider name \"%s\" is too long", name);
		return 0;
	}
	pthread_mutex_lock(&load_lock);
	for (i = 1; i <= nb_tags; i++) {
		if (strcmp(providers[i].name, name) == 0) {
			pthread_mutex_unlock(&load_lock);
			return i;
		}
	}
	tag = 0;
	if (nb_tags == MAX_PROVIDERS) {
		mux_log("too many providers (%u)", MAX_PROVIDERS);
		goto out;
	}
	p = &providers[nb_tags + 1];
	p->dl = open_provider_file(name);
	if (p->dl == NULL)
		goto out;
	entry = (vipl_provider_entry_fn)dlsym(p->dl, VIPL_PROVIDER_ENTRY_NAME);
	desc = entry != NULL ? entry(VIPL_PROVIDER_ABI_VERSION, (uint8_t)(nb_tags + 1)) : NULL;
	if (desc == NULL || desc->abi_version != VIPL_PROVIDER_ABI_VERSION || desc->ops == NULL) {
		mux_log("provider \"%s\" refused: %s (libvipl speaks provider ABI %u)", name,
			entry == NULL ? "no " VIPL_PROVIDER_ENTRY_NAME
			: desc == NULL ? "it does not serve this ABI"
			: desc->ops == NULL ? "no ops table" : "another ABI version",
			VIPL_PROVIDER_ABI_VERSION);
		goto refused;
	}
	missing = fill_ops(&p->ops, desc->ops);
	if (missing != NULL) {
		mux_log("provider \"%s\" refused: the required call %s is missing", name, missing);
		goto refused;
	}
	snprintf(p->name, sizeof(p->name), "%s", name);
	tag = nb_tags + 1;
	__atomic_store_n(&nb_tags, tag, __ATOMIC_RELEASE);
	goto out;
refused:
	/* a refused provider's code may still run nothing: unloaded */
	dlclose(p->dl);
	memset(p, 0, sizeof(*p));
out:
	pthread_mutex_unlock(&load_lock);
	return tag;
}

/* The provider the providers file names for @p nic, in @p out. @return whether one did */
static bool
provider_from_file(const char *nic, char *out, size_t size)
{
	const char *path = secure_getenv("VIPL_PROVIDERS_CONF");
	char line[512], pattern[256], name[PROVIDER_NAME_MAX];
	bool found = false;
	FILE *f;

	if (path == NULL || path[0] == '\0')
		path = VIPL_SYSCONFDIR "/vipl/providers.conf";
	f = fopen(path, "re");
	if (f == NULL)
		return false;
	while (!found && fgets(line, sizeof(line), f) != NULL) {
		line[strcspn(line, "#")] = '\0';
		if (sscanf(line, "%255s %31s", pattern, name) == 2 &&
		    fnmatch(pattern, nic, 0) == 0) {
			snprintf(out, size, "%s", name);
			found = true;
		}
	}
	fclose(f);
	return found;
}

/* The provider of NIC @p nic (docs/design.md section 15, "Choosing a
 * provider"). @return its name (in @p buf when it came from the providers
 * file), or NULL: no provider */
static const char *
provider_for(const char *nic, char *buf, size_t size)
{
	const char *forced = secure_getenv("VIPL_PROVIDER");

	if (forced != NULL && forced[0] != '\0')
		return forced;
	if (provider_from_file(nic, buf, size))
		return buf;
	if (strncmp(nic, "via", 3) == 0 || strncmp(nic, "/dev/via_", 9) == 0)
		return "dpdk";
	if (strncmp(nic, "tcp", 3) == 0)
		return "tcp";
	return NULL;
}

/* ---- dispatch ----------------------------------------------------------------- */

/* The ops of the provider that made @p handle, or NULL. */
static inline const struct vipl_provider_ops *
ops_of(const void *handle)
{
	unsigned tag = VIPL_HANDLE_TAG(handle);

	if (tag == 0 || tag > __atomic_load_n(&nb_tags, __ATOMIC_ACQUIRE))
		return NULL;
	return &providers[tag].ops;
}

MUX_EXPORT VIP_RETURN
VipOpenNic(const VIP_CHAR *DeviceName, VIP_NIC_HANDLE *NicHandle)
{
	char buf[PROVIDER_NAME_MAX];
	const char *name;
	unsigned tag;

	if (DeviceName == NULL || NicHandle == NULL)
		return VIP_INVALID_PARAMETER;
	name = provider_for(DeviceName, buf, sizeof(buf));
	if (name == NULL) {
		mux_log("VipOpenNic: no provider serves \"%s\" (VIPL_PROVIDER, providers.conf)",
			DeviceName);
		return VIP_INVALID_PARAMETER;
	}
	tag = provider_tag(name);
	if (tag == 0)
		return VIP_ERROR_RESOURCE;
	return providers[tag].ops.VipOpenNic(DeviceName, NicHandle);
}

/* Every other call: to the provider whose tag its first handle carries. */
#define FIRST_ARG(first, ...) first
#define DISPATCH(name, params, args, required, dflt) \
	MUX_EXPORT VIP_RETURN name params \
	{ \
		const struct vipl_provider_ops *ops = ops_of(FIRST_ARG args); \
		return ops != NULL ? ops->name args : VIP_INVALID_PARAMETER; \
	}
VIPL_PROVIDER_HANDLE_CALLS(DISPATCH)
