/* events.c - the optional clg_events of the calls that enqueue work: the
 * caller's wait list becomes a barrier in front of the call's commands, and
 * the returned event a marker behind them. On the context's in-order queue
 * that orders everything the call enqueues, whatever it is, without clgrad
 * threading events through each command. */
#include "internal.h"

clg_status clg__events_check(clg_context *ctx, const clg_events *ev, const char *who)
{
    if (ev == NULL)
        return CLG_SUCCESS;
    if ((ev->num_wait == 0) != (ev->wait_list == NULL))
        return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT,
                         "%s: events: num_wait is %u but wait_list is %s", who, ev->num_wait,
                         ev->wait_list == NULL ? "NULL" : "not NULL");
    for (cl_uint i = 0; i < ev->num_wait; i++)
        if (ev->wait_list[i] == NULL)
            return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT, "%s: events: wait_list[%u] is NULL",
                             who, i);
    return CLG_SUCCESS;
}

clg_status clg__events_wait(clg_context *ctx, const clg_events *ev, const char *who)
{
    if (ev == NULL || ev->num_wait == 0)
        return CLG_SUCCESS;
    cl_int err = clEnqueueBarrierWithWaitList(ctx->queue, ev->num_wait, ev->wait_list, NULL);
    return err == CL_SUCCESS ? CLG_SUCCESS
                             : clg__cl_fail(ctx, err, who, "clEnqueueBarrierWithWaitList");
}

clg_status clg__events_finish(clg_context *ctx, const clg_events *ev, clg_status st,
                              const char *who)
{
    if (st != CLG_SUCCESS || ev == NULL || ev->event == NULL)
        return st;
    cl_int err = clEnqueueMarkerWithWaitList(ctx->queue, 0, NULL, ev->event);
    if (err != CL_SUCCESS) {
        *ev->event = NULL;
        return clg__cl_fail(ctx, err, who, "clEnqueueMarkerWithWaitList");
    }
    /* Another queue may wait for it: the marker must reach the device. */
    clFlush(ctx->queue);
    return CLG_SUCCESS;
}
