/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * libslirp reports through glib's g_log(). glib's own handler looks at
 * whether standard error is a terminal (an ioctl) and at the environment
 * before it writes, and the helper's seccomp allowlist has no ioctl: the
 * first warning libslirp gave after confinement (one comes when the
 * sandbox has used up the helper's descriptors) killed the helper with
 * SIGSYS. So every glib message goes to sink instead, as one line of text,
 * before the helper confines itself.
 */
void egress_glib_log_to(void (*sink)(void *userdata, const char *domain, const char *level, const char *message),
                        void *userdata);
