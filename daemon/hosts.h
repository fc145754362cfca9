/*
 * Name-service hosts file: maps VIA host names to NIC MAC addresses for
 * VipNSGetHostByName / VipNSGetHostByAddr.
 *
 * File syntax, one entry per line:
 *
 *	# comment (whole line, or after the entry)
 *	name  aa:bb:cc:dd:ee:ff
 *
 * A name may appear on several lines, one per NIC: NameIndex 0, 1, ...
 * follow file order.  Several names may map to the same MAC; a reverse
 * lookup returns the first.  Names are 1..VIA_HOSTS_NAME_MAX characters
 * without blanks and without '#'.
 *
 * libc only, so that it can be unit tested without DPDK.
 */
#ifndef VIAD_HOSTS_H
#define VIAD_HOSTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** Longest host name, excluding the terminating NUL. */
#define VIA_HOSTS_NAME_MAX 255

/** Loaded hosts file (opaque). */
struct via_hosts;

/**
 * Load a hosts file.
 *
 * @param out     receives the table on success; untouched on error.
 * @param path    file to read.
 * @param err     buffer receiving a human readable message ("file:line: ...")
 *                on error; may be NULL.
 * @param errlen  size of @p err.
 * @return 0 on success, or
 *   - -EINVAL: NULL @p out or @p path; a line that is not "name MAC"; a
 *              name longer than VIA_HOSTS_NAME_MAX; a malformed, multicast
 *              or all-zero MAC; the same name and MAC listed twice.
 *   - -ENOENT: @p path does not exist.
 *   - -ENOMEM: out of memory.
 *   - other -errno from fopen() or reading (e.g. -EACCES, -EIO).
 */
int via_hosts_load(struct via_hosts **out, const char *path, char *err,
		   size_t errlen);

/**
 * Free a table returned by via_hosts_load(); NULL is a no-op.
 *
 * Names returned by via_hosts_by_addr() become invalid.
 *
 * @param h  table to free.
 */
void via_hosts_free(struct via_hosts *h);

/**
 * Look up the @p index-th MAC address of host @p name.
 *
 * @param h      table; NULL (no hosts file configured) behaves as empty.
 * @param name   host name.
 * @param index  NameIndex: 0 for the first line naming the host, 1 for the
 *               second, ...
 * @param mac    receives the address on success.
 * @return 0 on success, or
 *   - -EINVAL: NULL @p name or @p mac.
 *   - -ENOENT: unknown name, or @p index beyond its last entry.
 */
int via_hosts_by_name(const struct via_hosts *h, const char *name,
		      unsigned int index, uint8_t mac[6]);

/**
 * Find the first host name, in file order, listed with address @p mac.
 *
 * @param h     table; NULL (no hosts file configured) behaves as empty.
 * @param mac   address to look up.
 * @param name  receives a pointer into @p h, valid until via_hosts_free().
 * @return 0 on success, or
 *   - -EINVAL: NULL @p mac or @p name.
 *   - -ENOENT: no entry has this address.
 */
int via_hosts_by_addr(const struct via_hosts *h, const uint8_t mac[6],
		      const char **name);

/**
 * The @p index-th line of the table, in file order (to list it).
 *
 * @param h      table; NULL (no hosts file configured) behaves as empty.
 * @param index  0 for the first line.
 * @param name   receives a pointer into @p h, valid until via_hosts_free().
 * @param mac    receives the line's address.
 * @return 0 on success, or
 *   - -EINVAL: NULL @p name or @p mac.
 *   - -ENOENT: @p index is past the last line.
 */
int via_hosts_entry(const struct via_hosts *h, size_t index, const char **name,
		    uint8_t mac[6]);

/**
 * Parse a MAC address written exactly as "aa:bb:cc:dd:ee:ff".
 *
 * Two hex digits per byte (either case), ':' separators, nothing else:
 * accepting only the canonical form keeps hosts and configuration files
 * greppable.  No check is made on the address's kind; see
 * via_mac_is_unicast().
 *
 * @param s    text to parse.
 * @param mac  receives the address on success; untouched on error.
 * @return 0 on success, or
 *   - -EINVAL: NULL argument or malformed address.
 */
int via_parse_mac(const char *s, uint8_t mac[6]);

/**
 * Tell whether @p mac can be a NIC's own address: neither group (multicast
 * or broadcast) nor all-zero.
 *
 * @param mac  address to test.
 * @return true for a usable unicast address.
 */
static inline bool
via_mac_is_unicast(const uint8_t mac[6])
{
	return !(mac[0] & 0x01) &&
	       (mac[0] | mac[1] | mac[2] | mac[3] | mac[4] | mac[5]) != 0;
}

#endif /* VIAD_HOSTS_H */
