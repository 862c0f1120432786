/* ckpt_ext.c - the list of parts other objects attach to a model's
 * checkpoints (ckpt_ext.h). */
#include "ckpt_ext.h"
#include "model.h"

void clg__ckpt_ext_add(clg_model *m, clg_ckpt_ext *e)
{
    clg_ckpt_ext **p = &m->ckpt_ext;
    while (*p)
        p = &(*p)->next;
    e->next = NULL;
    *p = e;
}

void clg__ckpt_ext_remove(clg_model *m, clg_ckpt_ext *e)
{
    for (clg_ckpt_ext **p = &m->ckpt_ext; *p; p = &(*p)->next) {
        if (*p == e) {
            *p = e->next;
            e->next = NULL;
            return;
        }
    }
}

clg_ckpt_ext *clg__ckpt_ext_at(const clg_model *m, int index)
{
    clg_ckpt_ext *e = m->ckpt_ext;
    for (int i = 0; e && i < index; i++)
        e = e->next;
    return index >= 0 ? e : NULL;
}

void clg__ckpt_ext_detach_all(clg_model *m)
{
    clg_ckpt_ext *list = m->ckpt_ext;
    m->ckpt_ext = NULL;
    /* An owner attaches several parts: tell each owner once. Its callback
     * only forgets the model; the links stay intact until the end. */
    for (clg_ckpt_ext *e = list; e; e = e->next) {
        bool first = true;
        for (clg_ckpt_ext *f = list; f != e; f = f->next)
            first = first && f->owner != e->owner;
        if (first && e->detached)
            e->detached(e->owner);
    }
    while (list) {
        clg_ckpt_ext *next = list->next;
        list->next = NULL;
        list = next;
    }
}
