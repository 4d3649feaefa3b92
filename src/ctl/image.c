/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lazaretctl image build-default: the built-in default image, built here from
 * Debian packages by an ordinary user. Nothing is ever pulled from a
 * container registry.
 *
 *   1. mmdebstrap --mode=unshare --variant=minbase writes a root file system
 *      tarball into a private staging directory next to the final image
 *      (<data_root>/images/.default.build-XXXXXX), from the Debian mirror and
 *      through the proxy of the host's apt configuration (apt-mirror.h) or
 *      from --source. Its chroot stays in
 *      $TMPDIR or /tmp, mmdebstrap's default: inside its user namespace even
 *      "root" is a subordinate ID, which cannot enter the private data root;
 *      mmdebstrap removes the chroot itself, on errors and signals too;
 *   2. umoci turns the tarball into a one-layer OCI image layout there;
 *   3. the layout is renamed into place (exchanged atomically with an old
 *      image, which is kept until the new one is complete).
 *
 * A lock file keeps two builds apart; any failure, or a signal, removes the
 * staging directory and leaves the old image as it was.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "apt-mirror.h"
#include "cleanup.h"
#include "fs-util.h"
#include "subid.h"
#include "config.h"
#include "domain.h"
#include "image.h"
#include "macro.h"
#include "path-util.h"
#include "spawn-util.h"
#include "strv.h"

#define IMAGE_DEFAULT_NAME "default"
#define IMAGE_STAGING_PREFIX ".default.build-"
#define IMAGE_LOCK_NAME ".default.lock"
#define IMAGE_DEFAULT_SUITE "bookworm"
#define IMAGE_PATH_ENV "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define MMDEBSTRAP_HOOKS "/usr/share/mmdebstrap/hooks"
/* Where a local repository is made visible to mmdebstrap: below /tmp, whose
 * contents mmdebstrap removes from the chroot, so no trace of the mount
 * point is left in the image. */
#define SOURCE_LINK_TEMPLATE "/tmp/lazaret-source.XXXXXX"
/* The host's apt proxy settings, for mmdebstrap's apt only: a setup hook
 * writes them, a customize hook removes them before the image is packed. */
#define PROXY_CONF "/etc/apt/apt.conf.d/99lazaret-build-proxy"

extern char **environ;

static const char *arg_source = NULL;
static bool arg_force = false;

void image_set_source(const char *source) {
        arg_source = source;
}

void image_set_force(bool force) {
        arg_force = force;
}

/* ------------------------------------------------------------ processes */

static volatile sig_atomic_t interrupted = 0;
static volatile pid_t child_pid = 0;

static void on_signal(int sig) {
        interrupted = sig;
        if (child_pid > 0)
                (void) kill(child_pid, sig);
}

static const int handled_signals[] = { SIGINT, SIGTERM, SIGHUP };

/*
 * While building, a signal is passed on to the running tool and ends the
 * build through the normal failure path, which cleans up. A closed stderr
 * pipe must not kill us half-way either: SIGPIPE is ignored (children get
 * the default back).
 */
static void signals_catch(struct sigaction saved[static ELEMENTSOF(handled_signals) + 1]) {
        struct sigaction sa = { .sa_handler = on_signal }, ign = { .sa_handler = SIG_IGN };

        sigemptyset(&sa.sa_mask);
        sigemptyset(&ign.sa_mask);
        for (size_t i = 0; i < ELEMENTSOF(handled_signals); i++)
                (void) sigaction(handled_signals[i], &sa, &saved[i]);
        (void) sigaction(SIGPIPE, &ign, &saved[ELEMENTSOF(handled_signals)]);
}

static void signals_restore(const struct sigaction saved[static ELEMENTSOF(handled_signals) + 1]) {
        for (size_t i = 0; i < ELEMENTSOF(handled_signals); i++)
                (void) sigaction(handled_signals[i], &saved[i], NULL);
        (void) sigaction(SIGPIPE, &saved[ELEMENTSOF(handled_signals)], NULL);
}

/* environ with the NAME=value entries of set replacing or adding to it. */
static char **env_with(char *const *set) {
        _cleanup_strv_free_ char **env = calloc(1, sizeof(char *));

        if (!env)
                return NULL;

        for (char **e = environ; e && *e; e++) {
                size_t l = strcspn(*e, "=");
                bool replaced = false;
                STRV_FOREACH(s, (char **) set)
                        if (strncmp(*s, *e, l + 1) == 0)
                                replaced = true;
                if (!replaced && strv_extend(&env, *e) < 0)
                        return NULL;
        }
        STRV_FOREACH(s, (char **) set)
                if (strv_extend(&env, *s) < 0)
                        return NULL;
        return TAKE_PTR(env);
}

/*
 * Runs argv[0] (found by find_program(), the one program lookup of
 * Lazaret: the system's bin and sbin directories) with explicit arguments: stdin and stderr
 * inherited, stdout sent to our stderr (progress is not output), in cwd when
 * given, with env_set added to the environment. Returns its exit status, 128
 * plus the signal number when a signal ended it, or < 0 when it could not be
 * started (-ENOENT: not installed).
 */
static int run(char *const *argv, const char *cwd, char *const *env_set) {
        _cleanup_strv_free_ char **env = NULL, **args = NULL;
        _cleanup_free_ char *program = NULL;
        SpawnOptions o = SPAWN_OPTIONS_INIT;
        sigset_t block, old;
        pid_t pid;
        int r, status;

        r = find_program(argv[0], &program);
        if (r < 0)
                return r;
        env = env_with(env_set);
        args = strv_copy(argv);
        if (!env || !args)
                return -ENOMEM;
        free(args[0]);
        args[0] = strdup(program);
        if (!args[0])
                return -ENOMEM;

        o.argv = args;
        o.envp = env;
        o.cwd = cwd;
        o.stdio[0] = STDIN_FILENO;
        o.stdio[1] = STDERR_FILENO;     /* progress is not output */
        o.stdio[2] = STDERR_FILENO;

        /* Between spawning and recording the PID, a signal is held back, so
         * that the handler can always pass it on. */
        sigemptyset(&block);
        for (size_t i = 0; i < ELEMENTSOF(handled_signals); i++)
                sigaddset(&block, handled_signals[i]);
        sigprocmask(SIG_BLOCK, &block, &old);
        r = spawn(&o, &pid, NULL);
        if (r == 0)
                child_pid = pid;
        sigprocmask(SIG_SETMASK, &old, NULL);
        if (r < 0)
                return r;

        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR) {
                        r = -errno;
                        child_pid = 0;
                        return r;
                }
        child_pid = 0;
        if (WIFEXITED(status))
                return WEXITSTATUS(status);
        return 128 + WTERMSIG(status);
}

/* run(), with a message naming the step when it fails. */
static int run_step(const char *what, char *const *argv, const char *cwd, char *const *env_set) {
        int r = interrupted ? 0 : run(argv, cwd, env_set);

        if (interrupted) {
                fprintf(stderr, "Interrupted by signal %d while %s.\n", (int) interrupted, what);
                return -EINTR;
        }
        if (r < 0) {
                fprintf(stderr, "Failed to run %s (%s): %s\n", argv[0], what, strerror(-r));
                return r;
        }
        if (r >= 128) {
                fprintf(stderr, "%s was killed by signal %d while %s.\n", argv[0], r - 128, what);
                return -EPROTO;
        }
        if (r != 0) {
                fprintf(stderr, "%s failed (exit status %d) while %s.\n", argv[0], r, what);
                return -EPROTO;
        }
        return 0;
}

/* ---------------------------------------------------------- file system */

/* Bytes in the regular files of an OCI layout (blobs and index). */
static int layout_size(int dir_fd, const char *sub, uint64_t *size) {
        _cleanup_close_ int fd = -EBADF;
        DIR *d;
        struct dirent *de;

        fd = openat(dir_fd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        d = fdopendir(fd);
        if (!d)
                return -errno;
        TAKE_FD(fd);
        while ((de = readdir(d))) {
                struct stat st;
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                if (S_ISREG(st.st_mode))
                        *size += (uint64_t) st.st_size;
                else if (S_ISDIR(st.st_mode))
                        (void) layout_size(dirfd(d), de->d_name, size);
        }
        closedir(d);
        return 0;
}

/* ------------------------------------------------------- prerequisites */

static const struct {
        const char *binary;
        const char *package;
        const char *why;
} required_tools[] = {
        { "mmdebstrap", "mmdebstrap", "builds the root file system" },
        { "umoci",      "umoci",      "writes the OCI image layout" },
        { "newuidmap",  "uidmap",     "maps subordinate IDs for mmdebstrap's unshare mode" },
        { "newgidmap",  "uidmap",     "maps subordinate IDs for mmdebstrap's unshare mode" },
        { "tar",        "tar",        "finishes the root file system tarball" },
};

static int check_tools(void) {
        int r = 0;

        for (size_t i = 0; i < ELEMENTSOF(required_tools); i++) {
                _cleanup_free_ char *p = NULL;
                int k = find_program(required_tools[i].binary, &p);
                if (k == -ENOMEM)
                        return k;
                if (k < 0) {
                        fprintf(stderr, "%s is not installed (it %s); install the Debian package \"%s\": "
                                "sudo apt install %s\n", required_tools[i].binary, required_tools[i].why,
                                required_tools[i].package, required_tools[i].package);
                        r = -ENOENT;
                }
        }
        return r;
}

static int check_subids(void) {
        _cleanup_free_ char *user = NULL, *why = NULL;
        SubidRange uids, gids;
        int r;

        r = subid_user_name(getuid(), &user);
        if (r < 0) {
                fprintf(stderr, "Cannot find the name of UID %u; mmdebstrap's unshare mode needs it to find "
                        "your subordinate IDs.\n", (unsigned) getuid());
                return r;
        }
        r = subid_pick_for_user(user, getuid(), &uids, &gids, &why);
        if (r < 0) {
                fprintf(stderr, "Building the image as an ordinary user needs subordinate IDs (mmdebstrap --mode=unshare "
                        "maps the image's system users to them): %s\n", why ?: strerror(-r));
                return r;
        }
        return 0;
}

/* VERSION_CODENAME of the host when it runs Debian, else the default. */
static int host_suite(char **ret) {
        _cleanup_fclose_ FILE *f = fopen("/etc/os-release", "re");
        _cleanup_free_ char *line = NULL, *codename = NULL;
        bool debian = false;
        size_t n = 0;

        if (!f)
                f = fopen("/usr/lib/os-release", "re");
        while (f && getline(&line, &n, f) > 0) {
                char *v;
                line[strcspn(line, "\n")] = 0;
                if ((v = (char *) startswith(line, "ID="))) {
                        v += strspn(v, "\"'");
                        v[strcspn(v, "\"'")] = 0;
                        debian = streq(v, "debian");
                } else if ((v = (char *) startswith(line, "VERSION_CODENAME="))) {
                        v += strspn(v, "\"'");
                        v[strcspn(v, "\"'")] = 0;
                        free(codename);
                        codename = strdup(v);
                        if (!codename)
                                return -ENOMEM;
                }
        }
        if (!debian || isempty(codename) || codename[strspn(codename, "abcdefghijklmnopqrstuvwxyz0123456789-")])
                *ret = strdup(IMAGE_DEFAULT_SUITE);
        else
                *ret = TAKE_PTR(codename);
        return *ret ? 0 : -ENOMEM;
}

/*
 * A local repository: a directory with a Packages index, readable by every
 * user, because mmdebstrap reads it from inside the user namespace as
 * subordinate IDs too. Returns its canonical path.
 */
static int check_source_dir(const char *source, char **ret) {
        _cleanup_free_ char *dir = NULL;
        static const char *const indexes[] = { "Packages", "Packages.gz", "Packages.xz" };
        const char *index = NULL;
        struct stat st;

        dir = realpath(source, NULL);
        if (!dir) {
                int r = -errno;
                fprintf(stderr, "--source %s: %s. Give a local repository directory (.deb files and a Packages "
                        "index) or the http(s) URL of a Debian mirror.\n", source, strerror(-r));
                return r;
        }
        if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
                fprintf(stderr, "--source %s: not a directory.\n", source);
                return -ENOTDIR;
        }
        for (size_t i = 0; i < ELEMENTSOF(indexes) && !index; i++) {
                _cleanup_free_ char *p = path_join(dir, indexes[i]);
                if (p && stat(p, &st) == 0 && S_ISREG(st.st_mode)) {
                        index = indexes[i];
                        if (!(st.st_mode & S_IROTH)) {
                                fprintf(stderr, "--source %s: %s is not readable by other users; mmdebstrap's "
                                        "unshare mode reads it as a subordinate ID. Run: chmod -R a+rX %s\n",
                                        source, p, dir);
                                return -EACCES;
                        }
                }
        }
        if (!index) {
                fprintf(stderr, "--source %s: no Packages index in %s. A local repository is a directory of "
                        ".deb files with an index made by: cd %s && dpkg-scanpackages . > Packages\n",
                        source, dir, dir);
                return -ENOENT;
        }
        /* Every directory on the way must let other users through. */
        for (char *s = dir + strlen(dir);;) {
                char c = *s;
                *s = 0;
                if (stat(*dir ? dir : "/", &st) < 0 ||
                    !(st.st_mode & S_IXOTH) || (c == 0 && !(st.st_mode & S_IROTH))) {
                        fprintf(stderr, "--source %s: %s is not %s by other users; mmdebstrap's unshare mode "
                                "reads the repository as a subordinate ID. Make the repository world-readable "
                                "(chmod -R a+rX) and every directory above it world-searchable.\n",
                                source, *dir ? dir : "/", c == 0 ? "readable" : "searchable");
                        *s = c;
                        return -EACCES;
                }
                *s = c;
                if (s == dir)
                        break;
                while (s > dir && *--s != '/')
                        ;
        }
        *ret = TAKE_PTR(dir);
        return 0;
}

/* ------------------------------------------------------------- building */

typedef struct Build {
        bool tty;
        char *suite;
        char *source_dir;       /* --source DIR, canonical */
        const char *source_url; /* --source URL */
        AptMirror mirror;       /* the host's, unless --source URL */
        char *proxy;            /* the host's apt proxy settings, "" for none */
        char *source_link;      /* SOURCE_LINK_TEMPLATE dir with "repo" -> source_dir */
        char *images;           /* <data_root>/images */
        char *final;            /* <images>/default */
        char *staging;          /* <images>/.default.build-XXXXXX */
        int images_fd;
        int lock_fd;
        int staging_fd;
} Build;

static void build_done(Build *b) {
        if (b->staging && rm_rf(b->staging) < 0)
                fprintf(stderr, "Failed to remove the staging directory %s; remove it by hand.\n", b->staging);
        if (b->source_link) {
                _cleanup_free_ char *l = path_join(b->source_link, "repo");
                if (l)
                        (void) unlink(l);
                (void) rmdir(b->source_link);
        }
        safe_close(b->staging_fd);
        safe_close(b->lock_fd);
        safe_close(b->images_fd);
        free(b->suite);
        apt_mirror_done(&b->mirror);
        free(b->proxy);
        free(b->source_dir);
        free(b->source_link);
        free(b->images);
        free(b->final);
        free(b->staging);
}

static void phase(const Build *b, unsigned i, unsigned n, const char *fmt, ...) _printf_(4, 5);
static void phase(const Build *b, unsigned i, unsigned n, const char *fmt, ...) {
        va_list ap;

        fflush(stdout);
        fprintf(stderr, b->tty ? "\033[1m[%u/%u]\033[0m " : "[%u/%u] ", i, n);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
}

/* Under the lock: removes what an earlier, killed build left behind. */
static void remove_stale_staging(const Build *b) {
        _cleanup_close_ int fd = fcntl(b->images_fd, F_DUPFD_CLOEXEC, 3);
        DIR *d;
        struct dirent *de;

        if (fd < 0 || !(d = fdopendir(fd)))
                return;
        TAKE_FD(fd);
        while ((de = readdir(d)))
                if (startswith(de->d_name, IMAGE_STAGING_PREFIX)) {
                        _cleanup_free_ char *p = path_join(b->images, de->d_name);
                        if (p && rm_rf(p) >= 0)
                                fprintf(stderr, "Removed %s, left by an interrupted build.\n", p);
                }
        closedir(d);
}

static int prepare_dirs(Build *b, const Config *config) {
        struct stat st;
        int r;

        b->images = path_join(config->data_root, STORAGE_IMAGES_DIR);
        b->final = path_join(b->images, IMAGE_DEFAULT_NAME);
        if (!b->images || !b->final)
                return -ENOMEM;
        r = mkdir_parents(b->images, 0700);
        if (r < 0) {
                fprintf(stderr, "Failed to create %s: %s\n", b->images, strerror(-r));
                return r;
        }
        b->images_fd = open(b->images, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (b->images_fd < 0 || fstat(b->images_fd, &st) < 0) {
                r = -errno;
                fprintf(stderr, "Failed to open %s: %s\n", b->images, strerror(errno));
                return r;
        }
        if (st.st_uid != getuid()) {
                fprintf(stderr, "%s is owned by UID %u, not by you.\n", b->images, (unsigned) st.st_uid);
                return -EPERM;
        }

        b->lock_fd = openat(b->images_fd, IMAGE_LOCK_NAME, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (b->lock_fd < 0) {
                r = -errno;
                fprintf(stderr, "Failed to create %s/%s: %m\n", b->images, IMAGE_LOCK_NAME);
                return r;
        }
        if (flock(b->lock_fd, LOCK_EX | LOCK_NB) < 0) {
                r = -errno;
                if (r == -EWOULDBLOCK)
                        fprintf(stderr, "Another build of the default image is running (it holds %s/%s).\n",
                                b->images, IMAGE_LOCK_NAME);
                else
                        fprintf(stderr, "Failed to lock %s/%s: %m\n", b->images, IMAGE_LOCK_NAME);
                return r;
        }
        remove_stale_staging(b);
        return 0;
}

static int make_staging(Build *b) {
        _cleanup_free_ char *t = NULL;
        int r;

        t = path_join(b->images, IMAGE_STAGING_PREFIX "XXXXXX");
        if (!t)
                return -ENOMEM;
        if (!mkdtemp(t)) {
                r = -errno;
                fprintf(stderr, "Failed to create a staging directory in %s: %m\n", b->images);
                return r;
        }
        b->staging = TAKE_PTR(t);
        b->staging_fd = open(b->staging, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (b->staging_fd < 0 || mkdirat(b->staging_fd, "dev-entry", 0700) < 0 ||
            mkdirat(b->staging_fd, "dev-entry/dev", 0755) < 0) {
                r = -errno;
                fprintf(stderr, "Failed to set up %s: %m\n", b->staging);
                return r;
        }
        return 0;
}

/* Makes the local repository visible below /tmp as SOURCE_LINK/repo. */
static int make_source_link(Build *b) {
        _cleanup_free_ char *t = strdup(SOURCE_LINK_TEMPLATE), *l = NULL;
        int r;

        if (!t)
                return -ENOMEM;
        if (!mkdtemp(t)) {
                r = -errno;
                fprintf(stderr, "Failed to create a directory in /tmp: %m\n");
                return r;
        }
        b->source_link = TAKE_PTR(t);
        l = path_join(b->source_link, "repo");
        if (!l)
                return -ENOMEM;
        /* Searchable by the subordinate IDs apt may drop to; it holds only the link. */
        if (chmod(b->source_link, 0755) < 0 || symlink(b->source_dir, l) < 0) {
                r = -errno;
                fprintf(stderr, "Failed to set up %s: %m\n", l);
                return r;
        }
        return 0;
}

static int build_rootfs(Build *b) {
        _cleanup_strv_free_ char **argv = NULL, **env = NULL;
        _cleanup_free_ char *mirror = NULL, *apt_sources = NULL, *sources = NULL, *proxy = NULL;
        static const char *const fixed[] = {
                "mmdebstrap",
                "--mode=unshare",
                "--variant=minbase",
                "--include=" IMAGE_DEFAULT_PACKAGES,
                /* Documentation, manuals and translations stay out, now and
                 * for packages installed later (the dpkg setting stays). */
                "--dpkgopt=path-exclude=/usr/share/man/*",
                "--dpkgopt=path-exclude=/usr/share/info/*",
                "--dpkgopt=path-exclude=/usr/share/doc/*",
                "--dpkgopt=path-include=/usr/share/doc/*/copyright",
                "--dpkgopt=path-exclude=/usr/share/locale/*",
                "--dpkgopt=path-include=/usr/share/locale/locale.alias",
                /* No device nodes in the image: the runtime provides /dev. */
                "--skip=output/dev",
        };
        int r;

        for (size_t i = 0; i < ELEMENTSOF(fixed); i++)
                if (strv_extend(&argv, fixed[i]) < 0)
                        return -ENOMEM;
        /* Hooks are constants; the texts they write come in the environment.
         * The proxy comes first: later setup hooks (maybe-merged-usr) run apt. */
        if (!isempty(b->proxy)) {
                if (asprintf(&proxy, "LAZARET_IMAGE_APT_PROXY=%s", b->proxy) < 0)
                        return -ENOMEM;
                if (strv_extend(&argv, "--setup-hook=printf '%s' \"$LAZARET_IMAGE_APT_PROXY\" "
                                       ">\"$1" PROXY_CONF "\"") < 0 ||
                    strv_extend(&argv, "--customize-hook=rm -f \"$1" PROXY_CONF "\"") < 0 ||
                    strv_extend(&env, proxy) < 0)
                        return -ENOMEM;
        }
        /* merged /usr the way debootstrap does it, without the usrmerge package */
        if (access(MMDEBSTRAP_HOOKS "/maybe-merged-usr", F_OK) == 0 &&
            strv_extend(&argv, "--hook-dir=" MMDEBSTRAP_HOOKS "/maybe-merged-usr") < 0)
                return -ENOMEM;

        if (b->mirror.uri) {
                r = apt_mirror_sources_list(&b->mirror, b->suite, &sources);
                if (r < 0)
                        return r;
        }
        if (b->source_dir) {
                r = make_source_link(b);
                if (r < 0)
                        return r;
                if (asprintf(&mirror, "deb [trusted=yes] file:%s/repo ./", b->source_link) < 0)
                        return -ENOMEM;
                /* The image should point at the host's Debian mirror, not
                 * at a path only this machine has. */
                if (asprintf(&apt_sources, "LAZARET_IMAGE_APT_SOURCES=%s", sources) < 0)
                        return -ENOMEM;
                if (strv_extend(&argv, "--hook-dir=" MMDEBSTRAP_HOOKS "/file-mirror-automount") < 0 ||
                    strv_extend(&argv, "--customize-hook=printf '%s' \"$LAZARET_IMAGE_APT_SOURCES\" "
                                       ">\"$1/etc/apt/sources.list\"") < 0 ||
                    strv_extend(&env, apt_sources) < 0)
                        return -ENOMEM;
        }

        /* A flat repository has no suite name: "" makes mmdebstrap take the
         * essential and required packages from it regardless. */
        if (strv_extend(&argv, b->source_dir ? "" : b->suite) < 0 ||
            strv_extend(&argv, "rootfs.tar") < 0)
                return -ENOMEM;
        if (b->source_dir || b->source_url) {
                if (strv_extend(&argv, b->source_dir ? mirror : b->source_url) < 0)
                        return -ENOMEM;
        } else {
                /* The host's mirror: one "deb" line per suite. */
                for (char *line = sources, *eol; line && *line; line = eol) {
                        eol = strchrnul(line, '\n');
                        if (*eol)
                                *eol++ = 0;
                        if (strv_extend(&argv, line) < 0)
                                return -ENOMEM;
                }
        }

        return run_step("building the root file system", argv, b->staging, env);
}

/* mmdebstrap leaves /dev out (--skip=output/dev); the image gets an empty one. */
static int add_dev_dir(Build *b) {
        char *argv[] = {
                (char *) "tar", (char *) "--append", (char *) "--file=rootfs.tar", (char *) "--format=pax",
                (char *) "--numeric-owner", (char *) "--owner=0", (char *) "--group=0", (char *) "--mode=0755",
                (char *) "--no-recursion", (char *) "--directory=dev-entry", (char *) "./dev", NULL
        };

        return run_step("adding /dev to the root file system", argv, b->staging, NULL);
}

static int write_layout(Build *b) {
        _cleanup_free_ char *comment = NULL, *suite_label = NULL;
        char *init[] = { (char *) "umoci", (char *) "init", (char *) "--layout", (char *) "layout", NULL };
        char *new[] = { (char *) "umoci", (char *) "new", (char *) "--image", (char *) "layout:" IMAGE_DEFAULT_TAG, NULL };
        char *gc[] = { (char *) "umoci", (char *) "gc", (char *) "--layout", (char *) "layout", NULL };
        int r;

        if (asprintf(&comment, "Debian %s minbase with %s", b->suite, IMAGE_DEFAULT_PACKAGES) < 0 ||
            asprintf(&suite_label, "org.lazaret.debian-suite=%s", b->suite) < 0)
                return -ENOMEM;

        char *add[] = {
                (char *) "umoci", (char *) "raw", (char *) "add-layer", (char *) "--image", (char *) "layout:" IMAGE_DEFAULT_TAG,
                (char *) "--history.created_by", (char *) "lazaretctl image build-default",
                (char *) "--history.comment", comment, (char *) "rootfs.tar", NULL
        };
        char *conf[] = {
                (char *) "umoci", (char *) "config", (char *) "--image", (char *) "layout:" IMAGE_DEFAULT_TAG,
                (char *) "--config.env", (char *) IMAGE_PATH_ENV,
                (char *) "--config.env", (char *) "LANG=C.UTF-8",
                (char *) "--config.cmd", (char *) "/bin/bash", (char *) "--config.cmd", (char *) "-l",
                (char *) "--config.label", (char *) "org.lazaret.image=" BUILTIN_IMAGE,
                (char *) "--config.label", suite_label,
                (char *) "--config.label", (char *) "org.lazaret.packages=" IMAGE_DEFAULT_PACKAGES,
                (char *) "--history.created_by", (char *) "lazaretctl image build-default",
                NULL
        };
        char *const *steps[] = { init, new, add, conf, gc };

        for (size_t i = 0; i < ELEMENTSOF(steps); i++) {
                r = run_step("writing the OCI image layout", steps[i], b->staging, NULL);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Puts staging/layout in place; an old image ends up in the staging directory. */
static int install_layout(Build *b, bool replace) {
        int r;

        if (!replace) {
                if (renameat2(b->staging_fd, "layout", b->images_fd, IMAGE_DEFAULT_NAME, RENAME_NOREPLACE) >= 0)
                        return 0;
                if (errno != EINVAL && errno != ENOSYS)
                        goto fail;
                if (renameat(b->staging_fd, "layout", b->images_fd, IMAGE_DEFAULT_NAME) >= 0)
                        return 0;
                goto fail;
        }

        if (renameat2(b->staging_fd, "layout", b->images_fd, IMAGE_DEFAULT_NAME, RENAME_EXCHANGE) >= 0)
                return 0;
        if (errno != EINVAL && errno != ENOSYS)
                goto fail;
        /* No atomic exchange on this file system: move the old image aside first. */
        if (renameat(b->images_fd, IMAGE_DEFAULT_NAME, b->staging_fd, "old") < 0)
                goto fail;
        if (renameat(b->staging_fd, "layout", b->images_fd, IMAGE_DEFAULT_NAME) >= 0)
                return 0;
        r = -errno;
        (void) renameat(b->staging_fd, "old", b->images_fd, IMAGE_DEFAULT_NAME);
        errno = -r;
fail:
        r = -errno;
        fprintf(stderr, "Failed to move the new image to %s: %m\n", b->final);
        return r;
}

static bool image_exists(int dir_fd, const char *path) {
        _cleanup_free_ char *index = path_join(path, "index.json");

        return index && faccessat(dir_fd, index, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

static const char *source_description(const Build *b) {
        if (b->source_dir)
                return b->source_dir;
        if (b->source_url)
                return b->source_url;
        return b->mirror.uri;
}

/*
 * The host's Debian mirror (unless --source URL names one: a local
 * repository still needs it, for the image's apt sources) and apt proxy.
 */
static int find_mirror(Build *b) {
        _cleanup_free_ char *why = NULL;
        int r;

        if (!b->source_url) {
                r = apt_host_mirror(b->suite, &b->mirror, &why);
                if (r == -ENOENT) {
                        fprintf(stderr, "Building the default image needs a Debian mirror: %s. Add one to apt's sources (e.g. "
                                "/etc/apt/sources.list.d/debian.sources with Types: deb, URIs: <your mirror>, "
                                "Suites: %s %s-updates, Components: main) or name one with --source URL.\n",
                                why ?: strerror(-r), b->suite, b->suite);
                        return r;
                }
                if (r < 0) {
                        fprintf(stderr, "Cannot find the Debian mirror in apt's configuration: %s.\n",
                                why ?: strerror(-r));
                        return r;
                }
        }
        r = apt_host_proxy(&b->proxy, &why);
        if (r < 0) {
                fprintf(stderr, "Cannot read apt's proxy settings: %s.\n", why ?: strerror(-r));
                return r;
        }
        return 0;
}

/* --source: a mirror's URL (http or https, nothing apt's sources line would split at) or a local directory (check_source_dir()). */
static int take_source(Build *b, const char *source) {
        if (source && (startswith(source, "http://") || startswith(source, "https://"))) {
                if (source[strcspn(source, " \t\n\"'[]")]) {
                        fprintf(stderr, "--source %s: not a valid mirror URL.\n", source);
                        return -EINVAL;
                }
                b->source_url = source;
        } else if (source)
                return check_source_dir(source, &b->source_dir);
        return 0;
}

/*
 * The build's three phases, in a staging directory, with the handled
 * signals caught: an interrupted build stops before the image is moved
 * into place, and build_done() removes what it made.
 */
static int build_phases(Build *b, bool replace) {
        struct sigaction saved[ELEMENTSOF(handled_signals) + 1];
        int r;

        interrupted = 0;
        signals_catch(saved);
        r = make_staging(b);
        if (r >= 0) {
                phase(b, 1, 3, "Resolving, downloading and installing Debian %s minbase + %s with mmdebstrap "
                      "(unshare mode)...", b->suite, IMAGE_DEFAULT_PACKAGES);
                r = build_rootfs(b);
        }
        if (r >= 0)
                r = add_dev_dir(b);
        if (r >= 0) {
                phase(b, 2, 3, "Writing the OCI image layout with umoci...");
                r = write_layout(b);
        }
        if (r >= 0 && interrupted)
                r = -EINTR;
        if (r >= 0) {
                phase(b, 3, 3, "Moving the image into place%s...", replace ? ", replacing the old one" : "");
                r = install_layout(b, replace);
        }
        signals_restore(saved);
        return r;
}

static int build_default(const Config *config, const char *source, bool force) {
        _cleanup_(build_done) Build b = {
                .images_fd = -EBADF,
                .lock_fd = -EBADF,
                .staging_fd = -EBADF,
        };
        struct timespec t0, t1;
        uint64_t size = 0;
        bool replace;
        int r;

        b.tty = isatty(STDERR_FILENO);
        b.final = path_join(config->data_root, STORAGE_BUILTIN_IMAGE_DIR);
        if (!b.final)
                return -ENOMEM;
        if (!force && image_exists(AT_FDCWD, b.final)) {
                printf("The default image already exists at %s (tag %s); use --force to rebuild it.\n",
                       b.final, IMAGE_DEFAULT_TAG);
                return 0;
        }
        free(b.final);
        b.final = NULL;

        r = take_source(&b, source);
        if (r < 0)
                return r;
        r = host_suite(&b.suite);
        if (r < 0)
                return r;
        r = find_mirror(&b);
        if (r < 0)
                return r;
        r = check_tools();
        if (r < 0)
                return r;
        r = check_subids();
        if (r < 0)
                return r;

        r = prepare_dirs(&b, config);
        if (r < 0)
                return r;
        /* Checked again under the lock: another build may have finished. */
        replace = image_exists(b.images_fd, IMAGE_DEFAULT_NAME);
        if (replace && !force) {
                printf("The default image already exists at %s (tag %s); use --force to rebuild it.\n",
                       b.final, IMAGE_DEFAULT_TAG);
                return 0;
        }
        if (!replace && faccessat(b.images_fd, IMAGE_DEFAULT_NAME, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
                fprintf(stderr, "%s exists but holds no image (no index.json); it will be replaced.\n", b.final);
                replace = true;
        }

        clock_gettime(CLOCK_MONOTONIC, &t0);
        fprintf(stderr, "Building the default image (%s) at %s from Debian %s packages (%s%s), "
                "without root and without a container registry.\n",
                BUILTIN_IMAGE, b.final, b.suite, source_description(&b),
                isempty(b.proxy) ? "" : ", through apt's proxy");

        r = build_phases(&b, replace);
        if (r < 0) {
                fprintf(stderr, "Building the default image failed; %s.\n",
                        replace ? "the existing image is unchanged" : "nothing was installed");
                return r;
        }

        clock_gettime(CLOCK_MONOTONIC, &t1);
        (void) layout_size(b.images_fd, IMAGE_DEFAULT_NAME, &size);
        printf("Built %s at %s (tag %s): %.1f MiB, in %.0f s.\n", BUILTIN_IMAGE, b.final, IMAGE_DEFAULT_TAG,
               (double) size / (1024.0 * 1024.0),
               (double) (t1.tv_sec - t0.tv_sec) + (double) (t1.tv_nsec - t0.tv_nsec) / 1e9);
        return 0;
}

/* ---------------------------------------------------------------- verb */

int verb_image(int argc, char *argv[], const Config *config) {
        if (argc < 2 || !streq(argv[1], "build-default")) {
                fprintf(stderr, "Unknown image command \"%s\"; the only one is "
                        "\"image build-default [--source SOURCE] [--force]\".\n", argc >= 2 ? argv[1] : "");
                return -EINVAL;
        }
        /* --source and --force are parsed with the other options, before
         * and after the verb; what is left here is not an option. */
        if (argc > 2) {
                fprintf(stderr, "Unexpected argument \"%s\"; usage: image build-default "
                        "[--source SOURCE] [--force]\n", argv[2]);
                return -EINVAL;
        }
        return build_default(config, arg_source, arg_force);
}
