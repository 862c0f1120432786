/* tuning_constraints.c - the constraints on CLBlast's GEMM parameters (see
 * tuning_constraints.h), from CLBlast 1.5.3's src/tuning/kernels/
 * {xgemm,xgemm_direct,copy_fast,copy_pad,transpose_fast,transpose_pad}.hpp
 * and src/kernels/level3/xgemm_part1.opencl. */
#include "tuning_constraints.h"
#include "errmsg.h"

#include <stdio.h>
#include <string.h>

#define MAX_VALUES 8
#define VALUES(...) {__VA_ARGS__}, sizeof((size_t[]){__VA_ARGS__}) / sizeof(size_t), 0, 0

/* A parameter and the values its tuner can produce (n 0: any of lo..hi). */
typedef struct param_rule {
    const char *name;
    size_t values[MAX_VALUES];
    size_t n;
    size_t lo, hi;
} param_rule;

/* lhs[0]*lhs[1] is a multiple of rhs[0]*rhs[1]/div (a NULL name counts as
 * 1), when GEMMK is gemmk (-1: always). */
typedef struct multiple_rule {
    const char *lhs[2];
    const char *rhs[2];
    const char *div;
    int gemmk;
} multiple_rule;

typedef struct kernel_rules {
    const char *kernel;
    const param_rule *params;
    size_t n_params;
    const multiple_rule *multiples;
    size_t n_multiples;
    const char *work_group[2]; /* its local size, in CLBlast's launch order */
    /* bytes of local memory per work-group (single precision), and the
     * parameters it depends on */
    unsigned long long (*local_bytes)(const tuning_kernel *k);
    const char *local_params[6];
} kernel_rules;

#define FLAG VALUES(0, 1)
#define THREADS VALUES(2, 4, 8, 16, 32)
#define VECTOR VALUES(1, 2, 4, 8)

/* Xgemm: clblast_tuner_xgemm's searches 1, 2 (GEMMK 0) and 11, 12 (GEMMK 1). */
static const param_rule xgemm_params[] = {
    {"GEMMK", FLAG},  {"KREG", VALUES(1, 2, 4, 8, 16)}, {"KWG", VALUES(1, 16, 32)},
    {"KWI", VALUES(1, 2, 8)},    {"MDIMA", THREADS},  {"MDIMC", THREADS},
    {"MWG", VALUES(8, 16, 32, 64, 128)},           {"NDIMB", THREADS},  {"NDIMC", THREADS},
    {"NWG", VALUES(8, 16, 32, 64, 128)},           {"SA", FLAG},        {"SB", FLAG},
    {"STRM", FLAG},   {"STRN", FLAG},              {"VWM", VECTOR},     {"VWN", VECTOR},
};
static const multiple_rule xgemm_multiples[] = {
    /* the unrolled KWG loop */
    {{"KWG", NULL}, {"KWI", NULL}, NULL, -1},
    /* whole work per thread (MWI, NWI) and whole loads per thread (MWA, NWB) */
    {{"MWG", NULL}, {"MDIMC", "VWM"}, NULL, -1},
    {{"NWG", NULL}, {"NDIMC", "VWN"}, NULL, -1},
    {{"MWG", NULL}, {"MDIMA", "VWM"}, NULL, -1},
    {{"NWG", NULL}, {"NDIMB", "VWN"}, NULL, -1},
    /* kernel 0: the re-shaped tiles KDIMA, KDIMB whole, and KWG of them */
    {{"MDIMC", "NDIMC"}, {"MDIMA", NULL}, NULL, 0},
    {{"MDIMC", "NDIMC"}, {"NDIMB", NULL}, NULL, 0},
    {{"KWG", NULL}, {"MDIMC", "NDIMC"}, "MDIMA", 0},
    {{"KWG", NULL}, {"MDIMC", "NDIMC"}, "NDIMB", 0},
    /* kernel 1: the register tile in whole vectors */
    {{"KREG", NULL}, {"VWN", NULL}, NULL, 1},
};

/* XgemmDirect: clblast_tuner_xgemm_direct's searches 1 and 2. */
static const param_rule direct_params[] = {
    {"KWID", VALUES(2, 8, 16)},  {"MDIMAD", VALUES(8, 16, 32)}, {"MDIMCD", VALUES(8, 16, 32)},
    {"NDIMBD", VALUES(8, 16, 32)}, {"NDIMCD", VALUES(8, 16, 32)}, {"PADA", FLAG},
    {"PADB", FLAG},              {"VWMD", VECTOR},             {"VWND", VECTOR},
    {"WGD", VALUES(8, 16, 32, 64)},
};
static const multiple_rule direct_multiples[] = {
    {{"WGD", NULL}, {"KWID", NULL}, NULL, -1},
    {{"WGD", NULL}, {"MDIMCD", "VWMD"}, NULL, -1},
    {{"WGD", NULL}, {"NDIMCD", "VWND"}, NULL, -1},
    {{"WGD", NULL}, {"MDIMAD", "VWMD"}, NULL, -1},
    {{"WGD", NULL}, {"NDIMBD", "VWND"}, NULL, -1},
    {{"MDIMCD", "NDIMCD"}, {"MDIMAD", NULL}, NULL, -1},
    {{"MDIMCD", "NDIMCD"}, {"NDIMBD", NULL}, NULL, -1},
    {{"WGD", NULL}, {"MDIMCD", "NDIMCD"}, "MDIMAD", -1},
    {{"WGD", NULL}, {"MDIMCD", "NDIMCD"}, "NDIMBD", -1},
};

static const param_rule routine_params[] = {
    {"XGEMM_MIN_INDIRECT_SIZE", {0}, 0, 1, TUNING_MAX_VALUE},
};
static const param_rule copy_params[] = {
    {"COPY_DIMX", VALUES(8, 16, 32)}, {"COPY_DIMY", VALUES(8, 16, 32)},
    {"COPY_VW", VECTOR},              {"COPY_WPT", VECTOR},
};
static const param_rule pad_params[] = {
    {"PAD_DIMX", VALUES(8, 16, 32)}, {"PAD_DIMY", VALUES(8, 16, 32)},
    {"PAD_WPTX", VALUES(1, 2, 4)},   {"PAD_WPTY", VALUES(1, 2, 4)},
};
static const param_rule transpose_params[] = {
    {"TRA_DIM", VALUES(4, 8, 16, 32, 64)}, {"TRA_PAD", FLAG}, {"TRA_SHUFFLE", FLAG},
    {"TRA_WPT", VALUES(1, 2, 4, 8, 16)},
};
static const param_rule padtranspose_params[] = {
    {"PADTRA_PAD", FLAG}, {"PADTRA_TILE", VALUES(8, 16, 32, 64)},
    {"PADTRA_WPT", VALUES(1, 2, 4, 8, 16)},
};

/* A parameter's value in k; the table's names are all there once
 * tuning_check_kernel_values passed. */
static size_t value_of(const tuning_kernel *k, const char *name)
{
    for (size_t p = 0; p < k->n; p++)
        if (strcmp(k->param[p], name) == 0)
            return k->value[p];
    return 0;
}

/* The tuners' ComputeLocalMemSize, in floats times 4. */
static unsigned long long xgemm_local(const tuning_kernel *k)
{
    unsigned long long kwg = value_of(k, "KWG");
    return 4 * (value_of(k, "SA") * kwg * value_of(k, "MWG") +
                value_of(k, "SB") * kwg * value_of(k, "NWG"));
}

static unsigned long long direct_local(const tuning_kernel *k)
{
    unsigned long long wgd = value_of(k, "WGD");
    return 4 * (wgd * (wgd + value_of(k, "PADA")) + wgd * (wgd + value_of(k, "PADB")));
}

static unsigned long long transpose_local(const tuning_kernel *k)
{
    unsigned long long dim = value_of(k, "TRA_DIM"), wpt = value_of(k, "TRA_WPT");
    return 4 * wpt * (wpt * dim) * (dim + value_of(k, "TRA_PAD"));
}

static unsigned long long padtranspose_local(const tuning_kernel *k)
{
    unsigned long long side = value_of(k, "PADTRA_TILE") * value_of(k, "PADTRA_WPT");
    return 4 * side * (side + value_of(k, "PADTRA_PAD"));
}

#define COUNT(a) (sizeof a / sizeof *a)
static const kernel_rules kernels[] = {
    {"Xgemm", xgemm_params, COUNT(xgemm_params), xgemm_multiples, COUNT(xgemm_multiples),
     {"MDIMC", "NDIMC"}, xgemm_local, {"KWG", "MWG", "NWG", "SA", "SB", NULL}},
    {"XgemmDirect", direct_params, COUNT(direct_params), direct_multiples,
     COUNT(direct_multiples), {"MDIMCD", "NDIMCD"}, direct_local, {"PADA", "PADB", "WGD", NULL}},
    {"GemmRoutine", routine_params, COUNT(routine_params), NULL, 0, {NULL, NULL}, NULL, {NULL}},
    {"Copy", copy_params, COUNT(copy_params), NULL, 0, {"COPY_DIMX", "COPY_DIMY"}, NULL, {NULL}},
    {"Pad", pad_params, COUNT(pad_params), NULL, 0, {"PAD_DIMX", "PAD_DIMY"}, NULL, {NULL}},
    {"Transpose", transpose_params, COUNT(transpose_params), NULL, 0, {"TRA_DIM", "TRA_DIM"},
     transpose_local, {"TRA_DIM", "TRA_PAD", "TRA_WPT", NULL}},
    {"Padtranspose", padtranspose_params, COUNT(padtranspose_params), NULL, 0,
     {"PADTRA_TILE", "PADTRA_TILE"}, padtranspose_local,
     {"PADTRA_PAD", "PADTRA_TILE", "PADTRA_WPT", NULL}},
};

static const kernel_rules *rules_of(const char *kernel)
{
    for (size_t i = 0; i < sizeof kernels / sizeof *kernels; i++)
        if (strcmp(kernels[i].kernel, kernel) == 0)
            return &kernels[i];
    return NULL;
}

int tuning_known_kernel(const char *name)
{
    return rules_of(name) != NULL;
}

static int unknown_kernel(const tuning_kernel *k, char *err, size_t errlen)
{
    return errmsg_set(err, errlen, "no constraints known for kernel '%.31s'", k->name);
}

static const param_rule *param_of(const kernel_rules *r, const char *name)
{
    for (size_t i = 0; i < r->n_params; i++)
        if (strcmp(r->params[i].name, name) == 0)
            return &r->params[i];
    return NULL;
}

static int allowed(const param_rule *p, size_t v)
{
    if (p->n == 0)
        return v >= p->lo && v <= p->hi;
    for (size_t i = 0; i < p->n; i++)
        if (p->values[i] == v)
            return 1;
    return 0;
}

static void allowed_text(const param_rule *p, char *out, size_t size)
{
    if (p->n == 0) {
        snprintf(out, size, "%zu..%zu", p->lo, p->hi);
        return;
    }
    size_t used = 0;
    for (size_t i = 0; i < p->n && used < size; i++)
        used += (size_t)snprintf(out + used, size - used, "%s%zu", i ? ", " : "", p->values[i]);
}

/* "MWG=48" for one name, "MDIMC*VWM = 64" for a product; the product into
 * *v (at most 2^34: every factor passed its value set). */
static void term(const tuning_kernel *k, const char *const names[2], const char *div, size_t *v,
                 char *out, size_t size)
{
    size_t x = value_of(k, names[0]);
    if (names[1])
        x *= value_of(k, names[1]);
    if (div)
        x /= value_of(k, div);
    *v = x;
    if (!names[1] && !div)
        snprintf(out, size, "%s=%zu", names[0], x);
    else
        snprintf(out, size, "%s%s%s%s%s = %zu", names[0], names[1] ? "*" : "",
                 names[1] ? names[1] : "", div ? "/" : "", div ? div : "", x);
}

int tuning_check_kernel_values(const tuning_kernel *k, char *err, size_t errlen)
{
    const kernel_rules *r = rules_of(k->name);
    if (!r)
        return unknown_kernel(k, err, errlen);
    for (size_t i = 0; i < r->n_params; i++) {
        size_t p = 0;
        while (p < k->n && strcmp(k->param[p], r->params[i].name) != 0)
            p++;
        if (p == k->n)
            return errmsg_set(err, errlen, "kernel %s: no value for CLBlast's parameter %s",
                              k->name, r->params[i].name);
    }
    for (size_t p = 0; p < k->n; p++) {
        const param_rule *pr = param_of(r, k->param[p]);
        if (!pr)
            return errmsg_set(err, errlen, "kernel %s: CLBlast has no parameter %s", k->name,
                              k->param[p]);
        if (!allowed(pr, k->value[p])) {
            char set[96];
            allowed_text(pr, set, sizeof set);
            return errmsg_set(err, errlen,
                              "kernel %s: %s=%zu is outside the values its tuner can produce "
                              "(%s)", k->name, k->param[p], k->value[p], set);
        }
    }
    size_t gemmk = param_of(r, "GEMMK") ? value_of(k, "GEMMK") : 0;
    for (size_t i = 0; i < r->n_multiples; i++) {
        const multiple_rule *m = &r->multiples[i];
        if (m->gemmk >= 0 && (size_t)m->gemmk != gemmk)
            continue;
        size_t lv, rv;
        char lt[64], rt[64];
        term(k, m->lhs, NULL, &lv, lt, sizeof lt);
        term(k, m->rhs, m->div, &rv, rt, sizeof rt);
        if (rv == 0 || lv % rv != 0)
            return errmsg_set(err, errlen, "kernel %s: %s is not a multiple of %s%s", k->name,
                              lt, rt, m->gemmk == 0 ? " (GEMMK=0)" : m->gemmk == 1 ? " (GEMMK=1)"
                                                                                   : "");
    }
    return 0;
}

int tuning_check_device(const tuning *t, const tuning_device_limits *d, char *err, size_t errlen)
{
    for (size_t i = 0; i < t->n_kernels; i++) {
        const tuning_kernel *k = &t->kernel[i];
        const kernel_rules *r = rules_of(k->name);
        if (!r)
            return unknown_kernel(k, err, errlen);
        if (r->work_group[0]) {
            size_t x = value_of(k, r->work_group[0]), y = value_of(k, r->work_group[1]);
            if (x * y > d->max_work_group || x > d->max_work_item[0] || y > d->max_work_item[1])
                return errmsg_set(err, errlen,
                                  "kernel %s: its work-group of %s x %s = %zu x %zu work-items "
                                  "exceeds this device's limits (%zu in all, %zu x %zu)",
                                  k->name, r->work_group[0], r->work_group[1], x, y,
                                  d->max_work_group, d->max_work_item[0], d->max_work_item[1]);
        }
        unsigned long long bytes = r->local_bytes ? r->local_bytes(k) : 0;
        if (bytes > d->local_mem) {
            char with[256];
            size_t used = 0;
            with[0] = '\0';
            for (size_t p = 0; r->local_params[p] && used < sizeof with; p++)
                used += (size_t)snprintf(with + used, sizeof with - used, "%s%s=%zu",
                                         p ? " " : "", r->local_params[p],
                                         value_of(k, r->local_params[p]));
            return errmsg_set(err, errlen,
                              "kernel %s needs %llu bytes of local memory with %s, this device "
                              "has %llu", k->name, bytes, with, d->local_mem);
        }
    }
    return 0;
}
