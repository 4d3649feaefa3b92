/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Starting, supervising and stopping the Domain's sandbox.
 *
 *   coordinator ──fork──▶ child: unshare(CLONE_NEWUSER), waits
 *        │ newuidmap/newgidmap PID 0 UID 1 / 1 SUBID 65536; maps verified
 *        │ StartTransientUnit lazaret-ID-sandbox.scope {PIDs=[child]}; job waited for
 *        └──"go"──▶ child execs lazaret-supervisor (uid 0 in its namespace)
 *                      └─ runsc create / start (container init: lazaret-init), runsc wait
 *   sessions: coordinator ──fork──▶ runsc exec --process SPEC (plain UID, same --root)
 *
 * The supervisor reports READY/FAILED/EXITED over a SOCK_SEQPACKET pair.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "bus-util.h"
#include "cleanup.h"
#include "fs-util.h"
#include "git-sentry.h"
#include "json-util.h"
#include "log.h"
#include "oci-spec.h"
#include "path-util.h"
#include "sandbox.h"
#include "session.h"
#include "strv.h"
#include "subid.h"
#include "util.h"

#define SCOPE_JOB_TIMEOUT_USEC (20ULL * 1000 * 1000)
#define SANDBOX_CONTROL_MOUNT "/run/lazaret"
#define STATX_SHIM "liblazaret-statx-compat.so"

struct Sandbox {
        Manager *manager;
        char id[DOMAIN_ID_LEN + 1 + RANDOM_ID_LEN + 4];  /* runsc container ID: lz-ID-RANDOM */
        char scope[UNIT_NAME_MAX];
        char *runsc;            /* absolute path */
        char *runsc_root;       /* runsc state */
        char *bundle;
        char *control_dir;      /* mounted read-only at /run/lazaret */
        char *sessions_dir;     /* process specs of sessions */
        char *rootfs;
        char **image_env;
        char **image_cmd;       /* the image's default command (OCI Entrypoint + Cmd) */
        bool statx_compat;      /* preload the statx shim into the image's glibc programs */

        pid_t supervisor_pid;
        int control_fd;
        sd_event_source *control_source;
        sd_event_source *supervisor_source;
        sd_bus_slot *stop_slot;
        char *stop_job;
        bool started, stopping, stop_done;
};

const char *sandbox_id(const Sandbox *sb) {
        return sb ? sb->id : "";
}

char **sandbox_default_command(const Sandbox *sb) {
        return sb && sb->image_cmd && sb->image_cmd[0] ? sb->image_cmd : NULL;
}

Sandbox *sandbox_free(Sandbox *sb) {
        if (!sb)
                return NULL;
        sd_event_source_disable_unref(sb->control_source);
        sd_event_source_disable_unref(sb->supervisor_source);
        sd_bus_slot_unref(sb->stop_slot);
        if (sb->supervisor_pid > 0) {
                (void) kill(sb->supervisor_pid, SIGKILL);
                (void) waitpid(sb->supervisor_pid, NULL, 0);
        }
        safe_close(sb->control_fd);
        free(sb->runsc);
        free(sb->runsc_root);
        free(sb->bundle);
        free(sb->control_dir);
        free(sb->sessions_dir);
        free(sb->rootfs);
        free(sb->stop_job);
        strv_free(sb->image_env);
        strv_free(sb->image_cmd);
        free(sb);
        return NULL;
}

int sandbox_new(Manager *m, Sandbox **ret) {
        _cleanup_(sandbox_freep) Sandbox *sb = NULL;
        char rnd[RANDOM_ID_LEN + 1];
        int r;

        sb = calloc(1, sizeof(Sandbox));
        if (!sb)
                return -ENOMEM;
        sb->manager = m;
        sb->control_fd = -EBADF;
        r = random_hex_id(rnd);
        if (r < 0)
                return r;
        /* A fresh container ID per generation: stale runsc state never collides. */
        snprintf(sb->id, sizeof(sb->id), "lz-%s-%.16s", m->id, rnd);
        domain_scope_name(m->id, sb->scope);

        sb->runsc = find_program("runsc");
        if (!sb->runsc)
                return log_error_errno(-ENOENT, "runsc (gVisor) is not installed; install the runsc package");
        sb->runsc_root = path_join(m->runtime_dir, "runsc");
        sb->bundle = path_join(m->runtime_dir, "bundle");
        sb->control_dir = path_join(m->runtime_dir, "control");
        sb->sessions_dir = path_join(m->runtime_dir, "sessions");
        if (!sb->runsc_root || !sb->bundle || !sb->control_dir || !sb->sessions_dir)
                return -ENOMEM;
        *ret = TAKE_PTR(sb);
        return 0;
}

/* ------------------------------------------------------------- helpers */

static int mkdir_private(const char *path) {
        if (mkdir(path, 0700) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

static int write_file(const char *path, const char *content, mode_t mode) {
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);

        if (fd < 0)
                return -errno;
        return write_all(fd, content, strlen(content));
}

static int copy_file(const char *from, const char *to, mode_t mode) {
        _cleanup_close_ int in = open(from, O_RDONLY | O_CLOEXEC), out = -EBADF;
        char buf[65536];
        ssize_t k;

        if (in < 0)
                return -errno;
        out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);
        if (out < 0)
                return -errno;
        if (fchmod(out, mode) < 0)
                return -errno;
        while ((k = read(in, buf, sizeof(buf))) > 0)
                if (write_all(out, buf, (size_t) k) < 0)
                        return -EIO;
        return k < 0 ? -errno : 0;
}

/*
 * Runs argv with stdin and stdout on /dev/null and waits. Its stderr is
 * collected into *ret_stderr (up to 4 KiB) for messages. Returns the exit
 * status, or a negative errno.
 */
static int run_program(char **argv, char **ret_stderr) {
        _cleanup_close_ int rd = -EBADF, wr = -EBADF;
        int pipefd[2];
        char buf[4096];
        size_t n = 0;
        int status;
        pid_t pid;

        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return -errno;
        rd = pipefd[0];
        wr = pipefd[1];
        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                int null = open("/dev/null", O_RDWR | O_CLOEXEC);
                if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(wr, 2) < 0)
                        _exit(127);
                execv(argv[0], argv);
                _exit(127);
        }
        wr = safe_close(wr);
        for (;;) {
                ssize_t k = read(rd, buf + n, sizeof(buf) - 1 - n);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        break;
                n += (size_t) k;
                if (n == sizeof(buf) - 1)
                        break;
        }
        buf[n] = 0;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        if (ret_stderr) {
                while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
                        buf[--n] = 0;
                *ret_stderr = strdup(buf);
        }
        if (WIFEXITED(status))
                return WEXITSTATUS(status);
        return 128 + WTERMSIG(status);
}

/* --------------------------------------------------------------- scope */

static int scope_stop_sync(const char *scope) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *result = NULL;
        int r;

        r = bus_manager_job_wait("StopUnit", bus_append_unit_replace, (void *) scope, SCOPE_JOB_TIMEOUT_USEC,
                                 &result, &error);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return log_error_errno(r, "Stopping %s: %s", scope, error.message ?: strerror(-r));
        if (!streq(result, "done"))
                log_warning("Stopping %s ended with \"%s\"", scope, result);
        return 0;
}
typedef struct ScopeArgs {
        const char *scope;
        const char *description;
        const char *service;
        pid_t pid;
} ScopeArgs;

static int append_scope(sd_bus_message *m, void *userdata) {
        const ScopeArgs *a = userdata;
        int r;

        r = sd_bus_message_append(m, "ss", a->scope, "fail");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "(sv)");
        if (r >= 0)
                r = sd_bus_message_append(m, "(sv)", "Description", "s", a->description);
        if (r >= 0)
                r = sd_bus_message_append(m, "(sv)", "PIDs", "au", 1, (uint32_t) a->pid);
        if (r >= 0)
                r = sd_bus_message_append(m, "(sv)", "CollectMode", "s", "inactive-or-failed");
        if (r >= 0)
                r = sd_bus_message_append(m, "(sv)", "KillMode", "s", "control-group");
        /* If the coordinator's service goes, for whatever reason, the sandbox
         * goes too. (No After=: the service is still activating, and the
         * scope's start job would wait for it.) */
        if (r >= 0)
                r = sd_bus_message_append(m, "(sv)", "BindsTo", "as", 1, a->service);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r >= 0)
                r = sd_bus_message_append(m, "a(sa(sv))", 0);
        return r;
}

static int scope_start_sync(Sandbox *sb, pid_t pid) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *result = NULL, *desc = NULL;
        char svc[UNIT_NAME_MAX];
        int r;

        domain_unit_name(sb->manager->id, "service", svc);
        if (asprintf(&desc, "Lazaret sandbox of Domain %s", sb->manager->id) < 0)
                return -ENOMEM;

        r = bus_manager_job_wait("StartTransientUnit", append_scope,
                                 &(ScopeArgs) { .scope = sb->scope, .description = desc, .service = svc, .pid = pid },
                                 SCOPE_JOB_TIMEOUT_USEC, &result, &error);
        if (r < 0)
                return log_error_errno(r, "Creating %s: %s", sb->scope, error.message ?: strerror(-r));
        if (!streq(result, "done"))
                return log_error_errno(-EIO, "Starting %s ended with \"%s\"", sb->scope, result);
        return 0;
}
/* ------------------------------------------------------------ recovery */

int sandbox_recover(Sandbox *sb) {
        Manager *m = sb->manager;
        int r;

        /* A predecessor's scope: its processes are not assumed gone. */
        r = scope_stop_sync(sb->scope);
        if (r < 0)
                return r;
        r = rm_rf(m->runtime_dir);
        if (r < 0)
                return log_error_errno(r, "Cannot remove stale runtime files in %s", m->runtime_dir);
        return 0;
}

/* --------------------------------------------------------------- image */

/* The manifest digest (hex) that DIR/index.json gives for tag. */
static int image_digest(const char *dir, const char *tag, char **ret, char **ret_why) {
        _cleanup_free_ char *path = path_join(dir, "index.json"), *buf = NULL, *why = NULL;
        _cleanup_json_ json_object *o = NULL;
        json_object *manifests;
        size_t n;
        int r;

        if (!path)
                return -ENOMEM;
        r = read_full_file(path, JSON_DOC_MAX_BYTES, &buf, &n);
        if (r < 0) {
                (void) !asprintf(ret_why, "%s: %s%s", path, strerror(-r),
                                 r == -ENOENT ? " (build the default image with: lazaretctl image build-default)" : "");
                return r;
        }
        if (json_parse_strict(buf, n, &o, &why) < 0 || !json_object_object_get_ex(o, "manifests", &manifests) ||
            !json_object_is_type(manifests, json_type_array)) {
                (void) !asprintf(ret_why, "%s: not an OCI image index (%s)", path, strna(why));
                return -EBADMSG;
        }
        for (size_t i = 0; i < json_object_array_length(manifests); i++) {
                json_object *e = json_object_array_get_idx(manifests, i), *ann, *name, *digest;
                const char *d;

                if (!json_object_object_get_ex(e, "annotations", &ann) ||
                    !json_object_object_get_ex(ann, "org.opencontainers.image.ref.name", &name) ||
                    !streq(json_object_get_string(name), tag) ||
                    !json_object_object_get_ex(e, "digest", &digest))
                        continue;
                d = startswith(json_object_get_string(digest), "sha256:");
                if (!d || strlen(d) != 64 || strspn(d, "0123456789abcdef") != 64)
                        break;
                *ret = strdup(d);
                return *ret ? 0 : -ENOMEM;
        }
        (void) !asprintf(ret_why, "%s has no image tagged \"%s\"", dir, tag);
        return -ENOENT;
}

/* The image's environment and default command, from the config umoci wrote. */
static int read_image_config(const char *bundle_config, char ***ret_env, char ***ret_cmd) {
        _cleanup_free_ char *buf = NULL, *why = NULL;
        _cleanup_json_ json_object *o = NULL;
        _cleanup_strv_free_ char **env = NULL, **cmd = NULL;
        json_object *process, *e, *a;
        size_t n;
        int r;

        r = read_full_file(bundle_config, JSON_DOC_MAX_BYTES, &buf, &n);
        if (r < 0)
                return r;
        if (json_parse_strict(buf, n, &o, &why) < 0)
                return -EBADMSG;
        if (json_object_object_get_ex(o, "process", &process) && json_object_object_get_ex(process, "env", &e) &&
            json_object_is_type(e, json_type_array))
                for (size_t i = 0; i < json_object_array_length(e) && i < 256; i++) {
                        const char *s = json_object_get_string(json_object_array_get_idx(e, i));
                        if (s && strchr(s, '=') && !startswith(s, "LAZARET_") && strv_extend(&env, s) < 0)
                                return -ENOMEM;
                }
        if (json_object_object_get_ex(o, "process", &process) && json_object_object_get_ex(process, "args", &a) &&
            json_object_is_type(a, json_type_array))
                for (size_t i = 0; i < json_object_array_length(a) && i < 256; i++) {
                        const char *s = json_object_get_string(json_object_array_get_idx(a, i));
                        if (!s || strv_extend(&cmd, s) < 0)
                                return -ENOMEM;
                }
        *ret_env = TAKE_PTR(env);
        *ret_cmd = TAKE_PTR(cmd);
        return 0;
}

/*
 * The prepared lower: the image unpacked once into a Lazaret-owned directory
 * named after the manifest digest, published by rename, never written again.
 */
static int prepare_rootfs(Sandbox *sb, char **ret_why) {
        Manager *m = sb->manager;
        _cleanup_free_ char *dir = NULL, *tag = NULL, *digest = NULL, *images = NULL, *prepared = NULL,
                            *final = NULL, *staging = NULL, *err = NULL, *umoci = NULL, *image_arg = NULL,
                            *cfg = NULL, *why = NULL;
        char rnd[RANDOM_ID_LEN + 1];
        struct stat st;
        int r;

        r = domain_resolve_image(m->domain, &dir, &tag, &why);
        if (r < 0) {
                *ret_why = TAKE_PTR(why);
                return r;
        }
        r = image_digest(dir, tag, &digest, ret_why);
        if (r < 0)
                return r;

        images = path_join(m->config->data_root, STORAGE_IMAGES_DIR);
        prepared = path_join(m->config->data_root, STORAGE_PREPARED_DIR);
        if (!images || !prepared)
                return -ENOMEM;
        (void) mkdir_private(images);
        r = mkdir_private(prepared);
        if (r < 0)
                return r;
        final = path_join(prepared, digest);
        if (!final)
                return -ENOMEM;

        if (stat(final, &st) < 0) {
                umoci = find_program("umoci");
                if (!umoci) {
                        *ret_why = strdup("umoci is not installed; install the umoci package");
                        return -ENOENT;
                }
                r = random_hex_id(rnd);
                if (r < 0)
                        return r;
                if (asprintf(&staging, "%s/.staging-%.16s", prepared, rnd) < 0 ||
                    asprintf(&image_arg, "%s:%s", dir, tag) < 0)
                        return -ENOMEM;
                log_info("Preparing image %s (%.12s) in %s", image_arg, digest, final);
                r = run_program((char *[]) { umoci, "--log", "error", "unpack", "--rootless", "--image", image_arg, staging, NULL }, &err);
                if (r != 0) {
                        (void) rm_rf(staging);
                        (void) !asprintf(ret_why, "umoci unpack %s failed: %s", image_arg, strna(err));
                        return -EIO;
                }
                if (rename(staging, final) < 0) {
                        r = -errno;
                        (void) rm_rf(staging);
                        /* Another Domain published the same image first: use theirs. */
                        if (r != -EEXIST && r != -ENOTEMPTY)
                                return r;
                }
        }

        sb->rootfs = path_join(final, "rootfs");
        cfg = path_join(final, "config.json");
        if (!sb->rootfs || !cfg)
                return -ENOMEM;
        if (read_image_config(cfg, &sb->image_env, &sb->image_cmd) < 0 || !sb->image_env)
                (void) strv_extend(&sb->image_env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
        return 0;
}

/* -------------------------------------------------------------- bundle */

static int write_bundle(Sandbox *sb, char **ret_why) {
        Manager *m = sb->manager;
        const Profile *p = m->domain->profile;
        _cleanup_free_ char *json = NULL, *cfg = NULL, *init_src = NULL, *init_dst = NULL, *terminfo = NULL;
        ResolvedVolume *vols = NULL;
        size_t n_vols = 0;
        _cleanup_(git_sentry_done) GitSentry git = {};
        _cleanup_free_ char *gitconfig = path_join(m->domain->home, ".gitconfig"), *xdg = NULL, *xdggit = NULL;
        _cleanup_free_ OciMount *mounts = NULL;
        _cleanup_free_ char *error = NULL;
        static const char *const rw[] = { "rbind", "rw", NULL };
        static const char *const ro[] = { "rbind", "ro", NULL };
        size_t n = 0;
        int r;

        r = mkdir_private(m->runtime_dir);
        if (r >= 0)
                r = mkdir_private(sb->runsc_root);
        if (r >= 0)
                r = mkdir_private(sb->bundle);
        if (r >= 0)
                r = mkdir_private(sb->sessions_dir);
        /* Read by everyone inside (mode bits are not subject to our umask here). */
        if (r >= 0 && mkdir(sb->control_dir, 0755) < 0 && errno != EEXIST)
                r = -errno;
        if (r >= 0 && chmod(sb->control_dir, 0755) < 0)
                r = -errno;
        if (r < 0)
                return log_error_errno(r, "Cannot create %s", m->runtime_dir);
        /* The control directory is read by the sandbox's gofer (the subordinate root). */
        terminfo = path_join(sb->control_dir, "terminfo");
        init_dst = path_join(sb->control_dir, "init");
        init_src = path_join(LIBEXECDIR, "lazaret-init");
        if (!terminfo || !init_dst || !init_src)
                return -ENOMEM;
        if ((mkdir(terminfo, 0755) < 0 && errno != EEXIST) || chmod(terminfo, 0755) < 0)
                return -errno;
        r = copy_file(getenv("LAZARET_INIT") ?: init_src, init_dst, 0755);
        if (r < 0)
                return log_error_errno(r, "Cannot install %s into the sandbox", init_src);

        /* The statx shim, for images whose programs use glibc's dynamic loader. */
        {
                _cleanup_free_ char *shim = path_join(LIBEXECDIR, STATX_SHIM), *libdir = path_join(sb->control_dir, "lib"),
                                    *dst = NULL, *loader = path_join(sb->rootfs, "lib64/ld-linux-x86-64.so.2");
                struct stat st;

                if (!shim || !libdir || !loader)
                        return -ENOMEM;
                if (lstat(loader, &st) >= 0 && access(shim, R_OK) >= 0) {
                        dst = path_join(libdir, STATX_SHIM);
                        if (!dst)
                                return -ENOMEM;
                        if ((mkdir(libdir, 0755) < 0 && errno != EEXIST) || chmod(libdir, 0755) < 0)
                                return -errno;
                        r = copy_file(shim, dst, 0644);
                        if (r < 0)
                                return log_error_errno(r, "Cannot install %s into the sandbox", shim);
                        sb->statx_compat = true;
                }
        }

        /* SR-4: the Git Sentry's mounts follow the workspace bind. */
        if (get_xdg_config_home(&xdg) < 0 || !(xdggit = path_join(xdg, "git/config")) || !gitconfig)
                return -ENOMEM;
        r = git_sentry_prepare(&(GitSentryParams) { m->domain->workspace, SANDBOX_WORKSPACE, m->domain->domain_dir,
                                                    m->domain->home, (const char *[]) { "/etc/gitconfig", gitconfig, xdggit, NULL } },
                               &git, ret_why);
        if (r < 0)
                return r;

        r = domain_resolve_volumes(m->domain, &vols, &n_vols, &error);
        if (r < 0)
                return log_error_errno(r, "%s", error ?: "Cannot resolve volumes");
        mounts = calloc(2 + git.n_mounts + n_vols, sizeof(OciMount));
        if (!mounts) {
                resolved_volumes_free(vols, n_vols);
                return -ENOMEM;
        }
        mounts[n++] = (OciMount) { SANDBOX_WORKSPACE, "bind", m->domain->workspace, rw };
        for (size_t i = 0; i < git.n_mounts; i++)
                mounts[n++] = git.mounts[i];
        mounts[n++] = (OciMount) { SANDBOX_CONTROL_MOUNT, "bind", sb->control_dir, ro };
        for (size_t i = 0; i < n_vols; i++)
                mounts[n++] = (OciMount) { vols[i].container, "bind", vols[i].host,
                                           vols[i].mode == VOLUME_RW ? rw : ro };

        /* Writable, but only through runsc's in-memory overlay of the root
         * (--overlay2=root:memory): the prepared lower on the host is never
         * written. A read-only root would refuse every install (EROFS). */
        OciContainer c = {
                .rootfs = sb->rootfs,
                .rootfs_readonly = false,
                .hostname = p->name,
                .args = (char *[]) { SANDBOX_CONTROL_MOUNT "/init", NULL },
                .env = sb->image_env,
                .cwd = "/",
                .mounts = mounts,
                .n_mounts = n,
        };
        r = oci_container_json(&c, &json);
        resolved_volumes_free(vols, n_vols);
        if (r < 0)
                return log_error_errno(r, "Cannot build the OCI specification");
        cfg = path_join(sb->bundle, "config.json");
        if (!cfg)
                return -ENOMEM;
        r = write_file(cfg, json, 0600);
        if (r < 0)
                return log_error_errno(r, "Cannot write %s", cfg);
        return 0;
}

/* ---------------------------------------------------------- supervisor */

/* newuidmap/newgidmap PID 0 ID 1 1 START 65536 */
static int write_id_map(const char *tool, pid_t pid, uint32_t id, const SubidRange *range) {
        _cleanup_free_ char *prog = find_program(tool), *err = NULL;
        char spid[16], sid[16], sstart[16], scount[16];
        int r;

        if (!prog)
                return log_error_errno(-ENOENT, "%s is not installed; install the uidmap package", tool);
        snprintf(spid, sizeof(spid), "%d", (int) pid);
        snprintf(sid, sizeof(sid), "%u", id);
        snprintf(sstart, sizeof(sstart), "%u", range->start);
        snprintf(scount, sizeof(scount), "%u", SUBID_COUNT);
        r = run_program((char *[]) { prog, spid, "0", sid, "1", "1", sstart, scount, NULL }, &err);
        if (r != 0)
                return log_error_errno(-EPERM, "%s failed (%d): %s", tool, r, strna(err));
        return 0;
}

/* SR-12: the maps must be exactly what we asked for, read back from the kernel. */
static int verify_id_map(pid_t pid, const char *file, uint32_t id, const SubidRange *range) {
        _cleanup_free_ char *path = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        unsigned long a, b, c;
        unsigned lines = 0;
        bool first = false, second = false;

        if (asprintf(&path, "/proc/%d/%s", (int) pid, file) < 0)
                return -ENOMEM;
        f = fopen(path, "re");
        if (!f)
                return -errno;
        while (fscanf(f, "%lu %lu %lu", &a, &b, &c) == 3) {
                lines++;
                if (a == 0 && b == id && c == 1)
                        first = true;
                else if (a == 1 && b == range->start && c == SUBID_COUNT)
                        second = true;
        }
        if (lines != 2 || !first || !second)
                return log_error_errno(-EPERM, "%s does not hold the expected mapping (0 %u 1, 1 %u %u)", path, id,
                                       range->start, SUBID_COUNT);
        return 0;
}

static int on_control(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        Sandbox *sb = userdata;
        Manager *m = sb->manager;
        char buf[1024];
        ssize_t k;

        k = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);
        if (k < 0 && (errno == EAGAIN || errno == EINTR))
                return 0;
        if (k <= 0) {
                /* The supervisor is gone; its exit handler decides what that means. */
                sb->control_source = sd_event_source_disable_unref(sb->control_source);
                return 0;
        }
        buf[k] = 0;
        if (streq(buf, "READY")) {
                sb->started = true;
                manager_sandbox_ready(m);
        } else if (startswith(buf, "FAILED ")) {
                if (!sb->stopping)
                        manager_sandbox_failed(m, buf + 7);
        } else if (startswith(buf, "EXITED ")) {
                if (!sb->stopping)
                        manager_sandbox_failed(m, "the sandbox's init exited");
        } else
                log_warning("Unexpected message from the supervisor: %.64s", buf);
        return 0;
}

static void stop_finished(Sandbox *sb) {
        if (sb->stop_done)
                return;
        sb->stop_done = true;
        (void) rm_rf(sb->manager->runtime_dir);
        manager_sandbox_stopped(sb->manager);
}

static int on_supervisor_exit(sd_event_source *src, const siginfo_t *si, void *userdata) {
        Sandbox *sb = userdata;

        sb->supervisor_pid = 0;
        sb->supervisor_source = sd_event_source_disable_unref(sb->supervisor_source);
        if (!sb->stopping) {
                log_error("The Runtime Supervisor exited (%s %d)", si->si_code == CLD_EXITED ? "status" : "signal", si->si_status);
                manager_sandbox_failed(sb->manager, "the Runtime Supervisor exited");
        }
        return 0;
}

int sandbox_start(Sandbox *sb) {
        Manager *m = sb->manager;
        _cleanup_free_ char *why = NULL, *supervisor = NULL, *user = NULL;
        _cleanup_close_ int sync_r = -EBADF, sync_w = -EBADF, go_r = -EBADF, go_w = -EBADF;
        int control[2] = { -EBADF, -EBADF };
        SubidRange uids, gids;
        struct passwd *pw;
        char c;
        pid_t pid;
        int r, p[2];

        r = prepare_rootfs(sb, &why);
        if (r < 0) {
                manager_sandbox_failed(m, why ?: "cannot prepare the image");
                return 0;
        }
        r = write_bundle(sb, &why);
        if (r < 0 && why) {
                manager_sandbox_failed(m, why);
                return 0;
        }
        if (r < 0)
                return r;

        pw = getpwuid(getuid());
        user = pw ? strdup(pw->pw_name) : NULL;
        r = subid_pick_file("/etc/subuid", user, getuid(), &uids);
        if (r >= 0)
                r = subid_pick_file("/etc/subgid", user, getgid(), &gids);
        if (r < 0) {
                (void) !asprintf(&why, "no range of %u subordinate IDs for %s in /etc/subuid and /etc/subgid "
                                 "(add one with: sudo usermod --add-subuids 100000-165535 --add-subgids 100000-165535 %s)",
                                 SUBID_COUNT, strna(user), strna(user));
                manager_sandbox_failed(m, why);
                return 0;
        }

        supervisor = path_join(LIBEXECDIR, "lazaret-supervisor");
        if (!supervisor)
                return -ENOMEM;
        if (getenv("LAZARET_SUPERVISOR")) {
                free(supervisor);
                supervisor = strdup(getenv("LAZARET_SUPERVISOR"));
        }

        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        sync_r = p[0], sync_w = p[1];
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        go_r = p[0], go_w = p[1];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, control) < 0)
                return -errno;

        pid = fork();
        if (pid < 0) {
                r = -errno;
                safe_close(control[0]);
                safe_close(control[1]);
                return r;
        }
        if (pid == 0) {
                char fdarg[16];
                sigset_t none;

                sigemptyset(&none);
                sigprocmask(SIG_SETMASK, &none, NULL);
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (unshare(CLONE_NEWUSER) < 0)
                        _exit(126);
                if (write(sync_w, "u", 1) != 1)
                        _exit(126);
                if (read(go_r, &c, 1) != 1 || c != 'g')
                        _exit(126);
                if (setresgid(0, 0, 0) < 0 || setgroups(0, NULL) < 0 || setresuid(0, 0, 0) < 0)
                        _exit(126);
                /* dup2() onto itself would keep O_CLOEXEC: clear it explicitly. */
                if (control[1] == 3 ? fcntl(3, F_SETFD, 0) < 0 : dup2(control[1], 3) < 0)
                        _exit(126);
                snprintf(fdarg, sizeof(fdarg), "%d", 3);
                execv(supervisor, (char *[]) { supervisor, "--control-fd", fdarg, "--runsc", sb->runsc,
                                               "--root", sb->runsc_root, "--bundle", sb->bundle,
                                               "--container", sb->id, NULL });
                _exit(127);
        }
        sb->supervisor_pid = pid;
        control[1] = safe_close(control[1]);
        sb->control_fd = control[0];
        sync_w = safe_close(sync_w);
        go_r = safe_close(go_r);

        if (read(sync_r, &c, 1) != 1) {
                manager_sandbox_failed(m, "cannot create a user namespace (are unprivileged user namespaces enabled?)");
                return 0;
        }
        r = write_id_map("newuidmap", pid, getuid(), &uids);
        if (r >= 0)
                r = write_id_map("newgidmap", pid, getgid(), &gids);
        if (r >= 0)
                r = verify_id_map(pid, "uid_map", getuid(), &uids);
        if (r >= 0)
                r = verify_id_map(pid, "gid_map", getgid(), &gids);
        if (r < 0) {
                manager_sandbox_failed(m, "cannot set up the sandbox's user namespace (see the log)");
                return 0;
        }
        /* Into the scope before anything of runsc exists. */
        r = scope_start_sync(sb, pid);
        if (r < 0) {
                manager_sandbox_failed(m, "cannot create the sandbox's transient scope (see the log)");
                return 0;
        }

        r = sd_event_add_child(m->event, &sb->supervisor_source, pid, WEXITED, on_supervisor_exit, sb);
        if (r < 0)
                return r;
        r = sd_event_add_io(m->event, &sb->control_source, sb->control_fd, EPOLLIN, on_control, sb);
        if (r < 0)
                return r;

        if (write(go_w, "g", 1) != 1)
                return -errno;
        log_info("Runtime Supervisor %d started in %s (container %s)", (int) pid, sb->scope, sb->id);
        return 0;
}

/* ---------------------------------------------------------------- stop */

static int on_stop_job_removed(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Sandbox *sb = userdata;
        const char *path, *unit, *result;
        uint32_t id;

        if (sd_bus_message_read(msg, "uoss", &id, &path, &unit, &result) < 0)
                return 0;
        if (!sb->stop_job || !streq(path, sb->stop_job))
                return 0;
        log_info("Sandbox scope %s stopped (%s)", unit, result);
        stop_finished(sb);
        return 0;
}

static int on_stop_reply(sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Sandbox *sb = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);
        const char *job;

        if (e) {
                if (!sd_bus_error_has_name(e, "org.freedesktop.systemd1.NoSuchUnit"))
                        log_warning("Stopping %s: %s", sb->scope, e->message);
                stop_finished(sb);
                return 0;
        }
        if (sd_bus_message_read(reply, "o", &job) < 0) {
                stop_finished(sb);
                return 0;
        }
        sb->stop_job = strdup(job);
        return 0;
}

int sandbox_stop(Sandbox *sb) {
        Manager *m = sb->manager;
        int r;

        if (sb->stopping)
                return sb->stop_done ? 0 : 1;
        sb->stopping = true;

        /* EOF on its control socket tells the supervisor to exit. */
        sb->control_source = sd_event_source_disable_unref(sb->control_source);
        sb->control_fd = safe_close(sb->control_fd);

        if (sb->supervisor_pid <= 0 && !sb->started) {
                (void) rm_rf(m->runtime_dir);
                sb->stop_done = true;
                return 0;
        }

        /* The scope holds the supervisor, runsc and the sandbox: stopping it stops them all. */
        r = sd_bus_match_signal(m->bus, &sb->stop_slot, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                "org.freedesktop.systemd1.Manager", "JobRemoved", on_stop_job_removed, sb);
        if (r >= 0)
                r = sd_bus_call_method_async(m->bus, NULL, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                             "org.freedesktop.systemd1.Manager", "StopUnit", on_stop_reply, sb,
                                             "ss", sb->scope, "replace");
        if (r < 0) {
                log_warning_errno(r, "Cannot ask the user manager to stop %s; killing the supervisor", sb->scope);
                if (sb->supervisor_pid > 0)
                        (void) kill(sb->supervisor_pid, SIGKILL);
                (void) rm_rf(m->runtime_dir);
                sb->stop_done = true;
                return 0;
        }
        return 1;
}

/* ------------------------------------------------------------- sessions */

static int env_push(char ***env, const char *name, const char *value) {
        _cleanup_free_ char *kv = NULL;
        size_t l = strlen(name);

        /* Later entries replace earlier ones of the same name. */
        for (char **e = *env; e && *e; e++)
                if (strncmp(*e, name, l) == 0 && (*e)[l] == '=') {
                        if (asprintf(&kv, "%s=%s", name, value) < 0)
                                return -ENOMEM;
                        free(*e);
                        *e = TAKE_PTR(kv);
                        return 0;
                }
        if (asprintf(&kv, "%s=%s", name, value) < 0)
                return -ENOMEM;
        if (strv_push(env, kv) < 0)
                return -ENOMEM;
        TAKE_PTR(kv);
        return 0;
}

/*
 * The host's terminfo entry for TERM, copied where the sandbox finds it
 * (TERMINFO_DIRS), so that the terminal works even when the image lacks it.
 */
static void install_terminfo(Sandbox *sb, const char *term) {
        static const char *const dirs[] = { "/etc/terminfo", "/lib/terminfo", "/usr/share/terminfo", NULL };
        char sub[2] = { term[0], 0 };

        if (isempty(term) || strchr(term, '/') || strlen(term) > 64 || term[0] == '.')
                return;
        for (size_t i = 0; dirs[i]; i++) {
                _cleanup_free_ char *src = NULL, *dstdir = NULL, *dst = NULL;
                if (asprintf(&src, "%s/%s/%s", dirs[i], sub, term) < 0 ||
                    asprintf(&dstdir, "%s/terminfo/%s", sb->control_dir, sub) < 0 ||
                    asprintf(&dst, "%s/%s", dstdir, term) < 0)
                        return;
                if (access(src, R_OK) < 0)
                        continue;
                (void) mkdir(dstdir, 0755);
                (void) chmod(dstdir, 0755);
                if (access(dst, F_OK) < 0)
                        (void) copy_file(src, dst, 0644);
                return;
        }
}

int sandbox_spawn_session(Sandbox *sb, Session *s, char **client_env, const int stdio[3]) {
        Manager *m = sb->manager;
        _cleanup_strv_free_ char **env = strv_copy(sb->image_env);
        _cleanup_free_ char *json = NULL;
        const char *term = NULL;
        pid_t pid;
        int r;

        if (!env)
                return -ENOMEM;
        r = env_push(&env, "HOME", "/root");
        if (r >= 0)
                r = env_push(&env, "TERMINFO_DIRS", SANDBOX_CONTROL_MOUNT "/terminfo:");
        STRV_FOREACH(e, client_env) {
                _cleanup_free_ char *name = strndup(*e, strchr(*e, '=') - *e);
                if (!name)
                        return -ENOMEM;
                if (streq(name, "TERM"))
                        term = strchr(*e, '=') + 1;
                if (r >= 0)
                        r = env_push(&env, name, strchr(*e, '=') + 1);
        }
        if (r >= 0 && sb->statx_compat) {
                /* Ours first; a preload the client asked for stays after it. */
                _cleanup_free_ char *preload = NULL;
                const char *theirs = NULL;
                STRV_FOREACH(e, env)
                        if (startswith(*e, "LD_PRELOAD="))
                                theirs = *e + strlen("LD_PRELOAD=");
                if (asprintf(&preload, "%s/lib/%s%s%s", SANDBOX_CONTROL_MOUNT, STATX_SHIM,
                             isempty(theirs) ? "" : ":", strempty(theirs)) < 0)
                        return -ENOMEM;
                r = env_push(&env, "LD_PRELOAD", preload);
        }
        if (r >= 0)
                r = env_push(&env, "LAZARET_DOMAIN_ID", m->id);
        if (r >= 0)
                r = env_push(&env, "LAZARET_SESSION_ID", s->id);
        if (r < 0)
                return r;
        if (s->terminal && !term)
                r = env_push(&env, "TERM", "xterm");
        if (r < 0)
                return r;
        if (s->terminal)
                install_terminfo(sb, term ?: "xterm");

        OciProcess p = {
                .args = s->argv,
                .env = env,
                .cwd = SANDBOX_WORKSPACE,
                .terminal = s->terminal,
        };
        r = oci_process_json(&p, &json);
        if (r < 0)
                return r;
        if (asprintf(&s->spec_path, "%s/%s.json", sb->sessions_dir, s->id) < 0 ||
            asprintf(&s->pid_path, "%s/%s.pid", sb->sessions_dir, s->id) < 0)
                return -ENOMEM;
        r = write_file(s->spec_path, json, 0600);
        if (r < 0)
                return r;

        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                sigset_t none;

                sigemptyset(&none);
                sigprocmask(SIG_SETMASK, &none, NULL);
                for (int sig = 1; sig < _NSIG; sig++)
                        (void) signal(sig, SIG_DFL);
                (void) setsid();
                for (int i = 0; i < 3; i++)
                        if (dup2(stdio[i], i) < 0)
                                _exit(126);
                /* The PTY as controlling terminal: the kernel then sends this
                 * runsc exec SIGINT/SIGQUIT/SIGTSTP/SIGWINCH, which it forwards
                 * to the foreground process group inside. */
                if (s->terminal && ioctl(0, TIOCSCTTY, 0) < 0)
                        _exit(126);
                execv(sb->runsc, (char *[]) { sb->runsc, "--root", sb->runsc_root, "exec", "--process", s->spec_path,
                                              "--internal-pid-file", s->pid_path, sb->id, NULL });
                _exit(127);
        }
        s->pid = pid;
        return 0;
}

static int read_inner_pid(Session *s) {
        _cleanup_fclose_ FILE *f = s->pid_path ? fopen(s->pid_path, "re") : NULL;
        int pid;

        if (!f || fscanf(f, "%d", &pid) != 1 || pid <= 0)
                return -ESRCH;
        return pid;
}

static int on_helper_exit(sd_event_source *src, const siginfo_t *si, void *userdata) {
        sd_event_source_disable_unref(src);
        return 0;
}

/* runsc kill --pid N ID SIG, not waited for (reaped by the event loop). */
static int runsc_kill(Sandbox *sb, int inner_pid, int sig) {
        char spid[16], ssig[16];
        sd_event_source *src = NULL;
        pid_t pid;

        snprintf(spid, sizeof(spid), "%d", inner_pid);
        snprintf(ssig, sizeof(ssig), "%d", sig);
        pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0) {
                sigset_t none;
                int null = open("/dev/null", O_RDWR | O_CLOEXEC);

                sigemptyset(&none);
                sigprocmask(SIG_SETMASK, &none, NULL);
                if (null >= 0) {
                        dup2(null, 0);
                        dup2(null, 1);
                        dup2(null, 2);
                }
                execv(sb->runsc, (char *[]) { sb->runsc, "--root", sb->runsc_root, "kill", "--pid", spid, sb->id, ssig, NULL });
                _exit(127);
        }
        if (sd_event_add_child(sb->manager->event, &src, pid, WEXITED, on_helper_exit, NULL) < 0)
                (void) waitpid(pid, NULL, 0);
        return 0;
}

int sandbox_signal_session(Sandbox *sb, Session *s, int sig, bool foreground) {
        int inner;

        /* With a terminal, runsc exec forwards to the foreground process group. */
        if (s->terminal)
                return kill(s->pid, sig) < 0 ? -errno : 0;
        inner = read_inner_pid(s);
        if (inner < 0)
                return inner;
        return runsc_kill(sb, inner, sig);
}

int sandbox_kill_session(Sandbox *sb, Session *s) {
        int inner;

        if (s->terminal && s->pid > 0)
                (void) kill(s->pid, SIGHUP);
        inner = read_inner_pid(s);
        if (inner < 0)
                return inner;
        return runsc_kill(sb, inner, SIGKILL);
}
