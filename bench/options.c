/* options.c - clgrad-bench's command line. */
#include "bench_main.h"
#include "file_id.h"
#include "input_file.h"
#include "output_file.h"
#include "tuning_spec.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: clgrad-bench [options]\n"
            "  --device SEL      device: index, P:D or name substring (default: "
            "CLGRAD_DEVICE, else first GPU)\n"
            "  --sizes LIST      parameter counts, e.g. 2^24,2^26 (default; clamped to "
            "what fits)\n"
            "  --k K             micro-steps per update (default 4)\n"
            "  --tensors T       tensors per model (default 256)\n"
            "  --vram BYTES      memory budget, e.g. 8G (default 8 GiB): caps what the "
            "bench allocates\n"
            "                    and sizes the largest model in the memory section\n"
            "  --configs LIST    only these configs (sgd_momentum,adam,adamw,"
            "adamw_clip_dls,\n"
            "                    adamw_fp16_grads,lion; and adamw_bf16_states,\n"
            "                    adamw_q8, adamw_q4: smaller states, fused only)\n"
            "  --reps MIN[,MAX]  repetitions per case (default 5,30)\n"
            "  --target-ms MS    calibrate repetitions to about MS of cycles per case "
            "(default 1500)\n"
            "  --warmup W        untimed cycles per case (default 2)\n"
            "  --stream-n N      floats per STREAM array (default 2^25)\n"
            "  --vw W            STREAM vector width 1,2,4,8,16 only (default: sweep all)\n"
            "  --wg SIZE         work-group size of the bench's kernels (default: STREAM\n"
            "                    sweeps 64, 256, 1024; hand-rolled update 256)\n"
            "  --quick           small N, few repetitions: under a minute, every field\n"
            "  --no-cases        only STREAM, memory and launch sections\n"
            "  --e2e             end to end with clgrad-train's code (if built with it)\n"
            "  --no-gemm         skip the GEMM section (clgrad-train's GEMM shapes, CLBlast's\n"
            "                    defaults against the device's tuning from clgrad-tune)\n"
            "  --tuning T        the GEMM section's tuning: auto (default: the device's file),\n"
            "                    off (CLBlast's defaults on both sides) or a tuning file\n"
            "  --fit MEMORY      the planner only: for every way of holding the training\n"
            "                    state, bytes per parameter and the largest model that fits\n"
            "                    MEMORY (e.g. 8G); --json and --plot then write its table\n"
            "  --reserve BYTES   with --fit: memory kept for activations (default 0)\n"
            "  --fit-params N    with --fit: the configuration a model of N parameters needs\n"
            "                    (default: for 0.5, 1, 2 and 4 billion)\n"
            "  --shards R        with --fit: per card of ZeRO-1 over R cards (optimizer\n"
            "                    states split R ways; default 1)\n"
            "  --dist            under mpirun -np R (R >= 2), with libclgrad-mpi: bytes on the\n"
            "                    wire and seconds of communication per update, DDP and\n"
            "                    ZeRO-1 (one exchange per k micro-steps) against exchanging\n"
            "                    every micro-step, and ZeRO-1's optimizer-state bytes per\n"
            "                    rank; N from --sizes (default 2^22,2^24), k = 4 and 8\n"
            "                    (--k K: K only); nothing else runs; writes the table, --json\n"
            "  --json FILE       --csv FILE       --plot FILE.png\n"
            "                    (checked before the run: their directories must exist and be\n"
            "                    writable)\n");
}

uint64_t bench_parse_size(const char *s)
{
    if (!s || *s < '0' || *s > '9') /* strtoull would accept "-1" */
        return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return 0;
    if (*end == '^') {
        if (v != 2)
            return 0;
        unsigned long long e = strtoull(end + 1, &end, 10);
        if (e > 62 || *end)
            return 0;
        return 1ull << e;
    }
    uint64_t mult = 1;
    switch (*end) {
    case '\0':
        return v;
    case 'k': case 'K':
        mult = 1ull << 10;
        break;
    case 'm': case 'M':
        mult = 1ull << 20;
        break;
    case 'g': case 'G':
        mult = 1ull << 30;
        break;
    default:
        return 0;
    }
    end++;
    if (*end && strcmp(end, "iB") != 0 && strcmp(end, "B") != 0 && strcmp(end, "i") != 0)
        return 0;
    if (v > UINT64_MAX / mult)
        return 0;
    return v * mult;
}

static int parse_list(bench_options *o, const char *s)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    o->n_sizes = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        uint64_t v = bench_parse_size(tok);
        if (!v || o->n_sizes == BENCH_MAX_SIZES)
            return -1;
        o->sizes[o->n_sizes++] = v;
    }
    return o->n_sizes ? 0 : -1;
}

static int parse_unsigned(const char *s, unsigned *out, unsigned lo)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > 1000000ul)
        return -1;
    *out = (unsigned)v;
    return 0;
}

static void set_defaults(bench_options *o, int quick)
{
    const char *keep_configs = o->configs;
    memset(o, 0, sizeof *o);
    o->configs = keep_configs;
    o->quick = quick;
    o->k = 4;
    o->tensors = 256;
    o->vram = 8ull << 30;
    o->vw = 0; /* STREAM sweeps every width */
    if (quick) {
        o->sizes[0] = 1ull << 21;
        o->n_sizes = 1;
        o->stream_n = 1ull << 22;
        o->run = (bench_run_opts){.warmup = 1, .min_reps = 3, .max_reps = 5,
                                  .target_ms = 60.0};
    } else {
        o->sizes[0] = 1ull << 24;
        o->sizes[1] = 1ull << 26;
        o->n_sizes = 2;
        o->stream_n = 1ull << 25;
        o->run = (bench_run_opts){.warmup = 2, .min_reps = 5, .max_reps = 30,
                                  .target_ms = 1500.0};
    }
}

/* An output file of the run (--json, --csv, --plot): checked before the
 * measurements, which take minutes, rather than when they are written
 * (output_check). */
static int check_output(const char *flag, const char *path)
{
    char err[PATH_MAX + 256];
    if (output_check(flag, path, err, sizeof err) == 0)
        return 0;
    fprintf(stderr, "clgrad-bench: %s\n", err);
    return -1;
}

static int check_outputs(const bench_options *o)
{
    const char *flags[3] = {"--json", "--csv", "--plot"};
    const char *paths[3] = {o->json_path, o->csv_path, o->plot_path};
    for (int i = 0; i < 3; i++)
        if (paths[i] && check_output(flags[i], paths[i]) != 0)
            return -1;
    for (int i = 0; i < 3; i++) {
        for (int j = i + 1; j < 3; j++) {
            if (paths[i] && paths[j] && file_same(paths[i], paths[j]) == 1) {
                fprintf(stderr, "clgrad-bench: %s %s and %s %s name the same file\n", flags[i],
                        paths[i], flags[j], paths[j]);
                return -1;
            }
        }
    }
    return 0;
}

/* The field a flag without a value sets, or NULL. */
static int *switch_of(bench_options *o, const char *flag)
{
    struct {
        const char *flag;
        int *field;
    } switches[] = {{"--quick", &o->quick}, {"--e2e", &o->e2e}, {"--no-cases", &o->no_cases},
                    {"--no-gemm", &o->no_gemm}, {"--dist", &o->dist}};
    for (size_t i = 0; i < sizeof switches / sizeof switches[0]; i++)
        if (strcmp(flag, switches[i].flag) == 0)
            return switches[i].field;
    return NULL;
}

int bench_parse_options(bench_options *o, int argc, char **argv)
{
    int quick = 0;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
    o->configs = NULL;
    set_defaults(o, quick);
    int sizes_set = 0, k_set = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int used = 1, bad = 0;
        int *on = switch_of(o, a);
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 1;
        } else if (on) {
            *on = 1;
            used = 0;
        } else if (!v) {
            bad = 1;
        } else if (strcmp(a, "--device") == 0) {
            o->device = v;
        } else if (strcmp(a, "--tuning") == 0) {
            o->tuning = v;
            bad = !*v;
        } else if (strcmp(a, "--sizes") == 0) {
            bad = parse_list(o, v);
            sizes_set = 1;
        } else if (strcmp(a, "--k") == 0) {
            bad = parse_unsigned(v, &o->k, 1);
            k_set = 1;
        } else if (strcmp(a, "--tensors") == 0) {
            bad = parse_unsigned(v, &o->tensors, 1);
        } else if (strcmp(a, "--vram") == 0) {
            bad = !(o->vram = bench_parse_size(v));
        } else if (strcmp(a, "--configs") == 0) {
            o->configs = v;
            for (const char *p = v; *p && !bad;) {
                size_t len = strcspn(p, ",");
                char name[64];
                snprintf(name, sizeof name, "%.*s", (int)len, p);
                bad = !bench_config_find(name);
                p += len + (p[len] == ',');
            }
        } else if (strcmp(a, "--reps") == 0) {
            unsigned lo, hi;
            char buf[64];
            snprintf(buf, sizeof buf, "%s", v);
            char *comma = strchr(buf, ',');
            if (comma)
                *comma = '\0';
            bad = parse_unsigned(buf, &lo, 1) || (comma && parse_unsigned(comma + 1, &hi, lo));
            if (!bad) {
                o->run.min_reps = lo;
                o->run.max_reps = comma ? hi : (lo > o->run.max_reps ? lo : o->run.max_reps);
            }
        } else if (strcmp(a, "--target-ms") == 0) {
            char *end;
            o->run.target_ms = strtod(v, &end);
            bad = *end || !(o->run.target_ms >= 0.0);
        } else if (strcmp(a, "--warmup") == 0) {
            bad = parse_unsigned(v, &o->run.warmup, 1);
        } else if (strcmp(a, "--stream-n") == 0) {
            bad = !(o->stream_n = bench_parse_size(v));
        } else if (strcmp(a, "--vw") == 0) {
            bad = parse_unsigned(v, &o->vw, 1)
                  || (o->vw != 1 && o->vw != 2 && o->vw != 4 && o->vw != 8 && o->vw != 16);
        } else if (strcmp(a, "--wg") == 0) {
            unsigned wg;
            bad = parse_unsigned(v, &wg, 1);
            o->wg = wg;
        } else if (strcmp(a, "--fit") == 0) {
            bad = !(o->fit = bench_parse_size(v));
        } else if (strcmp(a, "--reserve") == 0) {
            o->reserve = bench_parse_size(v);
            bad = !o->reserve && strcmp(v, "0") != 0;
        } else if (strcmp(a, "--fit-params") == 0) {
            bad = !(o->fit_params = bench_parse_size(v));
        } else if (strcmp(a, "--shards") == 0) {
            bad = parse_unsigned(v, &o->fit_shards, 1) || o->fit_shards > 4096;
        } else if (strcmp(a, "--json") == 0) {
            o->json_path = v;
        } else if (strcmp(a, "--csv") == 0) {
            o->csv_path = v;
        } else if (strcmp(a, "--plot") == 0) {
            o->plot_path = v;
        } else {
            fprintf(stderr, "clgrad-bench: unknown option %s\n", a);
            usage(stderr);
            return -1;
        }
        if (bad) {
            fprintf(stderr, "clgrad-bench: bad or missing value for %s%s%s\n", a,
                    v ? ": " : "", v ? v : "");
            return -1;
        }
        i += used;
    }
    if (!o->fit && (o->reserve || o->fit_params || o->fit_shards)) {
        fprintf(stderr, "clgrad-bench: --reserve, --fit-params and --shards go with --fit\n");
        return -1;
    }
    if (o->dist && (o->fit || o->e2e || o->csv_path || o->plot_path)) {
        fprintf(stderr, "clgrad-bench: --dist measures the communication alone and writes the "
                        "table and --json: not with --fit, --e2e, --csv or --plot\n");
        return -1;
    }
    if (o->dist) {
        if (!sizes_set) {
            o->n_sizes = quick ? 1 : 2;
            o->sizes[0] = quick ? 1ull << 20 : 1ull << 22;
            o->sizes[1] = 1ull << 24;
        }
        o->n_dist_k = k_set || quick ? 1 : 2;
        o->dist_k[0] = k_set ? o->k : 4;
        o->dist_k[1] = 8;
    }
    if (o->fit && o->csv_path) {
        fprintf(stderr, "clgrad-bench: --fit writes --json and --plot, not --csv\n");
        return -1;
    }
    /* as clgrad-train: a missing tuning file warns, one that is no regular
     * file (a FIFO, a device, a dangling link) is refused */
    char err[1024];
    const char *tuning = tuning_spec_file(o->tuning);
    if (tuning && input_check_present("--tuning", tuning, err, sizeof err) != 0) {
        fprintf(stderr, "clgrad-bench: %s\n", err);
        return -1;
    }
    return check_outputs(o);
}

int bench_options_wants(const bench_options *o, const bench_config *bc)
{
    if (!o->configs)
        return 1;
    size_t len = strlen(bc->name);
    for (const char *p = o->configs; *p;) {
        size_t tok = strcspn(p, ",");
        if (tok == len && strncmp(p, bc->name, len) == 0)
            return 1;
        p += tok + (p[tok] == ',');
    }
    return 0;
}
