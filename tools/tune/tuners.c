/* tuners.c - running CLBlast's tuner programs within a time slice (see
 * tuners.h). */
#define _GNU_SOURCE
#include "tuners.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The program's full path in PATH, or 0 if it is not there. */
static int find_in_path(const char *prog, char *out, size_t size)
{
    const char *path = getenv("PATH");
    if (!path || !*path)
        path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        const char *colon = strchr(path, ':');
        size_t len = colon ? (size_t)(colon - path) : strlen(path);
        if ((size_t)snprintf(out, size, "%.*s/%s", (int)len, len ? path : ".", prog) < size &&
            access(out, X_OK) == 0)
            return 1;
        path += len + (colon ? 1 : 0);
    }
    return 0;
}

/* Removes ANSI colour sequences (ESC [ ... letter) in place. */
static void strip_ansi(char *s)
{
    char *w = s;
    for (char *r = s; *r;) {
        if (r[0] == 0x1b && r[1] == '[') {
            r += 2;
            while (*r && !((*r >= 'A' && *r <= 'Z') || (*r >= 'a' && *r <= 'z')))
                r++;
            if (*r)
                r++;
            continue;
        }
        *w++ = *r++;
    }
    *w = '\0';
}

/* Splits the fields of a table row at '|'; returns how many. */
static size_t row_fields(char *s, char **f, size_t max)
{
    size_t n = 0;
    if (*s != '|')
        return 0;
    s++;
    while (n < max) {
        char *bar = strchr(s, '|');
        if (!bar)
            break;
        *bar = '\0';
        f[n++] = s;
        s = bar + 1;
    }
    return n;
}

int tuner_parse_row(const char *line, char names[][TUNER_NAME], size_t n, tuner_config *c)
{
    if (!strstr(line, "results match") || n == 0 || n > TUNER_MAX_PARAMS)
        return 0;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", line);
    /* | id | total | params | local | global | compiles | time | GFLOPS | status | */
    char *f[12];
    if (row_fields(buf, f, 12) < 9)
        return 0;
    char *end;
    if (strtoul(f[0], &end, 10) == 0 || (*end && *end != ' '))
        return 0;
    memset(c, 0, sizeof *c);
    char *p = f[2];
    for (size_t i = 0; i < n; i++) {
        errno = 0;
        unsigned long v = strtoul(p, &end, 10);
        if (end == p || errno)
            return 0;
        snprintf(c->name[i], TUNER_NAME, "%s", names[i]);
        c->value[i] = v;
        p = end;
    }
    while (*p == ' ')
        p++;
    if (*p) /* more columns than names */
        return 0;
    c->n = n;
    c->ms = strtod(f[6], &end);
    if (end == f[6] || !strstr(end, "ms") || !(c->ms > 0))
        return 0;
    c->gflops = strtod(f[7], &end);
    return end != f[7];
}

static int by_time(const void *a, const void *b)
{
    const tuner_config *x = a, *y = b;
    return x->ms < y->ms ? -1 : x->ms > y->ms;
}

void tuner_sort(tuner_config *c, size_t n)
{
    if (n > 1)
        qsort(c, n, sizeof *c, by_time);
}

void tuner_run_free(tuner_run *r)
{
    free(r->configs);
    r->configs = NULL;
    r->n_configs = r->cap = 0;
}

typedef struct parser {
    char names[TUNER_MAX_PARAMS][TUNER_NAME];
    size_t n_names;
    char line[4096];
    size_t len;
} parser;

static void take_line(tuner_run *r, parser *ps, char *s)
{
    strip_ansi(s);
    const char *explored = "* Parameters explored:";
    if (strncmp(s, explored, strlen(explored)) == 0) {
        ps->n_names = 0;
        char *save = NULL;
        for (char *tok = strtok_r(s + strlen(explored), " \r", &save);
             tok && ps->n_names < TUNER_MAX_PARAMS; tok = strtok_r(NULL, " \r", &save))
            snprintf(ps->names[ps->n_names++], TUNER_NAME, "%s", tok);
        return;
    }
    if (strncmp(s, "* Found ", 8) == 0 && strstr(s, "configuration")) {
        r->variation++;
        r->total = strtoul(s + 8, NULL, 10);
        return;
    }
    const char *subset = "* Exploring a random subset of ";
    if (strncmp(s, subset, strlen(subset)) == 0) {
        r->total = strtoul(s + strlen(subset), NULL, 10);
        return;
    }
    if (s[0] != '|' || strstr(s, "|  ref |") || strstr(s, "ID |"))
        return;
    char *f[3];
    char copy[64];
    snprintf(copy, sizeof copy, "%s", s);
    if (row_fields(copy, f, 2) < 1 || strtoul(f[0], NULL, 10) == 0)
        return;
    r->rows++;
    tuner_config c;
    if (!tuner_parse_row(s, ps->names, ps->n_names, &c))
        return;
    c.variation = r->variation;
    if (r->n_configs == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 64;
        tuner_config *q = realloc(r->configs, cap * sizeof *q);
        if (!q)
            return; /* keep what we have */
        r->configs = q;
        r->cap = cap;
    }
    r->configs[r->n_configs++] = c;
}

static void feed(tuner_run *r, parser *ps, const char *data, size_t n, tuner_progress_fn progress,
                 void *user)
{
    for (size_t i = 0; i < n; i++) {
        char ch = data[i];
        if (ch == '\n' || ps->len + 1 == sizeof ps->line) {
            ps->line[ps->len] = '\0';
            size_t before = r->rows;
            take_line(r, ps, ps->line);
            ps->len = 0;
            if (r->rows != before && progress)
                progress(user, r);
            if (ch == '\n')
                continue;
        }
        ps->line[ps->len++] = ch;
    }
}

/* rm -r of the tuner's scratch directory (its JSON files only). */
static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(dir);
}

int tuner_run_program(tuner_run *r, tuner_progress_fn progress, void *user)
{
    r->error[0] = '\0';
    char prog[4096], stdbuf[4096];
    if (!find_in_path(r->program, prog, sizeof prog)) {
        snprintf(r->error, sizeof r->error,
                 "%s is not installed (Debian package clblast-utils: CLBlast's tuners)", r->program);
        return -1;
    }
    int have_stdbuf = find_in_path("stdbuf", stdbuf, sizeof stdbuf);
    /* The tuners write their JSON into the working directory: give them a
     * scratch one. */
    char dir[] = "/tmp/clgrad-tune-XXXXXX";
    if (!mkdtemp(dir)) {
        snprintf(r->error, sizeof r->error, "mkdtemp: %s", strerror(errno));
        return -1;
    }
    char a[7][32];
    snprintf(a[0], 32, "%u", r->platform);
    snprintf(a[1], 32, "%u", r->device);
    snprintf(a[2], 32, "%zu", r->m);
    snprintf(a[3], 32, "%zu", r->n);
    snprintf(a[4], 32, "%zu", r->k);
    snprintf(a[5], 32, "%g", r->fraction);
    char *argv[] = {stdbuf, "-oL", "-eL", prog, "-platform", a[0], "-device", a[1], "-precision",
                    "32", "-m", a[2], "-n", a[3], "-k", a[4], "-fraction", a[5], NULL};
    char **args = have_stdbuf ? argv : argv + 3;

    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        snprintf(r->error, sizeof r->error, "pipe: %s", strerror(errno));
        remove_dir(dir);
        return -1;
    }
    double t0 = now_s();
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(r->error, sizeof r->error, "fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        remove_dir(dir);
        return -1;
    }
    if (pid == 0) {
        /* Its own process group, so that stopping it reaches anything it
         * started. */
        setpgid(0, 0);
        if (chdir(dir) != 0 || dup2(fds[1], 1) < 0 || dup2(fds[1], 2) < 0)
            _exit(126);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0)
            dup2(devnull, 0);
        execv(args[0], args);
        _exit(127);
    }
    setpgid(pid, pid);
    close(fds[1]);
    parser ps = {0};
    char buf[4096];
    int status = 0, reaped = 0;
    for (;;) {
        double left = r->seconds - (now_s() - t0);
        if (left <= 0) {
            r->stopped = 1;
            break;
        }
        struct pollfd p = {fds[0], POLLIN, 0};
        int pr = poll(&p, 1, (int)(left * 1000) + 1);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr == 0)
            continue;
        ssize_t got = read(fds[0], buf, sizeof buf);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break; /* the program closed its output: it ended */
        feed(r, &ps, buf, (size_t)got, progress, user);
    }
    if (r->stopped) {
        kill(-pid, SIGTERM);
        for (int i = 0; i < 20 && !reaped; i++) {
            if (waitpid(pid, &status, WNOHANG) == pid)
                reaped = 1;
            else
                usleep(50000);
        }
        if (!reaped)
            kill(-pid, SIGKILL);
    }
    if (!reaped)
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
    close(fds[0]);
    if (ps.len) {
        ps.line[ps.len] = '\0';
        take_line(r, &ps, ps.line);
    }
    r->elapsed = now_s() - t0;
    r->finished = !r->stopped && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!r->stopped && WIFEXITED(status) && WEXITSTATUS(status) == 127 && r->rows == 0)
        snprintf(r->error, sizeof r->error, "%.400s could not be started", prog);
    remove_dir(dir);
    if (progress)
        progress(user, r);
    return r->error[0] ? -1 : 0;
}
