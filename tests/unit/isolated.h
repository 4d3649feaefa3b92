/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Test bodies that need namespaces of their own. unshare(CLONE_NEWUSER)
 * refuses a multithreaded caller, and Criterion's test process has threads,
 * so the body runs in a child forked from it: a fresh user namespace whose
 * root is mapped to the caller (plus the namespaces in extra), / made
 * recursively private when a mount namespace is among them, then setup (if
 * any) and the body. The child checks with CHECK() and reports by its exit
 * status: 0 passed, 77 no namespaces on this machine (the test is skipped),
 * anything else failed (the reason is on stderr).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHECK(cond, ...)                                                                        \
        do {                                                                                    \
                if (!(cond)) {                                                                  \
                        fprintf(stderr, "%s:%d: check failed: %s:", __FILE__, __LINE__, #cond); \
                        fprintf(stderr, " " __VA_ARGS__);                                       \
                        fputc('\n', stderr);                                                    \
                        _exit(1);                                                               \
                }                                                                               \
        } while (0)

#define CHECK_EQ(a, b, ...) CHECK((a) == (b), "" __VA_ARGS__)
#define CHECK_STR(a, b, ...) CHECK(strcmp((a), (b)) == 0, "" __VA_ARGS__)

static inline void isolated_write(const char *path, const char *text) {
        int fd = open(path, O_WRONLY | O_CLOEXEC);

        CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
        CHECK(write(fd, text, strlen(text)) == (ssize_t) strlen(text), "write %s: %s", path, strerror(errno));
        close(fd);
}

static inline void isolated_enter(int extra) {
        char map[64];
        uid_t uid = getuid();
        gid_t gid = getgid();

        if (unshare(CLONE_NEWUSER | extra) < 0) {
                CHECK(errno == EPERM || errno == ENOSPC || errno == EUSERS || errno == ENOSYS, "unshare: %s",
                      strerror(errno));
                fprintf(stderr, "cannot create the namespaces here: %s\n", strerror(errno));
                _exit(77);
        }
        isolated_write("/proc/self/setgroups", "deny");
        snprintf(map, sizeof(map), "0 %u 1", (unsigned) uid);
        isolated_write("/proc/self/uid_map", map);
        snprintf(map, sizeof(map), "0 %u 1", (unsigned) gid);
        isolated_write("/proc/self/gid_map", map);
        if (extra & CLONE_NEWNS)
                CHECK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0, "%s", strerror(errno));
}

static inline void run_isolated_with(int extra, void (*setup)(void), void (*body)(void)) {
        int status;
        pid_t pid;

        fflush(NULL);
        pid = fork();
        cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
        if (pid == 0) {
                isolated_enter(extra);
                if (setup)
                        setup();
                body();
                fflush(NULL);
                _exit(0);
        }
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
                cr_skip_test("no user namespace (with the namespaces this test needs) on this machine");
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the test failed in its namespaces (status 0x%x); see its stderr",
                  status);
}
