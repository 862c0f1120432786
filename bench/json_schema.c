/* json_schema.c - the keys of every JSON object clgrad-bench writes, in
 * the order written (see json_fields.h). One table: a row per key, tagged
 * with its object. */
#include "fit.h"
#include "json_fields.h"
#include "report.h"

/* A row of object X: its key, kind and the member of X's struct (X_COST:
 * the member of its bench_dist_cost). */
#define DEVICE(key, kind, member) {JO_DEVICE, key, kind, offsetof(bench_device, member)}
#define CASE(key, kind, member) {JO_CASE, key, kind, offsetof(bench_case, member)}
#define SPEEDUP(key, kind, member) {JO_SPEEDUP, key, kind, offsetof(bench_speedup, member)}
#define MEMORY(key, kind, member) {JO_MEMORY, key, kind, offsetof(bench_memory, member)}
#define LAUNCH(key, kind, member) {JO_LAUNCH, key, kind, offsetof(bench_launch_check, member)}
#define E2E(key, kind, member) {JO_E2E, key, kind, offsetof(bench_e2e, member)}
#define GEMM(key, kind, member) {JO_GEMM, key, kind, offsetof(bench_gemm, member)}
#define DIST(key, kind, member) {JO_DIST, key, kind, offsetof(bench_dist, member)}
#define DDP_COST(key, kind, member)                                                               \
    {JO_DIST, key, kind, offsetof(bench_dist, ddp) + offsetof(bench_dist_cost, member)}
#define SWEEP(key, kind, member) {JO_SWEEP, key, kind, offsetof(bench_stream_trial, member)}
#define TOP(key, kind, member) {JO_TOP, key, kind, offsetof(bench_report, member)}
#define STREAM(key, kind, member) {JO_STREAM, key, kind, offsetof(bench_report, member)}
#define STREAM_AFTER_SWEEP(key, kind, member)                                                     \
    {JO_STREAM_AFTER_SWEEP, key, kind, offsetof(bench_report, member)}
#define GEMM_TUNING(key, kind, member) {JO_GEMM_TUNING, key, kind, offsetof(bench_report, member)}
#define ZERO1(key, kind, member) {JO_ZERO1, key, kind, offsetof(bench_dist_zero1, member)}
#define ZERO1_COST(key, kind, member)                                                             \
    {JO_ZERO1, key, kind, offsetof(bench_dist_zero1, zero1) + offsetof(bench_dist_cost, member)}
#define FIT_ROW(key, kind, member) {JO_FIT_ROW, key, kind, offsetof(bench_fit_row, member)}
#define FIT(key, kind, member) {JO_FIT, key, kind, offsetof(bench_fit, member)}

const json_field bench_json_fields[] = {
    /* the report: "device" */
    DEVICE("name", JF_TEXT, name),
    DEVICE("vendor", JF_TEXT, vendor),
    DEVICE("driver", JF_TEXT, driver),
    DEVICE("platform", JF_TEXT, platform),
    DEVICE("version", JF_TEXT, version),
    DEVICE("global_mem_bytes", JF_U64, global_mem_bytes),
    DEVICE("max_alloc_bytes", JF_U64, max_alloc_bytes),
    DEVICE("compute_units", JF_UNSIGNED, compute_units),
    /* each item of "cases" */
    CASE("optimizer", JF_TEXT, optimizer),
    CASE("variant", JF_VARIANT, variant),
    CASE("path", JF_LETTER, path),
    CASE("feed", JF_LETTER, feed),
    CASE("clip", JF_BOOL, clip),
    CASE("n", JF_U64, n),
    CASE("k", JF_UNSIGNED, k),
    CASE("tensors", JF_UNSIGNED, tensors),
    CASE("groups", JF_UNSIGNED, groups),
    CASE("reps", JF_UNSIGNED, reps),
    CASE("micro_ms", JF_STAT, micro_ms),
    CASE("update_ms", JF_STAT, update_ms),
    CASE("cycle_ms", JF_STAT, cycle_ms),
    CASE("micro_bytes_per_param", JF_DOUBLE, micro_bytes),
    CASE("update_bytes_per_param", JF_DOUBLE, update_bytes),
    CASE("cycle_bytes_per_param", JF_DOUBLE, cycle_bytes),
    CASE("micro_gbs", JF_DOUBLE, micro_gbs),
    CASE("update_gbs", JF_DOUBLE, update_gbs),
    CASE("gbs", JF_DOUBLE, gbs),
    CASE("triad_gbs", JF_DOUBLE, triad_gbs),
    CASE("micro_frac_of_triad", JF_STAT, micro_frac_reps),
    CASE("update_frac_of_triad", JF_STAT, update_frac_reps),
    CASE("frac_of_triad", JF_STAT, frac_reps),
    CASE("launches_per_update", JF_DOUBLE, launches_per_update),
    CASE("launches_per_cycle", JF_DOUBLE, launches_per_cycle),
    CASE("host_syncs_per_update", JF_DOUBLE, host_syncs_per_update),
    /* "speedup" */
    SPEEDUP("optimizer", JF_TEXT, optimizer),
    SPEEDUP("path", JF_LETTER, path),
    SPEEDUP("clip", JF_BOOL, clip),
    SPEEDUP("n", JF_U64, n),
    SPEEDUP("k", JF_UNSIGNED, k),
    SPEEDUP("vs_unfused", JF_DOUBLE, vs_unfused),
    SPEEDUP("vs_per_tensor", JF_DOUBLE, vs_per_tensor),
    /* "memory" */
    MEMORY("config", JF_TEXT, config),
    MEMORY("path", JF_TEXT, path),
    MEMORY("bytes_per_param", JF_DOUBLE, bytes_per_param),
    MEMORY("params", JF_DOUBLE, params),
    MEMORY("accumulators", JF_DOUBLE, accumulators),
    MEMORY("states", JF_DOUBLE, states),
    MEMORY("param_copy", JF_DOUBLE, param_copy),
    MEMORY("grad_buffers", JF_DOUBLE, grad_buffers),
    MEMORY("fixed_bytes", JF_U64, fixed_bytes),
    MEMORY("budget_bytes", JF_U64, budget_bytes),
    MEMORY("max_params_in_budget", JF_U64, max_params_in_budget),
    /* "launches" */
    LAUNCH("optimizer", JF_TEXT, optimizer),
    LAUNCH("path", JF_LETTER, path),
    LAUNCH("tensors_many", JF_UNSIGNED, tensors_many),
    LAUNCH("launches_1_tensor", JF_DOUBLE, launches_1),
    LAUNCH("launches_many_tensors", JF_DOUBLE, launches_many),
    /* "e2e" */
    E2E("k", JF_UNSIGNED, k),
    E2E("micro_batch", JF_UNSIGNED, micro_batch),
    E2E("samples_per_s", JF_DOUBLE, samples_per_s),
    E2E("peak_device_bytes", JF_U64, peak_device_bytes),
    /* "gemm" */
    GEMM("role", JF_TEXT, role),
    GEMM("m", JF_UNSIGNED, m),
    GEMM("n", JF_UNSIGNED, n),
    GEMM("k", JF_UNSIGNED, k),
    GEMM("transa", JF_LETTER, transa),
    GEMM("transb", JF_LETTER, transb),
    GEMM("count", JF_UNSIGNED, count),
    GEMM("kernel_default", JF_TEXT, kernel_default),
    GEMM("kernel_tuned", JF_TEXT, kernel_tuned),
    GEMM("ms_default", JF_STAT, ms_default),
    GEMM("ms_tuned", JF_STAT, ms_tuned),
    GEMM("gflops_default", JF_DOUBLE, gflops_default),
    GEMM("gflops_tuned", JF_DOUBLE, gflops_tuned),
    GEMM("speedup", JF_DOUBLE, speedup),
    GEMM("gflops_triad_bound", JF_DOUBLE, gflops_triad_bound),
    /* "dist" */
    DIST("mode", JF_TEXT, mode),
    DIST("ranks", JF_INT, ranks),
    DIST("n", JF_U64, n),
    DIST("k", JF_UNSIGNED, k),
    DIST("tensors", JF_UNSIGNED, tensors),
    DIST("reps", JF_UNSIGNED, reps),
    DIST("model_bytes_per_update", JF_DOUBLE, model_bytes),
    DDP_COST("ddp_bytes_sent_per_update", JF_DOUBLE, bytes_sent),
    DDP_COST("ddp_bytes_received_per_update", JF_DOUBLE, bytes_received),
    DDP_COST("sync_bytes_sent_per_update", JF_DOUBLE, sync_bytes_sent),
    DDP_COST("sync_bytes_received_per_update", JF_DOUBLE, sync_bytes_received),
    DDP_COST("bytes_ratio", JF_DOUBLE, bytes_ratio),
    DDP_COST("ddp_comm_ms", JF_STAT, comm_ms),
    DDP_COST("sync_comm_ms", JF_STAT, sync_comm_ms),
    DDP_COST("comm_ratio", JF_STAT, comm_ratio),
    DDP_COST("ddp_staging_ms", JF_STAT, staging_ms),
    DDP_COST("sync_staging_ms", JF_STAT, sync_staging_ms),
    DDP_COST("ddp_update_ms", JF_STAT, update_ms),
    DDP_COST("sync_update_ms", JF_STAT, sync_update_ms),
    /* "stream"."sweep" */
    SWEEP("form", JF_TEXT, form),
    SWEEP("vector_width", JF_UNSIGNED, vw),
    SWEEP("work_group_size", JF_SIZE, wg),
    SWEEP("gbs", JF_DOUBLE, gbs),
    /* the report's own fields: at the top, after "tool" and "schema_version" */
    TOP("quick", JF_BOOL, quick),
    TOP("k", JF_UNSIGNED, k),
    TOP("tensors", JF_UNSIGNED, tensors),
    TOP("budget_bytes", JF_U64, budget_bytes),
    /* in "stream", before "sweep" */
    STREAM("n", JF_U64, stream_n),
    STREAM("reps", JF_SIZE, triad_gbs.count),
    STREAM("copy_gbs", JF_STAT, copy_gbs),
    STREAM("triad_gbs", JF_STAT, triad_gbs),
    STREAM("triad_form", JF_TEXT, triad_form),
    STREAM("vector_width", JF_UNSIGNED, stream_vw),
    STREAM("work_group_size", JF_SIZE, stream_local),
    STREAM("copy_vector_width", JF_UNSIGNED, copy_vw),
    STREAM("copy_work_group_size", JF_SIZE, copy_local),
    STREAM("triad_classic_gbs", JF_STAT, triad_classic_gbs),
    STREAM("classic_vector_width", JF_UNSIGNED, classic_vw),
    STREAM("classic_work_group_size", JF_SIZE, classic_local),
    /* and after it */
    STREAM_AFTER_SWEEP("triad_gridstride_gbs", JF_STAT, triad_gridstride_gbs),
    STREAM_AFTER_SWEEP("gridstride_groups", JF_UNSIGNED, gridstride_groups),
    /* "gemm_tuning", before "speedup" */
    GEMM_TUNING("tuned", JF_BOOL, gemm_tuned),
    GEMM_TUNING("file", JF_TEXT, gemm_tuning),
    GEMM_TUNING("micro_batch", JF_UNSIGNED, gemm_micro_batch),
    GEMM_TUNING("rounds", JF_UNSIGNED, gemm_rounds),
    GEMM_TUNING("step_ms_default", JF_DOUBLE, gemm_step_ms_default),
    GEMM_TUNING("step_ms_tuned", JF_DOUBLE, gemm_step_ms_tuned),
    /* --dist: each row of "dist_zero1", after "mode": "zero1" */
    ZERO1("ranks", JF_INT, ranks),
    ZERO1("n", JF_U64, n),
    ZERO1("k", JF_UNSIGNED, k),
    ZERO1("tensors", JF_UNSIGNED, tensors),
    ZERO1("reps", JF_UNSIGNED, reps),
    ZERO1("layout_elements", JF_U64, layout_elements),
    ZERO1("shard_elements", JF_U64, shard_elements),
    ZERO1_COST("zero1_bytes_sent_per_update", JF_DOUBLE, bytes_sent),
    ZERO1_COST("zero1_bytes_received_per_update", JF_DOUBLE, bytes_received),
    ZERO1_COST("sync_bytes_sent_per_update", JF_DOUBLE, sync_bytes_sent),
    ZERO1_COST("sync_bytes_received_per_update", JF_DOUBLE, sync_bytes_received),
    ZERO1_COST("bytes_ratio", JF_DOUBLE, bytes_ratio),
    ZERO1_COST("zero1_comm_ms", JF_STAT, comm_ms),
    ZERO1_COST("sync_comm_ms", JF_STAT, sync_comm_ms),
    ZERO1_COST("comm_ratio", JF_STAT, comm_ratio),
    ZERO1("comm_vs_ddp", JF_STAT, vs_ddp),
    ZERO1_COST("zero1_staging_ms", JF_STAT, staging_ms),
    ZERO1_COST("sync_staging_ms", JF_STAT, sync_staging_ms),
    ZERO1_COST("zero1_update_ms", JF_STAT, update_ms),
    ZERO1_COST("sync_update_ms", JF_STAT, sync_update_ms),
    ZERO1("state_bytes_rank0", JF_U64, states_rank0),
    ZERO1("state_bytes_max_rank", JF_U64, states_max),
    ZERO1("state_bytes_unsharded", JF_U64, states_unsharded),
    /* --fit: each row of "fit" */
    FIT_ROW("config", JF_TEXT, config),
    FIT_ROW("state_dtype", JF_DTYPE, state_dtype),
    FIT_ROW("acc_dtype", JF_DTYPE, acc_dtype),
    FIT_ROW("master_dtype", JF_DTYPE, master_dtype),
    FIT_ROW("copy_dtype", JF_DTYPE, copy_dtype),
    FIT_ROW("path", JF_TEXT, path),
    FIT_ROW("bytes_per_param", JF_DOUBLE, bytes_per_param),
    FIT_ROW("fixed_bytes", JF_U64, fixed_bytes),
    FIT_ROW("max_params", JF_U64, max_params),
    /* and the object around them, before "optimizer" */
    FIT("memory", JF_U64, memory),
    FIT("reserve", JF_U64, reserve),
    FIT("max_alloc", JF_U64, max_alloc),
    FIT("shards", JF_UNSIGNED, shards),
};
const size_t bench_json_n_fields = sizeof bench_json_fields / sizeof bench_json_fields[0];
