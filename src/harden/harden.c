/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/capability.h>
#include <seccomp.h>

#include "harden.h"

int harden_drop_privileges(void) {
        return harden_drop_privileges_keep(0);
}

int harden_drop_privileges_keep(uint64_t keep) {
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct d[2] = {
                { .effective = (uint32_t) keep, .permitted = (uint32_t) keep },
                { .effective = (uint32_t) (keep >> 32), .permitted = (uint32_t) (keep >> 32) },
        };

        for (unsigned long cap = 0; cap <= 63; cap++)
                if (!(keep & (UINT64_C(1) << cap)) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL &&
                    errno != EPERM)
                        return -errno;
        if (syscall(SYS_capset, &h, d) < 0)
                return -errno;
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                return -errno;
        return 0;
}

int harden_load_allowlist(const int *nrs, size_t n) {
        scmp_filter_ctx ctx;
        int r = 0;

        ctx = seccomp_init(SCMP_ACT_KILL_PROCESS);
        if (!ctx)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nrs[i], 0);
                if (r < 0 && r != -EDOM && r != -EFAULT)
                        goto finish;
        }
        r = seccomp_load(ctx);
finish:
        seccomp_release(ctx);
        return r;
}
