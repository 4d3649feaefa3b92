/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "checkout.h"

/*
 * At a Domain's start: the current checkout's state directory,
 * <domain_dir>/checkouts/<key>, found or made (0700), its record written
 * (workspace, first and last use); view/, view-git/ and ignored/ of an
 * older Lazaret (directly in the Domain Root) adopted when they were begun
 * after this checkout was made, else set aside whole as
 * checkouts/legacy-<random>. *ret_notice (optional) is one line for the
 * launch when this start began a checkout's state while another's exists
 * (or set an older Lazaret's aside), else left NULL.
 */
int checkout_state_prepare(const char *domain_dir, const char *workspace, const CheckoutId *id,
                           char ret_key[static CHECKOUT_KEY_MAX], char **ret_notice, char **ret_error);

/*
 * At a Domain's start, after checkout_state_prepare(): when the checkout's
 * state directory holds no CHECKOUT_REFS_FILE (its first start, or the
 * developer accepted the commits counted so far), the refs of its
 * repository now (checkout_refs_now(), by the git dirs the Git Sentry
 * judged) are recorded there; an existing record stays, so that no start
 * in between loses the commits made inside since. Nothing for a workspace
 * that is no repository. Plain file work, nothing waited for.
 */
int checkout_state_record_refs(const char *domain_dir, const char *key, int workspace_fd, const GitLinked *linked,
                               char **ret_error);
