/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file glue_plugin.c
 * @brief Glue modules from shared objects: via_glue_load().
 *
 * A plugin registers nothing itself: it only exports a pointer to its
 * module (VIA_GLUE_PLUGIN).  Every check therefore happens here, where a
 * failure is a refusal with a log line rather than the abort() a
 * registering constructor would have to choose.  The checks come
 * in the order that keeps each one safe: the ABI version first (the only
 * field whose place every version shares), then the name against the file's
 * (so that a module is found under the name the port asked for), then
 * via_glue_register() (required slots, room).
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "via_glue.h"
#include "glue_internal.h"

/* Check @m, exported by @path as module @name, and register it. */
static int
plugin_register(const char *path, const char *name,
		const struct via_glue_module *m)
{
	int rc;

	if (m->abi_version != VIA_GLUE_ABI_VERSION) {
		GLUE_LOG(ERR, "plugin %s refused: built for glue ABI %u, "
			 "this viad has glue ABI %u (rebuild it against this "
			 "viad's via_glue.h)", path, m->abi_version,
			 VIA_GLUE_ABI_VERSION);
		return -EPROTO;
	}
	if (m->name == NULL ||
	    strncmp(m->name, name, VIA_GLUE_NAME_MAX) != 0) {
		GLUE_LOG(ERR, "plugin %s refused: its module is named '%.*s', "
			 "not '%s'", path, VIA_GLUE_NAME_MAX - 1,
			 m->name != NULL ? m->name : "(null)", name);
		return -EINVAL;
	}
	rc = via_glue_register(m);
	if (rc == -EINVAL)
		GLUE_LOG(ERR, "plugin %s refused: required slot probe is not "
			 "set", path);
	else if (rc < 0)
		GLUE_LOG(ERR, "plugin %s refused: cannot register module "
			 "'%s': %s", path, name, strerror(-rc));
	return rc;
}

int
via_glue_load(const char *dir, const char *name)
{
	const struct via_glue_module *const *export;
	char path[PATH_MAX];
	void *handle;
	int rc;

	/* the name becomes part of a file name: it must not leave @dir */
	if (dir == NULL || dir[0] == '\0' || name == NULL || name[0] == '\0' ||
	    strchr(name, '/') != NULL)
		return -EINVAL;
	if (strnlen(name, VIA_GLUE_NAME_MAX) >= VIA_GLUE_NAME_MAX)
		return -ENAMETOOLONG;
	if (via_glue_lookup(name) != NULL)
		return 0;
	if ((size_t)snprintf(path, sizeof(path), "%s/via_glue_%s.so", dir,
			     name) >= sizeof(path))
		return -ENAMETOOLONG;
	if (access(path, F_OK) != 0) {
		GLUE_LOG(ERR, "no module '%s': it is not built in and there "
			 "is no plugin %s", name, path);
		return -ENOENT;
	}
	/* RTLD_NOW: a symbol missing from viad and its libraries is a
	 * refusal here, not a crash when the port first calls it */
	handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (handle == NULL) {
		GLUE_LOG(ERR, "plugin %s refused: %s", path, dlerror());
		return -ELIBBAD;
	}
	export = dlsym(handle, VIA_GLUE_PLUGIN_SYMBOL);
	if (export == NULL || *export == NULL) {
		GLUE_LOG(ERR, "plugin %s refused: it exports no module (%s; "
			 "build it with VIA_GLUE_PLUGIN())", path,
			 VIA_GLUE_PLUGIN_SYMBOL);
		rc = -ELIBBAD;
	} else {
		rc = plugin_register(path, name, *export);
	}
	if (rc < 0) {
		dlclose(handle);
		return rc;
	}
	GLUE_LOG(INFO, "module '%s' loaded from plugin %s (glue ABI %u)",
		 name, path, VIA_GLUE_ABI_VERSION);
	return 0;
}
