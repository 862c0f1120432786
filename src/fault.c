/* fault.c - fault injection for error-path tests: makes the n-th device
 * allocation, enqueue or checkpoint write fail on purpose.
 *
 * Armed by tests through clg__fault_arm(kind, n), or, for child processes,
 * by the environment variable CLGRAD_FAULT, read once at the first check:
 *     CLGRAD_FAULT="alloc:N"        the N-th clCreateBuffer fails
 *     CLGRAD_FAULT="enqueue:N"      the N-th clEnqueue* fails
 *     CLGRAD_FAULT="write:N"        the N-th write/fsync of a save fails
 *     CLGRAD_FAULT="write:N:kill"   the process dies by SIGKILL at the N-th
 *                                   write instead (crash-during-save test)
 * Several entries may be joined by commas ("alloc:3,write:2"). An entry that
 * does not parse is ignored: the library never prints.
 *
 * Only the N-th operation after arming fails; the ones before and after
 * succeed, so a test can walk N = 1, 2, ... until a call completes without
 * reaching its fault. The kill mode is a test hook and nothing else: it
 * simulates a power cut at an exact point. It never calls abort() or exit().
 * Counters are atomics, so concurrent checks from several threads are safe. */
#include "internal.h"
#include "fault.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static atomic_uint_fast64_t fault_target[CLG_FAULT_KINDS]; /* 0 = disarmed */
static atomic_uint_fast64_t fault_count[CLG_FAULT_KINDS];  /* ops since arming */
static atomic_int fault_kill[CLG_FAULT_KINDS];
static atomic_int fault_fired[CLG_FAULT_KINDS];
static once_flag fault_env_once = ONCE_FLAG_INIT;

static const char *const fault_names[CLG_FAULT_KINDS] = {"alloc", "enqueue", "write"};

static void fault_set(clg_fault_kind kind, uint64_t n, int kill_mode)
{
    atomic_store(&fault_target[kind], 0);
    atomic_store(&fault_count[kind], 0);
    atomic_store(&fault_fired[kind], 0);
    atomic_store(&fault_kill[kind], kill_mode);
    atomic_store(&fault_target[kind], n);
}

/* Parses one "kind:N[:kill]" entry of length len. */
static void fault_parse_entry(const char *s, size_t len)
{
    for (int k = 0; k < CLG_FAULT_KINDS; k++) {
        size_t nl = strlen(fault_names[k]);
        if (len <= nl + 1 || strncmp(s, fault_names[k], nl) != 0 || s[nl] != ':')
            continue;
        const char *p = s + nl + 1, *end = s + len;
        uint64_t n = 0;
        int digits = 0;
        while (p < end && *p >= '0' && *p <= '9' && digits < 19) {
            n = n * 10 + (uint64_t)(*p - '0');
            p++;
            digits++;
        }
        if (digits == 0)
            return;
        int kill_mode = 0;
        if (p < end) {
            if ((size_t)(end - p) == 5 && strncmp(p, ":kill", 5) == 0)
                kill_mode = 1;
            else
                return;
        }
        fault_set((clg_fault_kind)k, n, kill_mode);
        return;
    }
}

static void fault_read_env(void)
{
    const char *env = getenv("CLGRAD_FAULT");
    if (!env)
        return;
    while (*env) {
        const char *comma = strchr(env, ',');
        size_t len = comma ? (size_t)(comma - env) : strlen(env);
        fault_parse_entry(env, len);
        env += len;
        if (*env == ',')
            env++;
    }
}

void clg__fault_arm(clg_fault_kind kind, uint64_t n)
{
    if ((int)kind < 0 || kind >= CLG_FAULT_KINDS)
        return;
    /* Read the environment first, so that it can never override an
     * explicit arming made by the test later. */
    call_once(&fault_env_once, fault_read_env);
    fault_set(kind, n, 0);
}

void clg__fault_arm_kill(clg_fault_kind kind, uint64_t n)
{
    if ((int)kind < 0 || kind >= CLG_FAULT_KINDS)
        return;
    call_once(&fault_env_once, fault_read_env);
    fault_set(kind, n, 1);
}

bool clg__fault_hit(clg_fault_kind kind)
{
    if ((int)kind < 0 || kind >= CLG_FAULT_KINDS)
        return false;
    call_once(&fault_env_once, fault_read_env);
    uint64_t c = atomic_fetch_add(&fault_count[kind], 1) + 1;
    uint64_t target = atomic_load(&fault_target[kind]);
    if (target == 0 || c != target)
        return false;
    if (atomic_load(&fault_kill[kind]))
        raise(SIGKILL); /* test hook: a crash at exactly this point */
    atomic_store(&fault_fired[kind], 1);
    return true;
}

uint64_t clg__fault_count(clg_fault_kind kind)
{
    if ((int)kind < 0 || kind >= CLG_FAULT_KINDS)
        return 0;
    return atomic_load(&fault_count[kind]);
}

bool clg__fault_fired(clg_fault_kind kind)
{
    if ((int)kind < 0 || kind >= CLG_FAULT_KINDS)
        return false;
    return atomic_load(&fault_fired[kind]) != 0;
}
