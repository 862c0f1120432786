/* tune_prebuild.h - clgrad-tune's builds in parallel: CLBlast's GEMM
 * programs of the candidates about to be measured, built by other
 * processes while this one builds its own.
 *
 * Why it pays: CLBlast bakes every parameter into its program's source
 * (the switch-over size too), so each candidate is a build of its own
 * (8-11 s on PoCL, on one host core), and no two candidates share one.
 * The driver compiles on the host's cores and keeps what it built in a
 * disk cache (PoCL's POCL_CACHE_DIR, which clgrad-tune points into
 * clgrad's cache; NVIDIA's and Mesa's own caches). So while this process
 * builds candidate c, `clgrad-tune --prebuild` processes build the next
 * ones on the other cores, and when this process gets to them their
 * builds are cache hits. Nothing is timed while a prebuild runs
 * (ts_prebuild_wait comes before every timing): the figures are as
 * without them. If a prebuilt candidate's build was not faster here than
 * a build (a driver without a disk cache), prebuilding stops for the rest
 * of the run (noted). */
#ifndef TUNE_TUNE_PREBUILD_H
#define TUNE_TUNE_PREBUILD_H

#include "tune_internal.h"

/* "NAME=value NAME=value ..." into ps: 0, or -1 when it is not that. */
int ts_parse_params(const char *text, param_set *ps);

/* Starts a process building (d, i, threshold) with the helpers' s->aux on
 * s's device, at every shape of the request (each kernel variant a shape
 * runs is compiled at its first launch). 0, or -1 when none was started
 * (prebuilding off, no core free, spawn failed): nothing is lost then. */
int ts_prebuild_start(search *s, const param_set *d, const param_set *i, size_t threshold);

/* Waits for every process started. */
void ts_prebuild_wait(search *s);

/* After this process built a candidate some prebuild had built: build_s
 * seconds it took. Stops prebuilding when that was no cache hit. */
void ts_prebuild_check(search *s, double build_s);

/* The --prebuild process (main.c hands it argv when argv[1] is
 * "--prebuild"): the arguments ts_prebuild_start passes. Exit status 0
 * when every shape ran. */
int tune_prebuild_main(int argc, char **argv);

#endif /* TUNE_TUNE_PREBUILD_H */
