/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The red-team suite (issue 25 part 7; docs/design.md section 10): what
 * redteam.c (the driver, the victim) and attacks.c (the attacker) share.
 */
#ifndef SEC_H
#define SEC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "harness.h"

#define SEC_GID      4244u   /**< viad.socket_group of the suite's viad */
#define VICTIM_UID   5201u   /**< in the group: moves data throughout */
#define ATTACKER_UID 5202u   /**< in the group */
#define OUTSIDER_UID 5203u   /**< not in the group */

/** How long the victim's traffic may stall while an attack runs. */
#define SEC_STALL_BOUND_MS 5000u

/** An attacker's verdict (its exit status, or its note before it stops). */
enum sec_verdict {
	SEC_REFUSED = 0,    /**< every attempt was refused, as it must be */
	SEC_ACCEPTED = 11,  /**< viad took something it must refuse */
	SEC_SETUP = 12,     /**< the attack could not be set up (a bug of the test) */
	SEC_LOST = 13,      /**< viad went away under the attack */
};

/** Shared by the driver, the victim and the attackers (MAP_SHARED anonymous). */
struct sec_shared {
	/* the victim's traffic */
	uint64_t messages;       /**< verified round trips so far */
	uint64_t last_ns;        /**< when the last one completed */
	uint64_t max_gap_ns;     /**< longest time between two (reset by the driver) */
	uint32_t errors;         /**< wrong bytes, failed calls */
	uint32_t stop;           /**< the driver asks the victim to stop */
	char victim_error[160];
	/* an attacker that holds what it took until the driver has looked */
	uint32_t verdict;        /**< enum sec_verdict */
	uint64_t taken;          /**< what it got before the refusal (regions, bytes) */
};

/** What the driver tells an attacker. */
struct sec_ctx {
	const char *tmpdir;
	const char *sock;        /**< viad's socket */
	const char *root_file;   /**< root-owned, 0644 (class foreign) */
	const char *own_dir;     /**< the attacker's directory (its files, removed with tmpdir) */
	const char *suid_helper; /**< set-user-ID root, in tmpdir (class forkexec) */
	struct sec_shared *sh;
};

/** An attack, run as an unprivileged user in a child. @return enum sec_verdict */
typedef int (*sec_attack_fn)(const struct sec_ctx *c);

/* attacks.c */
int attack_fd_types(const struct sec_ctx *c);
int attack_linger_request(const struct sec_ctx *c);
int attack_linger_at_exit(const struct sec_ctx *c);
int attack_outsider(const struct sec_ctx *c);
int attack_forged_maps(const struct sec_ctx *c);
int attack_read_only_object(const struct sec_ctx *c);
int attack_hugetlb_share_file(const struct sec_ctx *c);
int attack_truncated_file(const struct sec_ctx *c);
int attack_punched_segment(const struct sec_ctx *c);
int attack_mappings(const struct sec_ctx *c);
int attack_hugepages(const struct sec_ctx *c);
int attack_fork_exec(const struct sec_ctx *c);

/** Where attack_fork_exec's set-user-ID helper attaches its segment. */
#define SEC_SUID_SEGMENT  ((void *)0x6e0000000000ull)
#define SEC_SUID_LEN      65536u
#define SEC_SUID_CANARY   0xc5

#endif /* SEC_H */
