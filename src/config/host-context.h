/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Everything the libraries would otherwise read from the process
 * environment, collected once by the caller (lazaretctl from the shell, the
 * coordinator from the user manager) and passed in. No function of the
 * libraries of src/ reads the environment or the current directory behind
 * its caller's back (src/host/host-git.c hands the caller's environment to
 * the host's git, which is what it asks); what it judged with is what it was
 * given.
 *
 * A field is NULL when the input is missing or unusable; the function that
 * needs it says so then, as it would have when reading it itself.
 */
typedef struct HostContext {
        char *home;             /* $HOME when absolute, else the passwd entry; normalised */
        char *xdg_config_home;  /* $XDG_CONFIG_HOME when absolute, else ~/.config; normalised */
        char *xdg_data_home;    /* $XDG_DATA_HOME when absolute, else ~/.local/share; normalised */
        char *xdg_runtime_dir;  /* $XDG_RUNTIME_DIR as set; NULL when unset or empty */
        char *config_env;       /* $LAZARET_CONFIG as set; NULL when unset or empty */
        char *cwd;              /* getcwd(); NULL when it failed, with cwd_errno */
        int cwd_errno;
} HostContext;

/* Reads the environment and the current directory. Fails only with -ENOMEM. */
int host_context_from_environment(HostContext *ret);
void host_context_done(HostContext *hc);
int host_context_copy(const HostContext *hc, HostContext *ret);
