/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bundle.h"
#include "cleanup.h"
#include "fs-util.h"
#include "git-sentry.h"
#include "net-policy.h"
#include "oci-spec.h"
#include "path-util.h"
#include "util.h"

int bundle_write(const BundleParams *p, char **ret_error) {
        const Domain *d = p->domain;
        _cleanup_free_ char *json = NULL, *cfg = NULL, *init_src = NULL, *init_dst = NULL, *terminfo = NULL,
                            *error = NULL;
        _cleanup_free_ char *gitconfig = NULL, *xdggit = NULL, *resolv = NULL;
        char port[16];
        _cleanup_(git_sentry_done) GitSentry git = {};
        _cleanup_free_ OciMount *mounts = NULL;
        ResolvedVolume *vols = NULL;
        size_t n_vols = 0, n = 0;
        static const char *const rw[] = { "rbind", "rw", NULL };
        static const char *const ro[] = { "rbind", "ro", NULL };
        int r;

        /* The control directory is read inside by the sandbox's processes. */
        r = mkdir_mode(p->control_dir, 0755);
        if (r < 0)
                return errorf(ret_error, r, "cannot create %s: %s", p->control_dir, strerror(-r));
        terminfo = path_join(p->control_dir, "terminfo");
        init_dst = path_join(p->control_dir, "init");
        init_src = path_join(LIBEXECDIR, "lazaret-init");
        if (!terminfo || !init_dst || !init_src)
                return -ENOMEM;
        r = mkdir_mode(terminfo, 0755);
        if (r < 0)
                return errorf(ret_error, r, "cannot create %s: %s", terminfo, strerror(-r));
        r = copy_file(getenv("LAZARET_INIT") ?: init_src, init_dst, 0755);
        if (r < 0)
                return errorf(ret_error, r, "cannot install %s into the sandbox: %s", init_src, strerror(-r));
        /* The resolver: the helper's DNS address. */
        resolv = path_join(p->control_dir, "resolv.conf");
        if (!resolv)
                return -ENOMEM;
        r = write_file(resolv, "# Written by Lazaret: the network helper's DNS forwarder.\nnameserver " NET_DNS_STR "\n", 0644);
        if (r < 0)
                return errorf(ret_error, r, "cannot write %s: %s", resolv, strerror(-r));

        /* SR-4: the Git Sentry's mounts follow the workspace bind. */
        gitconfig = d->host.home ? path_join(d->host.home, ".gitconfig") : NULL;
        xdggit = d->host.xdg_config_home ? path_join(d->host.xdg_config_home, "git/config") : NULL;
        r = git_sentry_prepare(&(GitSentryParams) {
                                       .workspace = d->workspace,
                                       .sandbox_workspace = SANDBOX_WORKSPACE,
                                       .domain_dir = d->domain_dir,
                                       .home = d->host.home,
                                       .global_configs = (const char *[]) { "/etc/gitconfig", gitconfig ?: "/etc/gitconfig",
                                                                            xdggit ?: "/etc/gitconfig", NULL },
                               }, &git, ret_error);
        if (r < 0)
                return r;

        /* Holes 3/4: judged again, by fd, right before runsc is told the paths (spec §6). */
        r = domain_resolve_mounts(d, true, &vols, &n_vols, &error);
        if (r < 0)
                return errorf(ret_error, r, "%s", error ?: "cannot resolve volumes");
        mounts = calloc(3 + git.n_mounts + n_vols, sizeof(OciMount));
        if (!mounts) {
                resolved_volumes_free(vols, n_vols);
                return -ENOMEM;
        }
        mounts[n++] = (OciMount) { SANDBOX_WORKSPACE, "bind", d->workspace, rw };
        for (size_t i = 0; i < git.n_mounts; i++)
                mounts[n++] = git.mounts[i];
        mounts[n++] = (OciMount) { SANDBOX_CONTROL_MOUNT, "bind", p->control_dir, ro };
        for (size_t i = 0; i < n_vols; i++)
                mounts[n++] = (OciMount) { vols[i].container, "bind", vols[i].host, vols[i].mode == VOLUME_RW ? rw : ro };
        /* Last, so that it is on top of whatever a volume brings to /etc. */
        mounts[n++] = (OciMount) { "/etc/resolv.conf", "bind", resolv, ro };

        snprintf(port, sizeof(port), "%u", p->canary_port);

        /* Writable, but only through runsc's root overlay, whose upper layer
         * lives in a Domain-owned directory (--overlay2=root:dir=): the
         * prepared lower on the host is never written. */
        OciContainer c = {
                .rootfs = p->rootfs,
                .rootfs_readonly = false,
                .hostname = d->profile->name,
                /* The init's first act is the network attestation's probe. */
                .args = (char *[]) { (char *) SANDBOX_CONTROL_MOUNT "/init", (char *) "--attest",
                                     (char *) NET_CANARY_ALLOWED_STR, (char *) p->probe_denied, port, NULL },
                .env = p->env,
                .cwd = "/",
                .mounts = mounts,
                .n_mounts = n,
                .netns_path = p->netns_path,
                .tmp_size = d->profile->limits.tmp_size,
                .rlimits = { .nproc = d->profile->limits.processes, .as = d->profile->limits.address_space },
        };
        r = oci_container_json(&c, &json);
        resolved_volumes_free(vols, n_vols);
        if (r < 0)
                return errorf(ret_error, r, "cannot build the OCI specification: %s", strerror(-r));
        cfg = path_join(p->bundle_dir, "config.json");
        if (!cfg)
                return -ENOMEM;
        r = write_file(cfg, json, 0600);
        if (r < 0)
                return errorf(ret_error, r, "cannot write %s: %s", cfg, strerror(-r));
        return 0;
}
