/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The current checkout's state directory at a Domain's start (checkout.h,
 * spec §4.6 "Domain state belongs to its checkout"): found or begun below
 * <Domain Root>/checkouts/, the state of an older Lazaret adopted or set
 * aside once, and one line for the launch when another checkout's state was
 * set aside. Plain file work below the Domain Root's fd, never following a
 * link; nothing here waits for a process.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-id128.h>

#include "checkout-state.h"
#include "checkout.h"
#include "cleanup.h"
#include "fs-util.h"
#include "git-refs.h"
#include "util.h"

#define CHECKOUT_SET_ASIDE_NOTICE \
        "earlier state of another checkout at this path was set aside (protected changes, ignored files such as " \
        "node_modules/, git state kept inside); see: lazaretctl state list; remove it with: lazaretctl state gc"

/* Writes the record under a temporary name and renames it into place. */
static int write_record(int cfd, const CheckoutRecord *rec) {
        _cleanup_free_ char *text = NULL;
        int r;

        r = checkout_record_to_string(rec, &text);
        if (r < 0)
                return r;
        return write_line_file_replace_at(cfd, CHECKOUT_RECORD_FILE, text, 0600);
}

/* The record at cfd, or -errno (-ENOENT: none). */
static int read_record(int cfd, CheckoutRecord *ret) {
        _cleanup_close_ int fd = openat(cfd, CHECKOUT_RECORD_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_free_ char *text = NULL, *why = NULL;
        size_t n;
        int r;

        if (fd < 0)
                return -errno;
        r = read_full_fd(fd, 64 * 1024, &text, &n);
        if (r < 0)
                return r;
        return checkout_record_parse(text, n, ret, &why);
}

/* An empty directory of an older Lazaret's is nothing to keep: removed. 1 if it was. */
static int remove_if_empty(int dfd, const char *name) {
        if (unlinkat(dfd, name, AT_REMOVEDIR) >= 0)
                return 1;
        return errno == ENOTEMPTY || errno == EEXIST ? 0 : -errno;
}

/*
 * view/, view-git/ and ignored/ of a Lazaret without checkout identities:
 * adopted into the current checkout's directory when they were begun after
 * this checkout was made (checkout_legacy_belongs()), else moved whole into
 * checkouts/legacy-<random>/ (*ret_set_aside). Empty ones are removed.
 */
static int sort_legacy(int dfd, int csfd, const CheckoutId *id, const char *key, const char *workspace,
                       bool *ret_set_aside, char **ret_error) {
        CheckoutDirId legacy[3];
        const char *names[3];
        char dest[CHECKOUT_KEY_MAX];
        _cleanup_close_ int tfd = -EBADF;
        size_t n = 0, kept = 0;
        bool adopt;
        int r;

        *ret_set_aside = false;
        r = checkout_legacy_scan(dfd, legacy, names, &n);
        if (r < 0)
                return errorf(ret_error, r, "cannot inspect the Domain's earlier view state: %s", strerror(-r));
        for (size_t i = 0; i < n; i++) {
                r = remove_if_empty(dfd, names[i]);
                if (r < 0)
                        return errorf(ret_error, r, "cannot inspect the Domain's earlier %s/: %s", names[i], strerror(-r));
                if (r == 0) {
                        legacy[kept] = legacy[i];
                        names[kept++] = names[i];
                }
        }
        if (kept == 0)
                return 0;
        adopt = checkout_legacy_belongs(id, legacy, kept);
        /* This checkout already has state of its own (an older Lazaret ran again since): that one stays, this goes aside. */
        if (adopt && faccessat(csfd, key, F_OK, AT_SYMLINK_NOFOLLOW) >= 0)
                adopt = false;
        if (adopt)
                snprintf(dest, sizeof(dest), "%s", key);
        else {
                sd_id128_t rnd;
                char hex[SD_ID128_STRING_MAX];

                r = sd_id128_randomize(&rnd);
                if (r < 0)
                        return r;
                sd_id128_to_string(rnd, hex);
                snprintf(dest, sizeof(dest), CHECKOUT_LEGACY_PREFIX "%.*s", CHECKOUT_KEY_HEX_LEN, hex);
        }
        tfd = mkdir_open_at(csfd, dest, 0700);
        if (tfd < 0)
                return errorf(ret_error, tfd, "cannot make or open %s/%s: %s", CHECKOUTS_DIR, dest, strerror(-tfd));
        if (!adopt) {
                time_t now = time(NULL);
                CheckoutRecord rec = {
                        .key = dest,
                        .workspace = (char *) workspace,
                        .first_used = now,
                        .last_used = now,
                        .note = (char *) "state of a Lazaret without checkout identities, set aside: it was begun "
                                         "before the checkout now at this path was made, or that cannot be told",
                };
                r = write_record(tfd, &rec);
                if (r < 0)
                        return errorf(ret_error, r, "cannot write %s/%s/%s: %s", CHECKOUTS_DIR, dest,
                                      CHECKOUT_RECORD_FILE, strerror(-r));
        }
        for (size_t i = 0; i < kept; i++)
                if (renameat(dfd, names[i], tfd, names[i]) < 0)
                        return errorf(ret_error, -errno, "cannot move the Domain's earlier %s/ into %s/%s: %m", names[i],
                                      CHECKOUTS_DIR, dest);
        (void) fsync(tfd);
        (void) fsync(dfd);
        *ret_set_aside = !adopt;
        return 0;
}

/* Whether checkouts/ holds a checkout directory other than key's. */
static int others_exist(int csfd, const char *key) {
        _cleanup_(closedirp) DIR *d = NULL;
        struct dirent *de;
        int r;

        r = opendir_at(csfd, &d);
        if (r < 0)
                return r;
        while ((de = readdir(d)))
                if (checkout_key_is_valid(de->d_name) && !streq(de->d_name, key))
                        return 1;
        return 0;
}

int checkout_state_prepare(const char *domain_dir, const char *workspace, const CheckoutId *id,
                           char ret_key[static CHECKOUT_KEY_MAX], char **ret_notice, char **ret_error) {
        _cleanup_close_ int dfd = -EBADF, csfd = -EBADF, cfd = -EBADF;
        _cleanup_(checkout_record_done) CheckoutRecord old = {};
        char key[CHECKOUT_KEY_MAX];
        bool set_aside = false, fresh = false;
        time_t now = time(NULL);
        int r;

        checkout_id_key(id, key);
        if (!key[0])
                return -ENOMEM;
        dfd = open(domain_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
                return errorf(ret_error, -errno, "cannot open the Domain Root %s: %m", domain_dir);
        csfd = mkdir_open_at(dfd, CHECKOUTS_DIR, 0700);
        if (csfd < 0)
                return errorf(ret_error, csfd, "cannot make or open %s/%s: %s", domain_dir, CHECKOUTS_DIR,
                              strerror(-csfd));

        r = sort_legacy(dfd, csfd, id, key, workspace, &set_aside, ret_error);
        if (r < 0)
                return r;

        cfd = openat(csfd, key, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (cfd < 0 && errno == ENOENT) {
                fresh = true;
                if (mkdirat(csfd, key, 0700) < 0)
                        return errorf(ret_error, -errno, "cannot create %s/%s/%s: %m", domain_dir, CHECKOUTS_DIR, key);
                cfd = openat(csfd, key, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        if (cfd < 0)
                return errorf(ret_error, -errno, "cannot open %s/%s/%s: %m", domain_dir, CHECKOUTS_DIR, key);
        /* Its record: when it was first and last used, and where (a checkout moved back keeps its state). */
        r = read_record(cfd, &old);
        r = write_record(cfd, &(CheckoutRecord) {
                                      .key = key,
                                      .has_id = true,
                                      .id = *id,
                                      .workspace = (char *) workspace,
                                      .first_used = r >= 0 && old.first_used > 0 ? old.first_used : now,
                                      .last_used = now,
                              });
        if (r < 0)
                return errorf(ret_error, r, "cannot write %s/%s/%s/%s: %s", domain_dir, CHECKOUTS_DIR, key,
                              CHECKOUT_RECORD_FILE, strerror(-r));
        if (fresh && !set_aside) {
                r = others_exist(csfd, key);
                if (r < 0)
                        return errorf(ret_error, r, "cannot list %s/%s: %s", domain_dir, CHECKOUTS_DIR, strerror(-r));
                set_aside = r > 0;
        }
        if (set_aside && ret_notice && !(*ret_notice = strdup(CHECKOUT_SET_ASIDE_NOTICE)))
                return -ENOMEM;
        memcpy(ret_key, key, CHECKOUT_KEY_MAX);
        return 0;
}

int checkout_state_record_refs(const char *domain_dir, const char *key, int workspace_fd, const GitLinked *linked,
                               char **ret_error) {
        _cleanup_(git_refs_done) GitRefs now = {}, old = {};
        _cleanup_free_ char *dir = NULL;
        _cleanup_close_ int cfd = -EBADF;
        int r;

        if (streq(key, CHECKOUT_KEY_NONE))
                return 0;
        r = checkout_state_path(domain_dir, key, NULL, &dir);
        if (r < 0)
                return r;
        cfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (cfd < 0)
                return errorf(ret_error, -errno, "cannot open %s: %m", dir);
        /* Kept until the developer accepts the commits (lazaretctl changes accept-commits). */
        r = checkout_refs_record_read(cfd, &old, NULL);
        if (r >= 0 || r == -ENOMEM)
                return r;
        r = checkout_refs_now(workspace_fd, linked, &now);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return errorf(ret_error, r, "cannot read the repository's refs: %s", git_refs_strerror(r));
        r = checkout_refs_record_write(cfd, &now, (int64_t) time(NULL));
        if (r < 0)
                return errorf(ret_error, r, "cannot write %s/%s: %s", dir, CHECKOUT_REFS_FILE, strerror(-r));
        return 0;
}
