/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Evaluations per second of the ignore rules: a node + python .gitignore
 * at the top, two nested ones, info/exclude and a global file, over a
 * generated 20,000-path tree. Prints two figures: ignore_match() with its
 * whole parent-directory walk (each directory file cached), and the single
 * step a FUSE view does when it knows the parent's verdict already
 * (ignore_lists_match() against the chain).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "git-ignore.h"

static const char top[] =
        "logs\n*.log\nnpm-debug.log*\nyarn-debug.log*\n.pnpm-debug.log*\nnode_modules/\njspm_packages/\n"
        "coverage\n*.lcov\n.nyc_output\ndist\nbuild/Release\n.next\nout\n.nuxt\n.cache/\n*.tsbuildinfo\n"
        ".eslintcache\n.env\n.env.*.local\n!.env.example\n.yarn/cache\n.pnp.*\n"
        "__pycache__/\n*.py[cod]\n*$py.class\n*.so\n.Python\nbuild/\ndevelop-eggs/\ndownloads/\neggs/\n"
        ".eggs/\nlib64/\nparts/\nsdist/\nvar/\nwheels/\n*.egg-info/\n.installed.cfg\n*.egg\nMANIFEST\n"
        "htmlcov/\n.tox/\n.coverage\n.coverage.*\n.pytest_cache/\n.venv\nenv/\nvenv/\n/site\n.mypy_cache/\n"
        "**/tmp/**\n*.swp\n*~\n.DS_Store\n";

static int read_dir(void *userdata, const char *dir, IgnoreList **ret, char **ret_error) {
        const char *text = NULL;
        if (strcmp(dir, "") == 0)
                text = top;
        else if (strcmp(dir, "src/m3") == 0)
                text = "generated/\n!keep.log\n";
        else if (strcmp(dir, "docs") == 0)
                text = "_build\n*.pdf\n";
        if (!text) {
                *ret = NULL;
                return 0;
        }
        return ignore_list_parse(text, strlen(text), dir, dir, ret, ret_error);
}

static double now(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

int main(void) {
        static const char *const tops[] = { "src", "node_modules", "tests", "docs", "build", "lib", "__pycache__" };
        static const char *const exts[] = { ".js", ".ts", ".py", ".pyc", ".log", ".json", ".md", ".c", ".o", "" };
        enum { N = 20000, ROUNDS = 10 };
        char **paths = calloc(N, sizeof(char *));
        IgnoreCache *cache;
        IgnoreList *info, *global;
        unsigned long long seed = 42, excluded = 0;

        for (int i = 0; i < N; i++) {
                char p[256];
                seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
                unsigned r = (unsigned) (seed >> 33);
                snprintf(p, sizeof(p), "%s/m%u/%s%u/file%u%s", tops[r % 7], (r >> 3) % 12,
                         (r >> 7) % 5 == 0 ? "generated" : "pkg", (r >> 10) % 40, i, exts[(r >> 16) % 10]);
                paths[i] = strdup(p);
        }
        if (ignore_cache_new(read_dir, NULL, &cache) < 0 ||
            ignore_list_parse("*.tmp\n", 6, "", "info", &info, NULL) < 0 ||
            ignore_list_parse(".idea/\n*.iml\n", 13, "", "global", &global, NULL) < 0)
                return EXIT_FAILURE;
        IgnoreSet set = { ignore_cache_load, cache, info, global };

        double t = now();
        for (int round = 0; round < ROUNDS; round++)
                for (int i = 0; i < N; i++)
                        excluded += ignore_match(&set, paths[i], false, NULL, NULL) == IGNORE_EXCLUDED;
        t = now() - t;
        printf("ignore_match: %.0f paths/s (%d paths x %d, %.1f%% excluded, %.2f us each)\n", N * ROUNDS / t, N,
               ROUNDS, 100.0 * (double) excluded / (N * ROUNDS), t * 1e6 / (N * ROUNDS));

        const IgnoreList *top_list = NULL;
        (void) ignore_cache_load(cache, "", &top_list, NULL);
        const IgnoreList *chain[] = { top_list, info, global };
        t = now();
        excluded = 0;
        for (int round = 0; round < ROUNDS; round++)
                for (int i = 0; i < N; i++)
                        excluded += ignore_lists_match(chain, 3, paths[i], false, NULL) == IGNORE_EXCLUDED;
        t = now() - t;
        printf("one step (path alone, %zu rules): %.0f paths/s (%.2f us each)\n",
               ignore_list_size(top_list) + 3, N * ROUNDS / t, t * 1e6 / (N * ROUNDS));
        return EXIT_SUCCESS;
}
