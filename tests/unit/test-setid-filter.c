/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The set-ID filter, loaded in the test process (criterion runs each test
 * in its own process): every call that would give a file S_ISUID or
 * S_ISGID fails with EPERM and changes nothing; ordinary modes still work.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <signal.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "setid-filter.h"
#include "setid-responder.h"

static char dir[] = "/tmp/lazaret-setid-XXXXXX";
static int dfd = -1;
static pid_t responder = -1;

/* The responder, as the supervisor runs it: forked before the filter, the
 * listener sent over a socket. anchored: the test directory's file system
 * is a State Anchor to it. */
static void setup_with(bool anchored) {
        int notify_fd = -1, fd, sock[2];
        AnchorId id;

        cr_assert_not_null(mkdtemp(dir));
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        cr_assert_geq(dfd, 0);
        cr_assert_eq(anchor_id_of_fd(dfd, &id), 0);
        /* A set-user-ID file made before the filter: the host's own. */
        fd = openat(dfd, "hostsuid", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
        cr_assert_geq(fd, 0);
        cr_assert_eq(fchmod(fd, 04755), 0);
        close(fd);
        cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sock), 0);
        responder = fork();
        cr_assert_geq(responder, 0);
        if (responder == 0) {
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                close(sock[0]);
                if (setid_listener_receive(sock[1], &notify_fd) < 0)
                        _exit(2);
                _exit(setid_responder_serve(notify_fd, &id, anchored ? 1 : 0) < 0 ? 1 : 0);
        }
        close(sock[1]);
        /* Any user may load a filter once NO_NEW_PRIVS is set. */
        cr_assert_eq(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
        /* The filter sets the umask it keeps, whatever the caller had. */
        umask(0);
        cr_assert_eq(setid_filter_load(&notify_fd), 0);
        cr_assert_geq(notify_fd, 0);
        cr_assert_eq(setid_listener_send(sock[0], notify_fd), 0);
        close(sock[0]);
        close(notify_fd);
}

static void setup(void) {
        setup_with(false);
}

static void setup_anchored(void) {
        setup_with(true);
}

static void teardown(void) {
        char cmd[128];
        int r;

        if (responder > 0) {
                (void) kill(responder, SIGKILL);
                (void) waitpid(responder, NULL, 0);
        }

        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        r = system(cmd);
        cr_expect_eq(r, 0);
}

static mode_t mode_of(const char *name) {
        struct stat st;

        cr_assert_eq(fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW), 0, "%s: %s", name, strerror(errno));
        return st.st_mode & 07777;
}

static void make_file(const char *name, mode_t mode) {
        int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);

        cr_assert_geq(fd, 0, "%s: %s", name, strerror(errno));
        close(fd);
        cr_assert_eq(fchmodat(dfd, name, mode, 0), 0);
}

#define assert_eperm(call) do {                                                  \
                errno = 0;                                                      \
                cr_assert_eq((call), -1, #call " succeeded");                   \
                cr_assert_eq(errno, EPERM, #call ": %s", strerror(errno));      \
        } while (0)

TestSuite(setid_filter, .init = setup, .fini = teardown);

Test(setid_filter, chmod_family) {
        char path[256];
        int fd;

        make_file("f", 0644);
        snprintf(path, sizeof(path), "%s/f", dir);
        fd = openat(dfd, "f", O_RDONLY | O_CLOEXEC);
        cr_assert_geq(fd, 0);

        assert_eperm(chmod(path, 04755));
        assert_eperm(chmod(path, 02755));
        assert_eperm(chmod(path, 06755));
        assert_eperm(fchmodat(dfd, "f", 04755, 0));
        assert_eperm(fchmodat(dfd, "f", 02000, 0));
        /* fchmodat2 (Linux 6.6): by number where the C library lacks it. */
        errno = 0;
        cr_assert_eq(syscall(452, dfd, "f", 04755, 0), -1);
        cr_assert(errno == EPERM, "fchmodat2: %s", strerror(errno));
        cr_assert_eq(mode_of("f"), 0644);

        /* Write for group or others (issue 15, attack 4). */
        assert_eperm(chmod(path, 0777));
        assert_eperm(chmod(path, 0646));
        assert_eperm(fchmod(fd, 0664));
        assert_eperm(fchmodat(dfd, "f", 0666, 0));
        assert_eperm(fchmodat(dfd, "f", 01777, 0));
        errno = 0;
        cr_assert_eq(syscall(452, dfd, "f", 0602, 0), -1);
        cr_assert(errno == EPERM, "fchmodat2: %s", strerror(errno));
        cr_assert_eq(mode_of("f"), 0644);

        /* No false positives: the sticky bit and plain modes pass. */
        cr_assert_eq(chmod(path, 0755), 0);
        cr_assert_eq(mode_of("f"), 0755);
        cr_assert_eq(fchmod(fd, 0600), 0);
        cr_assert_eq(fchmodat(dfd, "f", 01755, 0), 0);
        cr_assert_eq(mode_of("f"), 01755);
        cr_assert_eq(syscall(452, dfd, "f", 0640, 0), 0);
        cr_assert_eq(mode_of("f"), 0640);
        close(fd);
}

Test(setid_filter, creation) {
        char path[256];
        int fd;

        assert_eperm(openat(dfd, "a", O_WRONLY | O_CREAT | O_CLOEXEC, 04755));
        assert_eperm(openat(dfd, "a", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 02755));
        snprintf(path, sizeof(path), "%s/a", dir);
        assert_eperm((int) syscall(SYS_open, path, O_WRONLY | O_CREAT | O_CLOEXEC, 04700));
        assert_eperm((int) syscall(SYS_creat, path, 06700));
        assert_eperm(openat(dfd, ".", O_WRONLY | O_TMPFILE | O_CLOEXEC, 04755));
        assert_eperm(mknodat(dfd, "a", S_IFREG | 04755, 0));
        assert_eperm(mknodat(dfd, "a", S_IFIFO | 02644, 0));
        assert_eperm(mkdirat(dfd, "a", 04755));
        cr_assert_eq(faccessat(dfd, "a", F_OK, AT_SYMLINK_NOFOLLOW), -1, "a was created");

        /* Without O_CREAT or O_TMPFILE the mode is not looked at. */
        make_file("b", 0644);
        fd = openat(dfd, "b", O_RDONLY | O_CLOEXEC, 04755);
        cr_assert_geq(fd, 0);
        close(fd);

        /* Ordinary creation still works. */
        fd = openat(dfd, "c", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
        cr_assert_geq(fd, 0);
        close(fd);
        cr_assert_eq(mknodat(dfd, "p", S_IFIFO | 0600, 0), 0);
        cr_assert_eq(mkdirat(dfd, "d", 0700), 0);
        cr_assert_eq(mkdirat(dfd, "t", 01777), 0);
        /* S_ISGID in mkdir's mode passes (gVisor asks for it inside a
         * set-group-ID parent) and Linux does not keep it. */
        cr_assert_eq(mkdirat(dfd, "g", 02755), 0);
        cr_assert_eq(mode_of("g") & 06000, 0);
}

/* fchmod, gVisor's call: the responder applies the mode without a new set-ID bit. */
Test(setid_filter, fchmod_stripped) {
        int fd, host;

        make_file("f", 0600);
        fd = openat(dfd, "f", O_RDONLY | O_CLOEXEC);
        cr_assert_geq(fd, 0);
        cr_assert_eq(fchmod(fd, 04755), 0, "fchmod 04755: %s", strerror(errno));
        cr_assert_eq(mode_of("f"), 0755);
        cr_assert_eq(fchmod(fd, 02711), 0);
        cr_assert_eq(mode_of("f"), 0711);
        cr_assert_eq(fchmod(fd, 06700), 0);
        cr_assert_eq(mode_of("f"), 0700);
        /* dpkg: created with mode 0, then its set-ID mode. */
        close(fd);
        fd = openat(dfd, "dpkg-new", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0);
        cr_assert_geq(fd, 0);
        cr_assert_eq(fchmod(fd, 04755), 0);
        cr_assert_eq(mode_of("dpkg-new"), 0755);
        /* Write for group or others stays refused, with or without a set-ID bit. */
        assert_eperm(fchmod(fd, 04775));
        assert_eperm(fchmod(fd, 0664));
        cr_assert_eq(mode_of("dpkg-new"), 0755);
        close(fd);

        /* A bit the file has is kept when asked for, dropped when not. */
        host = openat(dfd, "hostsuid", O_RDONLY | O_CLOEXEC);
        cr_assert_geq(host, 0);
        cr_assert_eq(fchmod(host, 04755), 0);
        cr_assert_eq(mode_of("hostsuid"), 04755);
        cr_assert_eq(fchmod(host, 04750), 0);
        cr_assert_eq(mode_of("hostsuid"), 04750);
        cr_assert_eq(fchmod(host, 0750), 0);
        cr_assert_eq(mode_of("hostsuid"), 0750);
        errno = 0;
        cr_assert_eq(fchmod(-1, 04755), -1);
        cr_assert_eq(errno, EBADF, "fchmod of no fd: %s", strerror(errno));
        close(host);
}

/* A symbolic link's attributes on an O_PATH fd: no data instead of EBADF. */
Test(setid_filter, xattr_of_opath) {
        char buf[64];
        int fd;

        cr_assert_eq(symlinkat("target", dfd, "l"), 0);
        fd = openat(dfd, "l", O_PATH | O_NOFOLLOW | O_CLOEXEC);
        cr_assert_geq(fd, 0);
        errno = 0;
        cr_assert_eq(fgetxattr(fd, "security.selinux", buf, sizeof(buf)), -1);
        cr_assert_eq(errno, ENODATA, "fgetxattr: %s", strerror(errno));
        cr_assert_eq(flistxattr(fd, buf, sizeof(buf)), 0);
        close(fd);

        /* Any other fd: the call itself. */
        make_file("f", 0644);
        fd = openat(dfd, "f", O_RDONLY | O_CLOEXEC);
        cr_assert_geq(fd, 0);
        errno = 0;
        cr_assert_eq(fgetxattr(fd, "user.lazaret-none", buf, sizeof(buf)), -1);
        cr_assert(errno == ENODATA || errno == EOPNOTSUPP, "fgetxattr: %s", strerror(errno));
        if (fsetxattr(fd, "user.lazaret", "v", 1, 0) == 0) {
                cr_assert_eq(fgetxattr(fd, "user.lazaret", buf, sizeof(buf)), 1);
                cr_assert_gt(flistxattr(fd, buf, sizeof(buf)), 0);
        }
        errno = 0;
        cr_assert_eq(fgetxattr(-1, "user.x", buf, sizeof(buf)), -1);
        cr_assert_eq(errno, EBADF);
        close(fd);
}

/* After the filter, the umask is 022 and stays so (umask(2) returns 0). */
Test(setid_filter, umask_pinned) {
        FILE *f;
        char line[128];
        bool seen = false;
        int fd;

        cr_assert_eq(umask(0), 0);
        cr_assert_eq(umask(0077), 0);
        f = fopen("/proc/self/status", "re");
        cr_assert_not_null(f);
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, "Umask:", 6) == 0) {
                        cr_assert_str_eq(line, "Umask:\t0022\n");
                        seen = true;
                }
        fclose(f);
        cr_assert(seen, "no Umask line in /proc/self/status");

        /* Creation with group and other write: the host kernel masks them. */
        fd = openat(dfd, "open", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        cr_assert_geq(fd, 0);
        close(fd);
        cr_assert_eq(mode_of("open"), 0644);
        cr_assert_eq(mkdirat(dfd, "opendir", 0777), 0);
        cr_assert_eq(mode_of("opendir"), 0755);
        cr_assert_eq(mknodat(dfd, "fifo", S_IFIFO | 0666, 0), 0);
        cr_assert_eq(mode_of("fifo"), 0644);
}

/* Owner and group, as one number to compare. */
static uint64_t owner_of(const char *name) {
        struct stat st;

        cr_assert_eq(fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW), 0, "%s: %s", name, strerror(errno));
        return (uint64_t) st.st_uid << 32 | st.st_gid;
}

/* Every chown returns 0 and does nothing (spec C24). */
Test(setid_filter, chown_ignored) {
        char path[256];
        uint64_t before;
        int fd;

        make_file("f", 0644);
        before = owner_of("f");
        snprintf(path, sizeof(path), "%s/f", dir);
        fd = openat(dfd, "f", O_RDONLY | O_CLOEXEC);
        cr_assert_geq(fd, 0);

        cr_assert_eq(syscall(SYS_chown, path, 1234, 1234), 0);
        cr_assert_eq(syscall(SYS_lchown, path, 1234, -1), 0);
        cr_assert_eq(fchown(fd, -1, 1234), 0);
        cr_assert_eq(fchownat(dfd, "f", 1234, 0, 0), 0);
        cr_assert_eq(fchownat(dfd, "f", 0, 1234, AT_SYMLINK_NOFOLLOW), 0);
        /* Go passes -1 sign-extended to 64 bits; a low half that is not 0 is never hidden. */
        cr_assert_eq(syscall(SYS_fchownat, dfd, "f", 0xffffffff00000005UL, 0UL, 0), 0);
        cr_assert_eq(owner_of("f"), before);
        close(fd);

        /* Even where nothing exists: the call never reaches the kernel. */
        cr_assert_eq(fchownat(dfd, "missing", 1234, 1234, 0), 0);
        /* chown to 0:0 (the developer, in the sandbox's namespace) too, and
         * chown(-1, -1): neither reaches the kernel. */
        cr_assert_eq(fchownat(dfd, "missing", 0, 0, 0), 0);
        cr_assert_eq(syscall(SYS_chown, "/nonexistent/x", 0, 0), 0);
        cr_assert_eq(syscall(SYS_lchown, "/nonexistent/x", -1, -1), 0);
        cr_assert_eq(fchown(-1, 0, 0), 0);
}

/*
 * On a State Anchor (issue 33), the file system the responder was given:
 * gVisor's calls, fchmod and fchownat(fd, "", AT_EMPTY_PATH), are applied
 * as asked; calls by path still follow the host rules.
 */
TestSuite(setid_anchor, .init = setup_anchored, .fini = teardown);

Test(setid_anchor, fchmod_as_asked) {
        static const mode_t modes[] = { 01777, 02775, 04755, 06750, 0664, 0755 };
        int fd;

        cr_assert_eq(mkdirat(dfd, "d", 0755), 0);
        fd = openat(dfd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        cr_assert_geq(fd, 0);
        for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
                cr_assert_eq(fchmod(fd, modes[i]), 0, "fchmod %04o: %s", (unsigned) modes[i], strerror(errno));
                cr_assert_eq(mode_of("d"), modes[i]);
        }
        close(fd);
        /* By path: the host rules, whatever the file system. */
        assert_eperm(fchmodat(dfd, "d", 0777, 0));
        assert_eperm(fchmodat(dfd, "d", 02755, 0));
        cr_assert_eq(mode_of("d"), 0755);
}

Test(setid_anchor, fchown_applied) {
        uint64_t before;
        int fd;

        make_file("f", 0644);
        before = owner_of("f");
        fd = openat(dfd, "f", O_RDONLY | O_CLOEXEC);
        cr_assert_geq(fd, 0);
        /* A chown by path, or fchownat with a name: 0, nothing changed. */
        cr_assert_eq(fchownat(dfd, "f", 1234, 1234, 0), 0);
        cr_assert_eq(fchownat(dfd, "f", 1234, 1234, AT_EMPTY_PATH), 0);
        cr_assert_eq(owner_of("f"), before);
        if (geteuid() != 0) {
                /* Without CAP_CHOWN only the file's own owner and groups: still applied. */
                cr_assert_eq(fchown(fd, (uid_t) -1, getegid()), 0);
                close(fd);
                return;
        }
        cr_assert_eq(fchown(fd, 1234, 1235), 0, "fchown: %s", strerror(errno));
        cr_assert_eq(owner_of("f"), (uint64_t) 1234 << 32 | 1235);
        cr_assert_eq(fchownat(fd, "", 105, (gid_t) -1, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW), 0);
        cr_assert_eq(owner_of("f"), (uint64_t) 105 << 32 | 1235);
        /* Go passes -1 sign-extended; the low half counts. */
        cr_assert_eq(syscall(SYS_fchownat, fd, "", 0xffffffff00000000UL | 107, 0xffffffffffffffffUL, AT_EMPTY_PATH), 0);
        cr_assert_eq(owner_of("f"), (uint64_t) 107 << 32 | 1235);
        close(fd);
}

Test(setid_filter, unseen_modes) {
        /* openat2 keeps its mode where seccomp cannot read it. */
        errno = 0;
        cr_assert_eq(syscall(SYS_openat2, dfd, "x", NULL, 0), -1);
        cr_assert_eq(errno, ENOSYS);
        errno = 0;
        cr_assert_eq(syscall(SYS_io_uring_setup, 1, NULL), -1);
        cr_assert_eq(errno, ENOSYS);
}

#if defined(__x86_64__)
/*
 * Whether this kernel runs i386 system calls made with int $0x80 at all:
 * some (ia32_emulation=0, confidential and some paravirtualised guests)
 * answer with a general protection fault, a SIGSEGV. What a test may assume
 * of the kernel: nothing about foreign ABIs. So it is probed once, before
 * any filter exists (a constructor runs before criterion forks the test's
 * process, whose setup loads the filter), in a child of its own that calls
 * i386's getpid (20): a child killed by SIGSEGV means "not offered", a
 * child that got its own pid means "offered". Probing under the filter
 * cannot tell the two apart from a refusal.
 */
enum { I386_UNKNOWN, I386_ABSENT, I386_OFFERED };
static int i386_abi = I386_UNKNOWN;

__attribute__((constructor)) static void probe_i386_abi(void) {
        pid_t pid = fork();
        int status;

        if (pid < 0)
                return;
        if (pid == 0) {
                long ret;
                __asm__ volatile ("int $0x80" : "=a" (ret) : "a" (20L) : "memory");
                _exit(ret == (long) getpid() ? 0 : 1);
        }
        if (waitpid(pid, &status, 0) != pid)
                return;
        if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV)
                i386_abi = I386_ABSENT;
        else if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
                i386_abi = I386_OFFERED;
}

/* An int $0x80 call under the filter, in a child: its result, or -ESRCH if it faulted. */
static long i386_call_in_child(long nr, long a, long b) {
        int pipefd[2];
        pid_t pid;
        long ret = 0;
        int status;

        cr_assert_eq(pipe2(pipefd, O_CLOEXEC), 0);
        pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
                __asm__ volatile ("int $0x80" : "=a" (ret) : "a" (nr), "b" (a), "c" (b) : "memory");
                _exit(write(pipefd[1], &ret, sizeof(ret)) == sizeof(ret) ? 0 : 1);
        }
        close(pipefd[1]);
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        if (WIFSIGNALED(status)) {
                close(pipefd[0]);
                cr_assert_eq(WTERMSIG(status), SIGSEGV, "int $0x80 child died of signal %d", WTERMSIG(status));
                return -ESRCH;
        }
        cr_assert_eq(read(pipefd[0], &ret, sizeof(ret)), (ssize_t) sizeof(ret));
        close(pipefd[0]);
        return ret;
}

Test(setid_filter, other_abis) {
        char path[256];
        long ret;

        make_file("f", 0644);
        snprintf(path, sizeof(path), "%s/f", dir);

        /* x32's chmod (whether or not the kernel offers x32). */
        ret = syscall(0x40000000L | 90, path, 04755);
        cr_assert_eq(ret, -1);
        cr_assert_eq(errno, EPERM);

        /* i386 through int $0x80, with the path below 4 GiB. Where the
         * kernel offers the ABI, the filter refuses every call of it, getpid
         * included (a foreign architecture is EPERM); where it does not, the
         * call still faults under the filter, and no program can reach the
         * kernel through it either. */
        cr_assert_neq(i386_abi, I386_UNKNOWN, "the i386 probe before the filter did not conclude");
        char *low = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
        cr_assert_neq(low, MAP_FAILED);
        strcpy(low, path);
        if (i386_abi == I386_ABSENT) {
                fprintf(stderr, "other_abis: int $0x80 faults on this kernel (no i386 ABI): checked that it still faults\n");
                cr_assert_eq(i386_call_in_child(20, 0, 0), -ESRCH);
                cr_assert_eq(i386_call_in_child(15, (long) (unsigned long) low, 04755), -ESRCH);
        } else {
                ret = i386_call_in_child(20, 0, 0);
                cr_assert_eq(ret, -EPERM, "int $0x80 getpid under the filter returned %ld", ret);
                ret = i386_call_in_child(15, (long) (unsigned long) low, 04755);
                cr_assert_eq(ret, -EPERM, "int $0x80 chmod returned %ld", ret);
        }
        cr_assert_eq(mode_of("f"), 0644);
}
#endif
