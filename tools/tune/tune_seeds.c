/* tune_seeds.c - the table of starting configurations (tune_seeds.h).
 * Xgemm's parameters in CLBlast 1.5's order: GEMMK KREG KWG KWI MDIMA MDIMC
 * MWG NDIMB NDIMC NWG SA SB STRM STRN VWM VWN (the database's entries
 * predate GEMMK and KREG: 0 and 1, CLBlast's values for them); XgemmDirect:
 * KWID MDIMAD MDIMCD NDIMBD NDIMCD PADA PADB VWMD VWND WGD. */
#include "tune_seeds.h"

#include <string.h>

#define XG(kwg, kwi, mdima, mdimc, mwg, ndimb, ndimc, nwg, sa, sb, strm, strn, vwm, vwn)        \
    "GEMMK=0 KREG=1 KWG=" #kwg " KWI=" #kwi " MDIMA=" #mdima " MDIMC=" #mdimc " MWG=" #mwg     \
    " NDIMB=" #ndimb " NDIMC=" #ndimc " NWG=" #nwg " SA=" #sa " SB=" #sb " STRM=" #strm         \
    " STRN=" #strn " VWM=" #vwm " VWN=" #vwn
#define XD(kwid, mdimad, mdimcd, ndimbd, ndimcd, pada, padb, vwmd, vwnd, wgd)                   \
    "KWID=" #kwid " MDIMAD=" #mdimad " MDIMCD=" #mdimcd " NDIMBD=" #ndimbd " NDIMCD=" #ndimcd    \
    " PADA=" #pada " PADB=" #padb " VWMD=" #vwmd " VWND=" #vwnd " WGD=" #wgd

static const tune_seed cpu[] = {
    /* on a Xeon (AVX-512) under PoCL: 2.03 and 2.37 ms for the trainer's
     * GEMMs, all on Xgemm, against 3.54 ms with CLBlast's defaults */
    {"Xgemm", "seed: clgrad-tune AMD EPYC, 8-wide VWM", XG(32, 2, 8, 8, 64, 8, 8, 32, 0, 0, 0, 0, 8, 4)},
    {"Xgemm", "seed: clgrad-tune, AMD EPYC (PoCL)", XG(32, 2, 8, 8, 64, 8, 8, 32, 0, 0, 0, 0, 4, 4)},
    {"Xgemm", "seed: CLBlast, Intel CPU default", XG(32, 2, 8, 8, 32, 8, 8, 64, 0, 0, 0, 0, 4, 4)},
    {"Xgemm", "seed: CLBlast, Core i5-6200U", XG(32, 8, 32, 32, 64, 32, 16, 64, 1, 1, 1, 0, 2, 2)},
    {"XgemmDirect", "seed: clgrad-tune, AMD EPYC (PoCL)", XD(2, 8, 8, 8, 8, 1, 1, 1, 1, 16)},
    {"XgemmDirect", "seed: CLBlast, Intel CPU default", XD(2, 8, 8, 8, 8, 1, 1, 4, 4, 32)},
    /* Xgemm's helpers as the EPYC run tuned them */
    {"Padtranspose", "seed: clgrad-tune, AMD EPYC (PoCL)", "PADTRA_PAD=0 PADTRA_TILE=8 PADTRA_WPT=4"},
    {"Pad", "seed: clgrad-tune, AMD EPYC (PoCL)", "PAD_DIMX=32 PAD_DIMY=8 PAD_WPTX=2 PAD_WPTY=1"},
};

static const tune_seed nvidia[] = {
    {"Xgemm", "seed: CLBlast, GeForce GTX 1080", XG(32, 2, 16, 8, 64, 8, 8, 64, 1, 1, 1, 1, 4, 8)},
    {"Xgemm", "seed: CLBlast, NVIDIA SM6.1 default", XG(32, 2, 16, 16, 64, 8, 8, 64, 1, 1, 0, 0, 4, 4)},
    {"XgemmDirect", "seed: CLBlast, NVIDIA SM6.1 default", XD(2, 8, 8, 8, 8, 1, 1, 4, 2, 32)},
};

static const tune_seed amd[] = {
    {"Xgemm", "seed: CLBlast, Radeon R9 Fury X", XG(32, 2, 16, 16, 64, 16, 16, 64, 1, 1, 0, 0, 4, 4)},
    {"Xgemm", "seed: CLBlast, AMD GPU default", XG(32, 2, 16, 16, 64, 8, 8, 64, 1, 1, 0, 0, 4, 4)},
    {"XgemmDirect", "seed: CLBlast, Radeon R9 Fury X", XD(2, 16, 16, 8, 8, 1, 1, 1, 1, 16)},
};

static const tune_seed intel_gpu[] = {
    {"Xgemm", "seed: CLBlast, Intel HD Graphics 530", XG(32, 2, 8, 8, 128, 32, 16, 64, 0, 0, 1, 0, 4, 2)},
    {"Xgemm", "seed: CLBlast, Intel Skylake GT2", XG(32, 2, 16, 16, 64, 8, 8, 64, 1, 1, 0, 0, 4, 4)},
    {"XgemmDirect", "seed: CLBlast, Intel Iris Pro", XD(2, 16, 16, 8, 8, 1, 1, 2, 4, 32)},
};

tune_device_class tune_device_class_of(int is_cpu, int is_gpu, const char *vendor)
{
    if (is_cpu)
        return TUNE_CLASS_CPU;
    if (!is_gpu || !vendor)
        return TUNE_CLASS_OTHER;
    if (strstr(vendor, "NVIDIA"))
        return TUNE_CLASS_NVIDIA_GPU;
    if (strstr(vendor, "Advanced Micro Devices") || strstr(vendor, "AMD"))
        return TUNE_CLASS_AMD_GPU;
    if (strstr(vendor, "Intel"))
        return TUNE_CLASS_INTEL_GPU;
    return TUNE_CLASS_OTHER;
}

const char *tune_device_class_name(tune_device_class c)
{
    switch (c) {
    case TUNE_CLASS_CPU: return "CPU";
    case TUNE_CLASS_NVIDIA_GPU: return "NVIDIA GPU";
    case TUNE_CLASS_AMD_GPU: return "AMD GPU";
    case TUNE_CLASS_INTEL_GPU: return "Intel GPU";
    default: return "other";
    }
}

size_t tune_seeds(tune_device_class c, const tune_seed **seeds)
{
#define TABLE(t) (*seeds = (t), sizeof(t) / sizeof *(t))
    switch (c) {
    case TUNE_CLASS_CPU: return TABLE(cpu);
    case TUNE_CLASS_NVIDIA_GPU: return TABLE(nvidia);
    case TUNE_CLASS_AMD_GPU: return TABLE(amd);
    case TUNE_CLASS_INTEL_GPU: return TABLE(intel_gpu);
    default:
        *seeds = NULL;
        return 0;
    }
#undef TABLE
}
