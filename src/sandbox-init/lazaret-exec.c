/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lazaret-exec: starts every Client Session's command. The coordinator's
 * `runsc exec` runs /run/lazaret/exec COMMAND [ARG...]; it refuses FIFOs
 * for the session's processes (fifo-filter.h) and executes COMMAND, looked
 * up in PATH as execvp(3) does (a file that is no executable format runs
 * under /bin/sh), in its place, so that the session's inner PID is the
 * command's. A command that cannot be executed is reported as a shell
 * would: "COMMAND could not be started in the sandbox (REASON)" on standard
 * error, status 127 when it was not found, 126 otherwise.
 *
 * It has no C library: its own entry point, raw system calls (x86-64 and
 * AArch64), no heap, one write(2) at most. Inside gVisor (20240729,
 * systrap) an execve(2) from a process that glibc's static start-up ran in
 * cost 8 to 10 ms more than one from a process that ran none; measured as
 * the whole `runsc exec` of /bin/true, medians of 30 to 40: 32.5 ms
 * direct, 43 ms through `lazaret-init --exec` (its place until then), 34 ms
 * through a program like this one (spec section 6.4, "Where a warm launch
 * goes"). The pages the process touched, its heap, rseq, its robust list
 * and its thread pointer were each ruled out; the cause inside gVisor was
 * not found, so the process that executes the command simply runs no C
 * library start-up.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdnoreturn.h>

#include <asm/unistd.h>
#include <linux/errno.h>
#include <linux/limits.h>
#include <linux/prctl.h>
#include <linux/seccomp.h>

#include "fifo-filter.h"

/* A script's argument vector is built on the stack; the coordinator passes at most SESSION_MAX_ARGV (1024). */
#define SCRIPT_ARGV_MAX 4096
#define SHELL "/bin/sh"
/* glibc's execvp(3) without PATH (confstr(_CS_PATH)). */
#define DEFAULT_PATH "/bin:/usr/bin"

noreturn void exec_main(long *sp);

#if defined(__x86_64__)
__asm__(".text\n"
        ".global _start\n"
        ".type _start, @function\n"
        "_start:\n"
        "        xor %ebp, %ebp\n"
        "        mov %rsp, %rdi\n"
        "        and $-16, %rsp\n"
        "        call exec_main\n"
        "        hlt\n");

static long sys5(long n, long a, long b, long c, long d, long e) {
        register long r10 __asm__("r10") = d;
        register long r8 __asm__("r8") = e;
        long r;

        __asm__ volatile("syscall"
                         : "=a"(r)
                         : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8)
                         : "rcx", "r11", "memory");
        return r;
}
#elif defined(__aarch64__)
__asm__(".text\n"
        ".global _start\n"
        ".type _start, %function\n"
        "_start:\n"
        "        mov x29, #0\n"
        "        mov x30, #0\n"
        "        mov x0, sp\n"
        "        bl exec_main\n"
        "        brk #0\n");

static long sys5(long n, long a, long b, long c, long d, long e) {
        register long x8 __asm__("x8") = n;
        register long x0 __asm__("x0") = a;
        register long x1 __asm__("x1") = b;
        register long x2 __asm__("x2") = c;
        register long x3 __asm__("x3") = d;
        register long x4 __asm__("x4") = e;

        __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4) : "memory", "cc");
        return x0;
}
#else
#  error "lazaret-exec: unknown architecture"
#endif

static long sys3(long n, long a, long b, long c) {
        return sys5(n, a, b, c, 0, 0);
}

static noreturn void exit_now(int status) {
        for (;;)
                (void) sys3(__NR_exit_group, status, 0, 0);
}

static size_t length(const char *s) {
        size_t n = 0;

        while (s[n])
                n++;
        return n;
}

/* Appends s to buf (size BUF_MAX, *n used), as much as fits. */
#define BUF_MAX 8192
static void put(char *buf, size_t *n, const char *s) {
        while (*s && *n < BUF_MAX - 1)
                buf[(*n)++] = *s++;
}

/* glibc's words for what execve(2) and prctl(2) may say; "error N" for anything else. */
static const char *reason(int e, char num[static 24]) {
        static const char prefix[] = "error ";
        size_t i = 23;

        switch (e) {
        case ENOENT:       return "No such file or directory";
        case EACCES:       return "Permission denied";
        case ENOEXEC:      return "Exec format error";
        case ENOTDIR:      return "Not a directory";
        case EISDIR:       return "Is a directory";
        case ELOOP:        return "Too many levels of symbolic links";
        case ENAMETOOLONG: return "File name too long";
        case E2BIG:        return "Argument list too long";
        case ENOMEM:       return "Cannot allocate memory";
        case ETXTBSY:      return "Text file busy";
        case EPERM:        return "Operation not permitted";
        case EINVAL:       return "Invalid argument";
        case EFAULT:       return "Bad address";
        case EIO:          return "Input/output error";
        case ELIBBAD:      return "Accessing a corrupted shared library";
        }
        num[i] = 0;
        do
                num[--i] = (char) ('0' + e % 10);
        while ((e /= 10) > 0);
        for (size_t k = sizeof(prefix) - 1; k > 0; k--)
                num[--i] = prefix[k - 1];
        return num + i;
}

/* The one line a shell would print, then the shell's status. */
static noreturn void fail(const char *command, const char *what, int e) {
        char buf[BUF_MAX], num[24];
        size_t n = 0;

        put(buf, &n, command);
        put(buf, &n, " could not be started in the sandbox (");
        put(buf, &n, what);
        put(buf, &n, reason(e, num));
        put(buf, &n, ")");
        buf[n++] = '\n';
        (void) sys3(__NR_write, 2, (long) buf, (long) n);
        exit_now(e == ENOENT ? 127 : 126);
}

static const char *env_get(char **envp, const char *name) {
        size_t l = length(name);

        for (; *envp; envp++) {
                size_t i = 0;

                while (i < l && (*envp)[i] == name[i])
                        i++;
                if (i == l && (*envp)[l] == '=')
                        return *envp + l + 1;
        }
        return NULL;
}

/* execve(2), and for a file that is no executable format, /bin/sh with it (as execvp(3) does); -errno. */
static long try_exec(const char *file, char **argv, char **envp) {
        const char *script[SCRIPT_ARGV_MAX + 2];
        size_t argc = 0;
        long r;

        r = sys3(__NR_execve, (long) file, (long) argv, (long) envp);
        if (r != -ENOEXEC)
                return r;
        while (argv[argc])
                argc++;
        if (argc > SCRIPT_ARGV_MAX)
                return -E2BIG;
        script[0] = SHELL;
        script[1] = file;
        for (size_t i = 1; i <= argc; i++)      /* with the final NULL */
                script[i + 1] = argv[i];
        r = sys3(__NR_execve, (long) SHELL, (long) script, (long) envp);
        return r;
}

void exec_main(long *sp) {
        long argc = sp[0];
        char **argv = (char **) (sp + 1), **envp = argv + argc + 1, **cmd = argv + 1;
        const char *file, *path;
        char buf[PATH_MAX];
        bool eacces = false;
        size_t flen;
        long r;

        if (argc < 2 || !cmd[0][0]) {
                static const char usage[] = "lazaret-exec: usage: exec COMMAND [ARG...]\n";
                (void) sys3(__NR_write, 2, (long) usage, sizeof(usage) - 1);
                exit_now(2);
        }
        file = cmd[0];

        /* Fail closed: no session runs without the filter. */
        r = sys5(__NR_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        if (r >= 0)
                r = sys3(__NR_prctl, PR_SET_SECCOMP, SECCOMP_MODE_FILTER, (long) &fifo_filter);
        if (r < 0)
                fail(file, "cannot install its seccomp filter: ", (int) -r);

        for (const char *s = file; *s; s++)
                if (*s == '/')
                        fail(file, "", (int) -try_exec(file, cmd, envp));

        /* Each PATH entry in turn, an empty one the working directory, as execvp(3) does. */
        path = env_get(envp, "PATH") ?: DEFAULT_PATH;
        flen = length(file);
        for (const char *p = path;;) {
                const char *end = p;
                size_t n;

                while (*end && *end != ':')
                        end++;
                n = (size_t) (end - p);
                if (n + 1 + flen < sizeof(buf)) {
                        for (size_t i = 0; i < n; i++)
                                buf[i] = p[i];
                        if (n > 0)
                                buf[n++] = '/';
                        for (size_t i = 0; i <= flen; i++)
                                buf[n + i] = file[i];
                        r = try_exec(buf, cmd, envp);
                        switch (-r) {
                        case EACCES:
                                eacces = true;
                                break;
                        case ENOENT: case ESTALE: case ENOTDIR: case ENODEV: case ETIMEDOUT:
                                break;
                        default:
                                fail(file, "", (int) -r);
                        }
                }
                if (!*end)
                        break;
                p = end + 1;
        }
        fail(file, "", eacces ? EACCES : ENOENT);
}
