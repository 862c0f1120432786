/* test_tuning_file.c - clgrad-tune's file format without a device
 * (tools/gemm/tuning_file.h): a tuning survives format + parse unchanged;
 * every one-bit flip and every truncation of a valid file is rejected; each
 * malformed record (with a correct CRC, so that the record checks
 * themselves are reached) is rejected with a message naming what is wrong;
 * values CLBlast's kernels cannot take (the cases of issue 24, CRC-valid)
 * are rejected with the constraint they break, and the device's limits
 * are checked; CLBlast's status codes have CLBlast's names.
 * Also the parser of CLBlast's tuner rows (tools/tune/tuners.h) on real
 * output, and the MLP's GEMM shapes against what tools/train/mlp.c runs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "clblast_status.h"
#include "mlp_gemms.h"
#include "tuners.h"
#include "tuning_constraints.h"
#include "tuning_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

static tuning sample(void)
{
    tuning t;
    memset(&t, 0, sizeof t);
    snprintf(t.key, sizeof t.key, "%s",
             "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
    snprintf(t.device, sizeof t.device, "pthread-skylake-avx512-AMD EPYC");
    snprintf(t.driver, sizeof t.driver, "3.1+debian");
    snprintf(t.clblast, sizeof t.clblast, "1.5.3");
    snprintf(t.created, sizeof t.created, "2024-12-01T09:00:00Z");
    snprintf(t.model, sizeof t.model, "mlp 784,512,256,10 micro-batch 32");
    t.budget_s = 180;
    t.seconds = 171.5;
    static const char *const dn[] = {"KWID", "MDIMAD", "MDIMCD", "NDIMBD", "NDIMCD",
                                     "PADA", "PADB",   "VWMD",   "VWND",   "WGD"};
    static const size_t dv[] = {2, 16, 16, 8, 8, 1, 1, 2, 2, 32};
    tuning_kernel *k = &t.kernel[t.n_kernels++];
    snprintf(k->name, sizeof k->name, "XgemmDirect");
    k->precision = 32;
    for (size_t i = 0; i < 10; i++) {
        snprintf(k->param[i], sizeof k->param[i], "%s", dn[i]);
        k->value[i] = dv[i];
    }
    k->n = 10;
    k = &t.kernel[t.n_kernels++];
    snprintf(k->name, sizeof k->name, "GemmRoutine");
    k->precision = 32;
    snprintf(k->param[0], sizeof k->param[0], "XGEMM_MIN_INDIRECT_SIZE");
    k->value[0] = 64;
    k->n = 1;
    tuning_gemm *g = &t.gemm[t.n_gemms++];
    *g = (tuning_gemm){32, 512, 784, 'N', 'T', 1, "XgemmDirect", "Xgemm", 6.9, 26.5, 1};
    g = &t.gemm[t.n_gemms++];
    *g = (tuning_gemm){512, 784, 32, 'T', 'N', 1, "XgemmDirect", "XgemmDirect", 7.4, 21.9, 16};
    return t;
}

static char *formatted(size_t *len)
{
    tuning t = sample();
    char *s = tuning_format(&t, len);
    assert_non_null(s);
    return s;
}

static void test_round_trip(void **state)
{
    (void)state;
    tuning t = sample(), back;
    size_t len;
    char *s = tuning_format(&t, &len);
    assert_non_null(s);
    assert_int_equal(strlen(s), len);
    char err[256] = "";
    if (tuning_parse(s, len, &back, err, sizeof err) != 0)
        fail_msg("parse of a formatted file: %s\n%s", err, s);
    assert_string_equal(back.key, t.key);
    assert_string_equal(back.device, t.device);
    assert_string_equal(back.driver, t.driver);
    assert_string_equal(back.clblast, t.clblast);
    assert_string_equal(back.created, t.created);
    assert_string_equal(back.model, t.model);
    assert_true(back.budget_s == 180.0 && back.seconds == 171.5);
    assert_int_equal(back.n_kernels, t.n_kernels);
    for (size_t i = 0; i < t.n_kernels; i++) {
        assert_string_equal(back.kernel[i].name, t.kernel[i].name);
        assert_int_equal(back.kernel[i].n, t.kernel[i].n);
        for (size_t p = 0; p < t.kernel[i].n; p++) {
            assert_string_equal(back.kernel[i].param[p], t.kernel[i].param[p]);
            assert_int_equal(back.kernel[i].value[p], t.kernel[i].value[p]);
        }
    }
    assert_int_equal(back.n_gemms, 2);
    assert_int_equal(back.gemm[0].k, 784);
    assert_int_equal(back.gemm[1].ta, 'T');
    assert_int_equal(back.gemm[0].batch, 1);
    assert_int_equal(back.gemm[1].batch, 16); /* written "1x16" */
    assert_non_null(strstr(s, "gemm 512 784 32 TN 1x16 XgemmDirect"));
    assert_string_equal(back.gemm[0].kernel_tuned, "Xgemm");
    assert_true(back.gemm[0].gflops_tuned == 26.5);
    assert_non_null(tuning_find_kernel(&back, "GemmRoutine"));
    assert_null(tuning_find_kernel(&back, "Xgemm"));
    /* formatting the parsed tuning gives the same bytes */
    size_t len2;
    char *s2 = tuning_format(&back, &len2);
    assert_int_equal(len2, len);
    assert_memory_equal(s2, s, len);
    free(s2);
    free(s);
}

/* Control characters in informational strings do not break the format. */
static void test_control_characters(void **state)
{
    (void)state;
    tuning t = sample(), back;
    snprintf(t.device, sizeof t.device, "evil\ndevice\r\x01");
    size_t len;
    char *s = tuning_format(&t, &len);
    assert_non_null(s);
    char err[256];
    assert_int_equal(tuning_parse(s, len, &back, err, sizeof err), 0);
    assert_string_equal(back.device, "evil?device??");
    free(s);
}

static void test_every_bit_flip_rejected(void **state)
{
    (void)state;
    size_t len;
    char *s = formatted(&len);
    tuning t;
    char err[256];
    for (size_t i = 0; i < len; i++)
        for (int b = 0; b < 8; b++) {
            s[i] ^= (char)(1 << b);
            if (tuning_parse(s, len, &t, err, sizeof err) == 0)
                fail_msg("flipping bit %d of byte %zu was accepted", b, i);
            s[i] ^= (char)(1 << b);
        }
    assert_int_equal(tuning_parse(s, len, &t, err, sizeof err), 0);
    free(s);
}

static void test_every_truncation_rejected(void **state)
{
    (void)state;
    size_t len;
    char *s = formatted(&len);
    tuning t;
    char err[256];
    for (size_t n = 0; n < len; n++) {
        err[0] = '\0';
        if (tuning_parse(s, n, &t, err, sizeof err) == 0)
            fail_msg("the first %zu of %zu bytes were accepted", n, len);
        assert_true(err[0] != '\0');
    }
    free(s);
}

/* body + a correct CRC line, parsed; returns the parser's result. */
static int parse_body(const char *body, char *err, size_t errlen)
{
    size_t n = strlen(body);
    char *buf = malloc(n + 32);
    assert_non_null(buf);
    memcpy(buf, body, n);
    n += (size_t)sprintf(buf + n, "crc32 %08lx\n", crc32(0L, (const Bytef *)body, (uInt)n));
    tuning t;
    err[0] = '\0';
    int rc = tuning_parse(buf, n, &t, err, errlen);
    free(buf);
    return rc;
}

#define HEAD "clgrad-clblast-tuning 1\n"
#define KEY "key 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n"
#define INFO                                                                                      \
    "device d\ndriver 1\nclblast 1.5.3\ncreated 2024-12-01T09:00:00Z\nbudget 10.0 9.0\n"         \
    "model m\n"
#define KERNEL "kernel GemmRoutine 32 XGEMM_MIN_INDIRECT_SIZE=64\n"

static void expect_rejected(const char *body, const char *needle)
{
    char err[512];
    if (parse_body(body, err, sizeof err) == 0)
        fail_msg("accepted:\n%s", body);
    if (!strstr(err, needle))
        fail_msg("message '%s' does not say '%s' for:\n%s", err, needle, body);
}

static void test_records_checked(void **state)
{
    (void)state;
    char err[512];
    /* the minimal valid file */
    if (parse_body(HEAD KEY INFO KERNEL, err, sizeof err) != 0)
        fail_msg("minimal file rejected: %s", err);
    expect_rejected("clgrad-clblast-tuning 2\n" KEY INFO KERNEL, "format");
    expect_rejected("something else 1\n" KEY INFO KERNEL, "not a clgrad tuning file");
    expect_rejected(HEAD INFO KERNEL, "no 'key' record");
    expect_rejected(HEAD KEY INFO, "kernel records");
    expect_rejected(HEAD KEY KEY INFO KERNEL, "second 'key'");
    expect_rejected(HEAD "key 0123\n" INFO KERNEL, "key");
    expect_rejected(HEAD KEY INFO KERNEL "colour blue\n", "unknown record 'colour'");
    expect_rejected(HEAD KEY INFO "\n" KERNEL, "empty");
    expect_rejected(HEAD KEY INFO "kernel Xsomething 32 A=1\n", "not one of CLBlast's GEMM");
    expect_rejected(HEAD KEY INFO "kernel Xgemm 64 MWG=64\n", "precision 64");
    expect_rejected(HEAD KEY INFO "kernel Xgemm 32 mwg=64\n", "not a parameter name");
    expect_rejected(HEAD KEY INFO "kernel Xgemm 32 MWG=99999999\n", "MWG");
    expect_rejected(HEAD KEY INFO "kernel Xgemm 32 MWG=-1\n", "MWG");
    expect_rejected(HEAD KEY INFO "kernel Xgemm 32 MWG=64 MWG=32\n", "twice");
    expect_rejected(HEAD KEY INFO "kernel Xgemm 32 MWG\n", "NAME=value");
    expect_rejected(HEAD KEY INFO KERNEL KERNEL, "appears twice");
    expect_rejected(HEAD KEY INFO KERNEL "gemm 32 512 784 NX 1 Xgemm 1.0 Xgemm 2.0\n",
                    "gemm record");
    expect_rejected(HEAD KEY INFO KERNEL "gemm 32 512 NT 1 Xgemm 1.0 Xgemm 2.0\n", "gemm record");
    /* a batch is 2 or more products, after the calls */
    if (parse_body(HEAD KEY INFO KERNEL "gemm 4 5 6 NT 2x3 Xgemm 1.0 Xgemm 2.0\n", err,
                   sizeof err) != 0)
        fail_msg("a batched gemm record rejected: %s", err);
    expect_rejected(HEAD KEY INFO KERNEL "gemm 4 5 6 NT 2x1 Xgemm 1.0 Xgemm 2.0\n", "gemm record");
    expect_rejected(HEAD KEY INFO KERNEL "gemm 4 5 6 NT 2x Xgemm 1.0 Xgemm 2.0\n", "gemm record");
    expect_rejected(HEAD KEY INFO KERNEL "gemm 4 5 6 NT x3 Xgemm 1.0 Xgemm 2.0\n", "gemm record");
    expect_rejected(HEAD KEY INFO KERNEL "gemm 4 5 6 NT 2x3x4 Xgemm 1.0 Xgemm 2.0\n",
                    "gemm record");
    expect_rejected(HEAD KEY "device d\ndriver 1\nclblast 1.5.3\ncreated c\nbudget x 1\nmodel m\n"
                    KERNEL, "budget");

    /* outside the records */
    tuning t;
    const char nul[] = HEAD "\0" KEY;
    assert_int_equal(tuning_parse(nul, sizeof nul - 1, &t, err, sizeof err), -1);
    assert_non_null(strstr(err, "NUL"));
    assert_int_equal(tuning_parse("", 0, &t, err, sizeof err), -1);
    assert_non_null(strstr(err, "empty"));
    size_t big = TUNING_MAX_BYTES + 1;
    char *huge = malloc(big);
    assert_non_null(huge);
    memset(huge, 'a', big);
    assert_int_equal(tuning_parse(huge, big, &t, err, sizeof err), -1);
    assert_non_null(strstr(err, "at most"));
    free(huge);
    size_t len;
    char *s = formatted(&len);
    s[len - 3] = s[len - 3] == '0' ? '1' : '0'; /* a CRC digit */
    assert_int_equal(tuning_parse(s, len, &t, err, sizeof err), -1);
    assert_non_null(strstr(err, "CRC-32 mismatch"));
    free(s);
}

static void test_format_refuses_invalid(void **state)
{
    (void)state;
    tuning t = sample();
    size_t len;
    snprintf(t.kernel[0].param[3], TUNING_NAME, "bad name");
    assert_null(tuning_format(&t, &len));
    t = sample();
    t.n_kernels = 0;
    assert_null(tuning_format(&t, &len));
    char err[256];
    assert_int_equal(tuning_check(&t, err, sizeof err), -1);
    assert_non_null(strstr(err, "kernel records"));
    /* a batch the parser would refuse is not written */
    t = sample();
    t.gemm[1].batch = TUNING_MAX_BATCH + 1;
    assert_null(tuning_format(&t, &len));
    t.gemm[1].batch = TUNING_MAX_BATCH;
    char *s = tuning_format(&t, &len);
    assert_non_null(s);
    tuning back;
    assert_int_equal(tuning_parse(s, len, &back, err, sizeof err), 0);
    assert_int_equal(back.gemm[1].batch, TUNING_MAX_BATCH);
    free(s);
}

/* An exact rejection: the whole message. */
static void expect_message(const char *body, const char *want)
{
    char err[512];
    if (parse_body(body, err, sizeof err) == 0)
        fail_msg("accepted:\n%s", body);
    if (strcmp(err, want) != 0)
        fail_msg("message '%s', expected '%s', for:\n%s", err, want, body);
}

#define DIRECT(wgd, mdimcd, ndimcd)                                                               \
    "kernel XgemmDirect 32 KWID=2 MDIMAD=16 MDIMCD=" mdimcd " NDIMBD=8 NDIMCD=" ndimcd          \
    " PADA=1 PADB=1 VWMD=2 VWND=2 WGD=" wgd "\n"
#define XGEMM(gemmk, kwg, mdimc, mwg, vwm)                                                        \
    "kernel Xgemm 32 GEMMK=" gemmk " KREG=1 KWG=" kwg " KWI=2 MDIMA=8 MDIMC=" mdimc " MWG=" mwg  \
    " NDIMB=16 NDIMC=16 NWG=64 SA=0 SB=0 STRM=0 STRN=0 VWM=" vwm " VWN=4\n"
#define ROUTINE(size) "kernel GemmRoutine 32 XGEMM_MIN_INDIRECT_SIZE=" size "\n"

/* Issue 24: in-range values CLBlast's kernels cannot take, with a correct
 * CRC (a forgery, not damage), crashed (WGD=0), hung (WGD=65536) or trained
 * silently wrong (the others). Each is refused naming the parameter. */
static void test_constraints_refuse_issue_cases(void **state)
{
    (void)state;
    char err[512];
    /* CLBlast's kinds of values, valid: the base of the forgeries */
    if (parse_body(HEAD KEY INFO DIRECT("32", "16", "8") XGEMM("0", "32", "8", "64", "4")
                       ROUTINE("64"), err, sizeof err) != 0)
        fail_msg("a valid tuning rejected: %s", err);
    expect_message(HEAD KEY INFO DIRECT("0", "16", "8") KERNEL,
                   "kernel XgemmDirect: WGD=0 is outside the values its tuner can produce "
                   "(8, 16, 32, 64)");
    expect_message(HEAD KEY INFO DIRECT("65536", "16", "8") KERNEL,
                   "kernel XgemmDirect: WGD=65536 is outside the values its tuner can produce "
                   "(8, 16, 32, 64)");
    expect_message(HEAD KEY INFO DIRECT("3", "16", "8") KERNEL,
                   "kernel XgemmDirect: WGD=3 is outside the values its tuner can produce "
                   "(8, 16, 32, 64)");
    expect_message(HEAD KEY INFO DIRECT("32", "32", "32") KERNEL,
                   "kernel XgemmDirect: WGD=32 is not a multiple of MDIMCD*VWMD = 64");
    expect_message(HEAD KEY INFO XGEMM("0", "32", "8", "48", "8") ROUTINE("0"),
                   "kernel Xgemm: MWG=48 is outside the values its tuner can produce "
                   "(8, 16, 32, 64, 128)");
    expect_message(HEAD KEY INFO XGEMM("0", "32", "8", "64", "4") ROUTINE("0"),
                   "kernel GemmRoutine: XGEMM_MIN_INDIRECT_SIZE=0 is outside the values its "
                   "tuner can produce (1..65536)");
    /* each divisibility CLBlast's Xgemm needs, in its own words */
    expect_message(HEAD KEY INFO XGEMM("0", "32", "16", "64", "8") KERNEL,
                   "kernel Xgemm: MWG=64 is not a multiple of MDIMC*VWM = 128");
    expect_message(HEAD KEY INFO XGEMM("0", "16", "16", "64", "4") KERNEL,
                   "kernel Xgemm: KWG=16 is not a multiple of MDIMC*NDIMC/MDIMA = 32 (GEMMK=0)");
    expect_message(HEAD KEY INFO XGEMM("1", "32", "8", "64", "4") KERNEL,
                   "kernel Xgemm: KREG=1 is not a multiple of VWN=4 (GEMMK=1)");
    /* a record names exactly CLBlast's parameters of its kernel */
    expect_message(HEAD KEY INFO "kernel GemmRoutine 32 XGEMM_MIN_INDIRECT_SIZE=64 EXTRA=1\n",
                   "kernel GemmRoutine: CLBlast has no parameter EXTRA");
    expect_message(HEAD KEY INFO "kernel Pad 32 PAD_DIMX=8 PAD_DIMY=8 PAD_WPTX=1\n",
                   "kernel Pad: no value for CLBlast's parameter PAD_WPTY");
    /* and a formatted tuning keeps to them too: tuning_format refuses */
    tuning t = sample();
    size_t len;
    t.kernel[0].value[9] = 48; /* WGD */
    assert_null(tuning_format(&t, &len));
    assert_int_equal(tuning_check(&t, err, sizeof err), -1);
    assert_string_equal(err, "kernel XgemmDirect: WGD=48 is outside the values its tuner can "
                             "produce (8, 16, 32, 64)");
}

/* The device's work-group and local-memory limits. */
static void test_device_limits(void **state)
{
    (void)state;
    tuning t = sample(); /* XgemmDirect: 16 x 8 threads, WGD=32 with padding */
    char err[512];
    tuning_device_limits big = {256, {256, 256}, 32768};
    assert_int_equal(tuning_check_device(&t, &big, err, sizeof err), 0);
    tuning_device_limits few = {64, {64, 64}, 32768};
    assert_int_equal(tuning_check_device(&t, &few, err, sizeof err), -1);
    assert_string_equal(err, "kernel XgemmDirect: its work-group of MDIMCD x NDIMCD = 16 x 8 "
                             "work-items exceeds this device's limits (64 in all, 64 x 64)");
    tuning_device_limits narrow = {256, {8, 256}, 32768};
    assert_int_equal(tuning_check_device(&t, &narrow, err, sizeof err), -1);
    /* 4 bytes x (32 x (32 + 1) + 32 x (32 + 1)) = 8448 */
    tuning_device_limits small = {256, {256, 256}, 8447};
    assert_int_equal(tuning_check_device(&t, &small, err, sizeof err), -1);
    assert_string_equal(err, "kernel XgemmDirect needs 8448 bytes of local memory with PADA=1 "
                             "PADB=1 WGD=32, this device has 8447");
    small.local_mem = 8448;
    assert_int_equal(tuning_check_device(&t, &small, err, sizeof err), 0);
}

static void test_clblast_status_names(void **state)
{
    (void)state;
    char buf[64];
    /* -1011 is also CL_INVALID_DX9_MEDIA_SURFACE_KHR: the issue's message */
    assert_string_equal(clblast_status_text(-1011, buf, sizeof buf),
                        "CLBlastInsufficientMemoryA (-1011)");
    assert_string_equal(clblast_status_text(-2046, buf, sizeof buf),
                        "CLBlastInvalidLocalMemUsage (-2046)");
    assert_string_equal(clblast_status_text(-54, buf, sizeof buf),
                        "CLBlastInvalidLocalThreadsTotal (-54)");
    assert_string_equal(clblast_status_text(-1100, buf, sizeof buf),
                        "status -1100 (not one of CLBlast's)");
    assert_true(clblast_status_own(-1011) && clblast_status_own(-2039) &&
                clblast_status_own(-1024));
    assert_false(clblast_status_own(-54) || clblast_status_own(0) || clblast_status_own(-1100));
}

/* Rows as clblast_tuner_xgemm_direct 1.5.3 prints them, colours included. */
static void test_tuner_rows(void **state)
{
    (void)state;
    char names[10][TUNER_NAME] = {"WGD", "MDIMCD", "NDIMCD", "MDIMAD", "NDIMBD",
                                  "KWID", "VWMD", "VWND", "PADA", "PADB"};
    const char *ok = "|    2 |    46 |   16    8    8    8    8    2    1    1    1    1 |       "
                     "8       8 |     256      16 |   \x1b[32mOK\x1b[0m     40 ms |      2.43 ms "
                     "|   10.6 |     \x1b[32mresults match\x1b[0m |";
    /* tuner_parse_row takes lines with the colours already removed */
    char clean[512];
    size_t w = 0;
    for (const char *r = ok; *r;) {
        if (*r == 0x1b) {
            while (*r && *r != 'm')
                r++;
            r += *r ? 1 : 0;
            continue;
        }
        clean[w++] = *r++;
    }
    clean[w] = '\0';
    tuner_config c;
    assert_int_equal(tuner_parse_row(clean, names, 10, &c), 1);
    assert_int_equal(c.n, 10);
    assert_string_equal(c.name[0], "WGD");
    assert_int_equal(c.value[0], 16);
    assert_int_equal(c.value[5], 2);
    assert_int_equal(c.value[9], 1);
    assert_true(c.ms == 2.43 && c.gflops == 10.6);
    /* fewer names than columns, failed rows and the reference are not taken */
    assert_int_equal(tuner_parse_row(clean, names, 9, &c), 0);
    assert_int_equal(tuner_parse_row("|  ref |     - |      - |       8       8 |     512      32 "
                                     "|   OK |      6.38 ms |      - |      reference OK |",
                                     names, 10, &c), 0);
    assert_int_equal(tuner_parse_row("|    7 |    46 |   32    8    8    8    8    2    1    8    "
                                     "1    1 |       8       8 |     128     128 |   OK    288 ms |"
                                     "      - |   invalid config. | <-- skipping", names, 10, &c),
                     0);
    tuner_config v[3] = {{.ms = 3}, {.ms = 1}, {.ms = 2}};
    tuner_sort(v, 3);
    assert_true(v[0].ms == 1 && v[1].ms == 2 && v[2].ms == 3);
}

/* The shapes tools/train/mlp.c runs per micro-step for 784-512-256-10 at
 * b = 32: forward NT, then backward from the last layer, dW TN and (not for
 * the first layer) dX NN. */
/* clgrad-tune's --shape text (and its --prebuild processes'): every
 * shape back as it was, batched or not; anything else refused. */
static void test_shape_text(void **state)
{
    (void)state;
    const mlp_gemm_shape shapes[] = {
        {32, 512, 784, 0, 1, 1, "a", 1}, {10, 256, 32, 1, 0, 1, "b", 1},
        {64, 64, 16, 0, 1, 1, "c", 16},  {1, 65536, 7, 1, 1, 1, "d", 2},
        {64, 16, 64, 1, 0, 1, "e", 65536}};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        char text[64];
        mlp_gemm_shape back;
        mlp_gemm_shape_text(&shapes[i], text, sizeof text);
        if (mlp_gemm_shape_parse(text, &back) != 0)
            fail_msg("'%s' refused", text);
        assert_true(back.m == shapes[i].m && back.n == shapes[i].n && back.k == shapes[i].k);
        assert_true(back.ta == shapes[i].ta && back.tb == shapes[i].tb);
        assert_int_equal(mlp_gemm_batch(&back), mlp_gemm_batch(&shapes[i]));
        assert_int_equal(back.count, 1);
    }
    mlp_gemm_shape g;
    assert_int_equal(mlp_gemm_shape_parse("5x6x7", &g), 0);
    assert_true(g.m == 5 && g.n == 6 && g.k == 7 && !g.ta && !g.tb && mlp_gemm_batch(&g) == 1);
    assert_int_equal(mlp_gemm_shape_parse("5x6x7@3", &g), 0);
    assert_int_equal(g.batch, 3);
    assert_true(mlp_gemm_flops(&g) == 2.0 * 5 * 6 * 7 * 3);
    static const char *const bad[] = {
        "",       "5x6",     "5x6x7:",      "5x6x7:N", "5x6x7:NX", "0x1x1",
        "1x1x0",  "70000x1x1", "5x6x7@",    "5x6x7@0", "5x6x7:NT@1x", "5x6x7 ",
        "-5x6x7", "5x6x7:NTT", "5x6x7@70000", "5xx6x7"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        if (mlp_gemm_shape_parse(bad[i], &g) == 0)
            fail_msg("'%s' accepted", bad[i]);
}

static void test_mlp_shapes(void **state)
{
    (void)state;
    const unsigned dims[] = {784, 512, 256, 10};
    mlp_gemm_shape s[MLP_GEMMS_MAX];
    size_t n = mlp_gemm_shapes(dims, 4, 32, s, MLP_GEMMS_MAX);
    assert_int_equal(n, 8);
    const size_t want[8][5] = {{32, 512, 784, 0, 1}, {32, 256, 512, 0, 1}, {32, 10, 256, 0, 1},
                               {10, 256, 32, 1, 0},  {32, 256, 10, 0, 0},  {256, 512, 32, 1, 0},
                               {32, 512, 256, 0, 0}, {512, 784, 32, 1, 0}};
    double flops = 0;
    for (size_t i = 0; i < 8; i++) {
        assert_int_equal(s[i].m, want[i][0]);
        assert_int_equal(s[i].n, want[i][1]);
        assert_int_equal(s[i].k, want[i][2]);
        assert_int_equal(s[i].ta, want[i][3]);
        assert_int_equal(s[i].tb, want[i][4]);
        assert_int_equal(s[i].count, 1);
        flops += mlp_gemm_flops(&s[i]);
    }
    assert_true(flops == 2.0 * 32 * (2.0 * (784 * 512 + 512 * 256 + 256 * 10) + 512 * 256 +
                                     256 * 10));
    size_t lda, ldb, ldc;
    mlp_gemm_dense_ld(&s[0], &lda, &ldb, &ldc);
    assert_true(lda == 784 && ldb == 784 && ldc == 512);
    /* equal layers: one shape, counted twice */
    const unsigned same[] = {64, 64, 64, 10};
    n = mlp_gemm_shapes(same, 4, 8, s, MLP_GEMMS_MAX);
    unsigned total = 0;
    for (size_t i = 0; i < n; i++)
        total += s[i].count;
    assert_int_equal(total, 8);
    assert_true(n < 8);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_shape_text),
        cmocka_unit_test(test_control_characters),
        cmocka_unit_test(test_every_bit_flip_rejected),
        cmocka_unit_test(test_every_truncation_rejected),
        cmocka_unit_test(test_records_checked),
        cmocka_unit_test(test_format_refuses_invalid),
        cmocka_unit_test(test_constraints_refuse_issue_cases),
        cmocka_unit_test(test_device_limits),
        cmocka_unit_test(test_clblast_status_names),
        cmocka_unit_test(test_tuner_rows),
        cmocka_unit_test(test_mlp_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
