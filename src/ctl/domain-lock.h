/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

/* How long a verb waits for a Domain that is going down (its coordinator's teardown is bounded well below). */
#define CTL_STOP_WAIT_SEC 60

/*
 * Waits until no coordinator holds the Domain lock of domain_dir: the
 * Domain is stopped. 0 at once when it is (or never ran here), 1 after
 * waiting for it;
 * -ETIMEDOUT after timeout_s, said on standard error; with say, one line
 * says that it waits.
 */
int ctl_domain_wait_stopped(const char *domain_dir, const char *id, unsigned timeout_s, bool say);

/*
 * Takes the Domain lock exclusively for verb, which needs a stopped
 * Domain: a running Domain is refused (-EBUSY, said), one going down is
 * waited for (at most CTL_STOP_WAIT_SEC, said). Without create, a missing
 * lock file gives 0 and *ret_fd = -EBADF (the Domain never ran); with it,
 * the file is made. Prints why on failure.
 */
int ctl_domain_lock_stopped(const char *domain_dir, const char *id, const char *verb, bool create, int *ret_fd);
