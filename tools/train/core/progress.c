/* progress.c - progress bar / periodic lines on stderr (see progress.h). */
#include "progress.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#define PLAIN_INTERVAL_S 10.0
#define BAR_INTERVAL_S 0.2
#define BAR_WIDTH 30

double progress_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

void progress_init(progress *p, int quiet, uint64_t total_updates)
{
    p->quiet = quiet;
    p->tty = isatty(STDERR_FILENO);
    p->total_updates = total_updates ? total_updates : 1;
    p->last_print = progress_now();
    p->bar_shown = 0;
    p->have_first = 0;
    if (!p->unit) {
        p->unit = "samples";
        p->unit_per_sample = 1;
    }
}

void progress_unit(progress *p, const char *unit, double per_sample)
{
    p->unit = unit;
    p->unit_per_sample = per_sample;
}

static void format_eta(char *buf, size_t len, double s)
{
    if (s < 0 || s > 360000) {
        snprintf(buf, len, "--:--");
        return;
    }
    unsigned t = (unsigned)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, len, "%u:%02u:%02u", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, len, "%u:%02u", t / 60, t % 60);
}

int progress_due(const progress *p, uint64_t updates)
{
    if (p->quiet)
        return 0;
    if (updates >= p->total_updates)
        return 1;
    return progress_now() - p->last_print >= (p->tty ? BAR_INTERVAL_S : PLAIN_INTERVAL_S);
}

void progress_update(progress *p, uint64_t updates, uint64_t samples, double train_seconds,
                     unsigned epoch, double loss)
{
    if (!p->have_first) {
        p->have_first = 1;
        p->first_updates = updates;
        p->first_seconds = train_seconds;
    }
    if (!progress_due(p, updates))
        return;
    double now = progress_now();
    p->last_print = now;
    double rate = train_seconds > 0 ? (double)samples * p->unit_per_sample / train_seconds : 0;
    char eta[32] = "warming up";
    if (updates >= p->total_updates) {
        format_eta(eta, sizeof eta, 0);
    } else if (updates > p->first_updates) {
        double per_update = (train_seconds - p->first_seconds) / (double)(updates - p->first_updates);
        format_eta(eta, sizeof eta, per_update * (double)(p->total_updates - updates));
    }
    double frac = (double)updates / (double)p->total_updates;
    if (p->tty) {
        char bar[BAR_WIDTH + 1];
        int fill = (int)(frac * BAR_WIDTH);
        for (int i = 0; i < BAR_WIDTH; i++)
            bar[i] = i < fill ? '=' : (i == fill ? '>' : ' ');
        bar[BAR_WIDTH] = 0;
        fprintf(stderr, "\r\033[K[%s] %3.0f%% %llu/%llu updates  epoch %u  loss %.4f  %.0f %s/s  ETA %s",
                bar, frac * 100, (unsigned long long)updates,
                (unsigned long long)p->total_updates, epoch, loss, rate, p->unit, eta);
        p->bar_shown = 1;
    } else {
        fprintf(stderr, "update %llu/%llu (%.0f%%)  epoch %u  loss %.4f  %.0f %s/s  ETA %s\n",
                (unsigned long long)updates, (unsigned long long)p->total_updates, frac * 100,
                epoch, loss, rate, p->unit, eta);
    }
    fflush(stderr);
}

void progress_clear(progress *p)
{
    if (p->bar_shown) {
        fprintf(stderr, "\r\033[K");
        p->bar_shown = 0;
    }
}

static void vlog(progress *p, const char *fmt, va_list ap)
{
    progress_clear(p);
    vfprintf(stderr, fmt, ap);
    fflush(stderr);
}

void progress_log(progress *p, const char *fmt, ...)
{
    if (p->quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    vlog(p, fmt, ap);
    va_end(ap);
}

void progress_warn(progress *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog(p, fmt, ap);
    va_end(ap);
}
