/* gnuplot.c - see gnuplot.h. */
#define _POSIX_C_SOURCE 200809L
#include "gnuplot.h"
#include "dirpath.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs gnuplot on script: 0, else -1 with why saying how it failed. */
static int run_gnuplot(const char *script, char *why, size_t len)
{
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, len, "fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        execlp("gnuplot", "gnuplot", script, (char *)NULL);
        _exit(127);
    }
    int status;
    if (waitpid(pid, &status, 0) < 0) {
        snprintf(why, len, "waitpid: %s", strerror(errno));
        return -1;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
        snprintf(why, len, "gnuplot could not be run (is it installed?)");
    else if (WIFEXITED(status))
        snprintf(why, len, "gnuplot exited with status %d", WEXITSTATUS(status));
    else
        snprintf(why, len, "gnuplot was killed by signal %d", WTERMSIG(status));
    return -1;
}

/* Whether a PNG can be created at png: 0, else -1 (said). */
static int check_png_path(const char *png)
{
    char dir[512];
    const char *base = dirpath_split(png, dir, sizeof dir);
    struct stat sb;
    if (!*base || (stat(png, &sb) == 0 && S_ISDIR(sb.st_mode))) {
        fprintf(stderr, "clgrad-bench: --plot %s: is a directory; expected a file name\n", png);
        return -1;
    }
    const char *bad = NULL;
    if (stat(dir, &sb) != 0)
        bad = errno == ENOENT ? "it does not exist" : strerror(errno);
    else if (!S_ISDIR(sb.st_mode))
        bad = "not a directory";
    else if (access(dir, W_OK | X_OK) != 0)
        bad = strerror(errno);
    if (bad) {
        fprintf(stderr, "clgrad-bench: --plot %s: cannot create files in the directory %s: %s\n",
                png, dir, bad);
        return -1;
    }
    return 0;
}

/* Removes dir and the files in it. */
static void remove_all(const char *dir)
{
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        char path[1024];
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
            (size_t)snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < sizeof path)
            remove(path);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

int bench_gnuplot_draw(const bench_gnuplot_job *job)
{
    if (check_png_path(job->png) != 0)
        return -1;
    const char *tmp = getenv("TMPDIR");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", job->tmp_name);
    if (!mkdtemp(dir)) {
        fprintf(stderr, "clgrad-bench: --plot: cannot create a temporary directory %s: %s\n", dir,
                strerror(errno));
        return -1;
    }
    char script[600], why[700] = "";
    snprintf(script, sizeof script, "%s/plot.gp", dir);
    int rc = job->write_data(job->what, dir);
    if (rc)
        snprintf(why, sizeof why, "writing gnuplot's data in %s failed", dir);
    /* pngcairo draws better; libgd's png is the fallback */
    if (!rc) {
        rc = job->write_script(job->what, dir, job->png, "pngcairo", script);
        if (!rc && run_gnuplot(script, why, sizeof why) != 0) {
            rc = job->write_script(job->what, dir, job->png, "png", script);
            if (!rc)
                rc = run_gnuplot(script, why, sizeof why);
        }
        if (rc && !why[0])
            snprintf(why, sizeof why, "writing the gnuplot script %s failed", script);
    }
    if (rc)
        fprintf(stderr, "clgrad-bench: --plot %s: %s\n", job->png, why);
    remove_all(dir);
    return rc;
}
