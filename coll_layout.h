/* coll_layout.h - tensor layouts over coll.h (the OneFlow seed)
                    C99, no heap; include after or instead of coll.h

   USAGE
     Where coll.h's implementation is compiled (COLL_IMPLEMENTATION defined),
     include this header too and the layout code comes with it:
         #define COLL_IMPLEMENTATION
         #include "coll_layout.h"          (includes coll.h)
     Everywhere else include "coll_layout.h" alone.

   CONFIGURATION (define before the first include)
     COLL_LAYOUT_MAX_DIMS  most dimensions a tensor may have              (8)

   WHAT IT DOES
     Layouts of distributed tensors: split / broadcast / partial-sum
   (OneFlow's SBP), and conversion between them.

   Built only on the public calls (coll_run with the arguments of an
   all-gather(v), reduce-scatter(v), all-reduce or all-to-all) plus
   COLL_MEMCPY / COLL_MEMSET for local
   copies (coll.h defines both; see its CONFIGURATION). No heap: the caller
   passes any workspace, whose size coll_layout_work_bytes() tells. Tensors
   live in host memory (the copies here do not go through coll_memops).

   THE IDEA
     A global tensor of shape shape[0..ndim-1], row-major, is held by the
     ranks of a communicator in one of three ways:
       split(d)     rank r holds a slab of rows along dimension d - the rows
                    numpy.array_split would give it: with n = shape[d] and p
                    ranks, the first n % p ranks hold n/p + 1 rows, the rest
                    n/p; its local tensor has the global shape with shape[d]
                    replaced by its row count, row-major;
       broadcast    every rank holds the whole tensor;
       partial_sum  every rank holds a tensor of the global shape; the
                    global tensor is their element-wise sum.
     Converting is a collective or a local copy:
       S(d) -> B       all-gather (v when uneven)        (p-1)/p·n bytes out
       P -> B          all-reduce                         2(p-1)/p·n
       P -> S(d)       reduce-scatter (v when uneven)     (p-1)/p·n
       S(i) -> S(j)    all-to-all                         (p-1)/p²·n
       B -> S(d)       keep my slab, no traffic
       B -> P          rank 0 keeps the tensor, the others hold zeros
       S(d) -> P       my slab in place, zeros elsewhere, no traffic
       X -> X          a copy
     For d = 0 (or when every dimension before d has extent 1) a rank's slab
     is one contiguous range of the global tensor and the collective works
     on the buffers directly. Otherwise the slab is a strided box: it is
     packed into (or unpacked from) the workspace with one box copy per rank
     around the collective. All-to-all needs equal blocks: with uneven
     splits every block is padded to the largest one.

   USAGE
     size_t shape[2] = { 4, 5 }, mine[2];
     size_t n = coll_layout_local_shape(rank, p, 2, shape, coll_sbp_split(0), mine);
     size_t wb = coll_layout_work_bytes(p, 2, shape, COLL_FLOAT32,
                                        coll_sbp_split(0), coll_sbp_broadcast());
     coll_layout_convert(&c, 2, shape, COLL_FLOAT32, x, coll_sbp_split(0),
                         full, coll_sbp_broadcast(), work, wb);
   Every rank passes the same shape, dtype, layouts and work size; src and
   dst must not overlap.
*/
#ifndef COLL_LAYOUT_H
#define COLL_LAYOUT_H

#include "coll.h"

#ifndef COLL_LAYOUT_MAX_DIMS
#define COLL_LAYOUT_MAX_DIMS 8
#endif



#ifdef __cplusplus
extern "C" {
#endif

typedef enum coll_sbp_kind {
    COLL_SBP_SPLIT, COLL_SBP_BROADCAST, COLL_SBP_PARTIAL_SUM
} coll_sbp_kind;

typedef struct coll_sbp {
    coll_sbp_kind kind;
    int dim;                   /* the split dimension (COLL_SBP_SPLIT only)  */
} coll_sbp;

COLL_API coll_sbp coll_sbp_split(int dim);
COLL_API coll_sbp coll_sbp_broadcast(void);
COLL_API coll_sbp coll_sbp_partial_sum(void);

/* Rows of n that rank `rank` of `nranks` holds under a split (numpy's
   array_split); *start (may be NULL) receives the first of them. */
COLL_API size_t coll_layout_rows(size_t n, int nranks, int rank, size_t *start);
/* The local tensor of `rank`: its shape into local[0..ndim-1] (may be NULL);
   returns its element count. */
COLL_API size_t coll_layout_local_shape(int rank, int nranks, int ndim, const size_t *shape,
                                        coll_sbp sbp, size_t *local);
/* Workspace coll_layout_convert needs for this conversion (0 if none). */
COLL_API size_t coll_layout_work_bytes(int nranks, int ndim, const size_t *shape,
                                       coll_dtype dtype, coll_sbp from, coll_sbp to);
/* src: this rank's local tensor in layout `from`; dst: its local tensor in
   layout `to`. COLL_ERR_INVAL for bad arguments (ndim outside 1..8, a split
   dimension out of range, COLL_USER_TYPE, overlapping buffers), NOSPC for a
   short workspace, else what the collective returned. */
COLL_API int coll_layout_convert(coll_comm *c, int ndim, const size_t *shape, coll_dtype dtype,
                                 const void *src, coll_sbp from, void *dst, coll_sbp to,
                                 void *work, size_t work_bytes);

#ifdef __cplusplus
}
#endif


#endif /* COLL_LAYOUT_H */

/* ========================================================================== */
/*                              IMPLEMENTATION                                */
/* ========================================================================== */
#if defined(COLL_IMPLEMENTATION) && !defined(COLL__LAYOUT_IMPLEMENTED)
#define COLL__LAYOUT_IMPLEMENTED
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#endif
/* ========================================================================== */
/* 8. Layout conversion: split / broadcast / partial-sum                      */
/* ========================================================================== */

COLL_API coll_sbp coll_sbp_split(int dim)
{
    coll_sbp s; s.kind = COLL_SBP_SPLIT; s.dim = dim; return s;
}
COLL_API coll_sbp coll_sbp_broadcast(void)
{
    coll_sbp s; s.kind = COLL_SBP_BROADCAST; s.dim = 0; return s;
}
COLL_API coll_sbp coll_sbp_partial_sum(void)
{
    coll_sbp s; s.kind = COLL_SBP_PARTIAL_SUM; s.dim = 0; return s;
}

COLL_API size_t coll_layout_rows(size_t n, int nranks, int rank, size_t *start)
{
    size_t p, r, q, extra;
    if (nranks < 1 || rank < 0 || rank >= nranks) { if (start) *start = 0; return 0; }
    p = (size_t)nranks; r = (size_t)rank; q = n / p; extra = n % p;
    if (start) *start = r * q + (r < extra ? r : extra);
    return q + (r < extra ? 1 : 0);
}

static size_t coll__layout_count(int ndim, const size_t *shape)
{
    size_t n = 1;
    int d;
    for (d = 0; d < ndim; d++) n *= shape[d];
    return n;
}

/* The box rank `rank` holds under `sbp`: its extent (local shape) and its
   origin in the global tensor. Broadcast and partial sum hold everything. */
static size_t coll__layout_box(int rank, int nranks, int ndim, const size_t *shape,
                               coll_sbp sbp, size_t *extent, size_t *origin)
{
    int d;
    for (d = 0; d < ndim; d++) { extent[d] = shape[d]; origin[d] = 0; }
    if (sbp.kind == COLL_SBP_SPLIT)
        extent[sbp.dim] = coll_layout_rows(shape[sbp.dim], nranks, rank, &origin[sbp.dim]);
    return coll__layout_count(ndim, extent);
}

COLL_API size_t coll_layout_local_shape(int rank, int nranks, int ndim, const size_t *shape,
                                        coll_sbp sbp, size_t *local)
{
    size_t extent[COLL_LAYOUT_MAX_DIMS], origin[COLL_LAYOUT_MAX_DIMS], n;
    int d;
    if (ndim < 1 || ndim > COLL_LAYOUT_MAX_DIMS || nranks < 1 || rank < 0 || rank >= nranks || !shape ||
        (sbp.kind == COLL_SBP_SPLIT && (sbp.dim < 0 || sbp.dim >= ndim)))
        return 0;
    n = coll__layout_box(rank, nranks, ndim, shape, sbp, extent, origin);
    if (local) for (d = 0; d < ndim; d++) local[d] = extent[d];
    return n;
}

/* Copies a box of extent `box` from position `so` of the row-major array
   `src` (shape `ss`) to position `dor` of the array `dst` (shape `ds`).
   The copy runs in contiguous runs: the innermost dimension, widened over
   every further dimension that the box covers whole in both arrays (a
   whole slab of rows is one run). An odometer walks the dimensions left. */
static void coll__layout_box_copy(unsigned char *dst, const size_t *ds, const size_t *dor,
                                  const unsigned char *src, const size_t *ss, const size_t *so,
                                  const size_t *box, int ndim, size_t esize)
{
    size_t dstride[COLL_LAYOUT_MAX_DIMS], sstride[COLL_LAYOUT_MAX_DIMS];
    size_t idx[COLL_LAYOUT_MAX_DIMS], run;
    int d, k;
    if (coll__layout_count(ndim, box) == 0) return;
    dstride[ndim - 1] = sstride[ndim - 1] = esize;
    for (d = ndim - 1; d > 0; d--) {
        dstride[d - 1] = dstride[d] * ds[d];
        sstride[d - 1] = sstride[d] * ss[d];
    }
    /* dims k..ndim-1 form one run */
    for (k = ndim - 1; k > 0 && box[k] == ds[k] && box[k] == ss[k]; k--) continue;
    run = box[k] * dstride[k];
    for (d = 0; d < k; d++) idx[d] = 0;
    for (;;) {
        size_t doff = dor[k] * dstride[k], soff = so[k] * sstride[k];
        for (d = 0; d < k; d++) {
            doff += (dor[d] + idx[d]) * dstride[d];
            soff += (so[d] + idx[d]) * sstride[d];
        }
        COLL_MEMCPY(dst + doff, src + soff, run);
        for (d = k - 1; d >= 0 && ++idx[d] == box[d]; d--) idx[d] = 0;
        if (d < 0) break;
    }
}

/* Is a split(d) slab one contiguous range of the global tensor? Yes when
   every dimension before d has extent 1. */
static int coll__layout_contiguous(const size_t *shape, int dim)
{
    int d;
    for (d = 0; d < dim; d++) if (shape[d] != 1) return 0;
    return 1;
}

/* Elements of the largest block an all-to-all from split(i) to split(j)
   sends: the largest slab along i crossed with the largest along j. */
static size_t coll__layout_a2a_block(int nranks, int ndim, const size_t *shape, int i, int j)
{
    size_t ext[COLL_LAYOUT_MAX_DIMS];
    int d;
    for (d = 0; d < ndim; d++) ext[d] = shape[d];
    ext[i] = coll_layout_rows(shape[i], nranks, 0, NULL);   /* rank 0's is largest */
    ext[j] = coll_layout_rows(shape[j], nranks, 0, NULL);
    return coll__layout_count(ndim, ext);
}

/* What a conversion needs: `data` elements of staging, and whether the
   per-rank counts of a "v" collective (nranks size_t) are needed. */
static void coll__layout_needs(int nranks, int ndim, const size_t *shape, coll_sbp from,
                               coll_sbp to, size_t *data, int *counts)
{
    *data = 0; *counts = 0;
    if (from.kind == COLL_SBP_SPLIT && to.kind == COLL_SBP_SPLIT && from.dim != to.dim) {
        *data = 2 * (size_t)nranks * coll__layout_a2a_block(nranks, ndim, shape, from.dim, to.dim);
    } else if ((from.kind == COLL_SBP_SPLIT && to.kind == COLL_SBP_BROADCAST) ||
               (from.kind == COLL_SBP_PARTIAL_SUM && to.kind == COLL_SBP_SPLIT)) {
        int dim = from.kind == COLL_SBP_SPLIT ? from.dim : to.dim;
        *counts = shape[dim] % (size_t)nranks != 0;
        if (!coll__layout_contiguous(shape, dim)) *data = coll__layout_count(ndim, shape);
    }
}

/* Workspace: [counts][pad to 64][data]. The 64 spare bytes let any
   caller pointer be aligned for the element type's kernels. */
static int coll__layout_sbp_ok(coll_sbp s, int ndim)
{
    return (s.kind == COLL_SBP_BROADCAST || s.kind == COLL_SBP_PARTIAL_SUM ||
            (s.kind == COLL_SBP_SPLIT && s.dim >= 0 && s.dim < ndim));
}

COLL_API size_t coll_layout_work_bytes(int nranks, int ndim, const size_t *shape,
                                       coll_dtype dtype, coll_sbp from, coll_sbp to)
{
    size_t data;
    int counts;
    if (ndim < 1 || ndim > COLL_LAYOUT_MAX_DIMS || nranks < 1 || !shape) return 0;
    if (!coll__layout_sbp_ok(from, ndim) || !coll__layout_sbp_ok(to, ndim)) return 0;
    coll__layout_needs(nranks, ndim, shape, from, to, &data, &counts);
    if (!data && !counts) return 0;
    return 64 + (counts ? (size_t)nranks * sizeof(size_t) + 64 : 0) + data * coll_dtype_size(dtype);
}

static unsigned char *coll__layout_align(unsigned char *p)
{
    return p + ((64 - (size_t)((uintptr_t)p % 64)) % 64);
}


/* The box copies run in helpers of their own (COLL__NOINLINE), so their
   index arrays are off the stack by the time a collective runs: a
   conversion's worst stack is its own small frame above one blocking call.

   Ranks r0..r1-1 in turn: rank r's box under `sbp` moves between the whole
   tensor and a packed array that holds the boxes back to back. */
static COLL__NOINLINE void coll__layout_boxes(int r0, int r1, int nranks, int ndim, const size_t *shape,
                                              coll_sbp sbp, size_t es, const unsigned char *src,
                                              unsigned char *dst, int src_whole)
{
    size_t extent[COLL_LAYOUT_MAX_DIMS], origin[COLL_LAYOUT_MAX_DIMS], zero[COLL_LAYOUT_MAX_DIMS];
    int d, r;
    for (d = 0; d < ndim; d++) zero[d] = 0;
    for (r = r0; r < r1; r++) {
        size_t n = coll__layout_box(r, nranks, ndim, shape, sbp, extent, origin) * es;
        if (src_whole) { coll__layout_box_copy(dst, extent, zero, src, shape, origin, extent, ndim, es); dst += n; }
        else           { coll__layout_box_copy(dst, shape, origin, src, extent, zero, extent, ndim, es); src += n; }
    }
}

/* S(i) -> S(j): rank r sends rank q the part of its slab (rows of i that
   are r's) that lies in q's rows of j; rank q places the part from r at
   r's rows of i. Blocks are padded to the largest so one all-to-all with
   equal counts carries them. Packing cuts my slab along j, block r for
   rank r; unpacking puts block r at r's rows of i. */
static COLL__NOINLINE void coll__layout_a2a_move(const coll_comm *c, int ndim, const size_t *shape, size_t es,
                                                 int i, int j, size_t block, const unsigned char *src,
                                                 unsigned char *dst, int unpack)
{
    size_t local[COLL_LAYOUT_MAX_DIMS], box[COLL_LAYOUT_MAX_DIMS], at[COLL_LAYOUT_MAX_DIMS], zero[COLL_LAYOUT_MAX_DIMS];
    int d, r, cut = unpack ? i : j;
    coll_layout_local_shape(c->rank, c->nranks, ndim, shape, coll_sbp_split(unpack ? j : i), local);
    for (d = 0; d < ndim; d++) zero[d] = 0;
    for (r = 0; r < c->nranks; r++) {
        for (d = 0; d < ndim; d++) { box[d] = local[d]; at[d] = 0; }
        box[cut] = coll_layout_rows(shape[cut], c->nranks, r, &at[cut]);
        if (unpack) coll__layout_box_copy(dst, local, at, src + (size_t)r * block * es, box, zero, box, ndim, es);
        else        coll__layout_box_copy(dst + (size_t)r * block * es, box, zero, src, local, at, box, ndim, es);
    }
}

/* One collective through coll_run: every call here sums and leaves the
   algorithm to AUTO. The arguments sit in this frame, so a conversion's
   stack is this and coll_run's, not a wrapper's as well. */
static int coll__layout_run(coll_comm *c, coll_kind k, const void *src, void *dst, size_t count,
                            const size_t *counts, coll_dtype dtype)
{
    coll_args a;
    COLL_MEMSET(&a, 0, sizeof a);
    a.kind = k; a.algo = COLL_ALGO_AUTO; a.src = src; a.dst = dst; a.count = count;
    a.counts = counts; a.dtype = dtype; a.op = COLL_SUM;
    return coll_run(c, &a);
}

static int coll__layout_split_to_split(coll_comm *c, int ndim, const size_t *shape,
                                       size_t es, coll_dtype dtype, const unsigned char *src,
                                       int i, unsigned char *dst, int j, unsigned char *w)
{
    size_t block = coll__layout_a2a_block(c->nranks, ndim, shape, i, j);
    unsigned char *sendw = w, *recvw = w + (size_t)c->nranks * block * es;
    int rc;
    if (block == 0) return COLL_OK;
    if (shape[i] % (size_t)c->nranks || shape[j] % (size_t)c->nranks)
        COLL_MEMSET(sendw, 0, (size_t)c->nranks * block * es);   /* no stray bytes in padding */
    coll__layout_a2a_move(c, ndim, shape, es, i, j, block, src, sendw, 0);
    rc = coll__layout_run(c, COLL_ALLTOALL, sendw, recvw, block, NULL, dtype);
    if (rc) return rc;
    coll__layout_a2a_move(c, ndim, shape, es, i, j, block, recvw, dst, 1);
    return COLL_OK;
}

/* Per-rank element counts of a "v" collective: each rank's box. */
static COLL__NOINLINE void coll__layout_counts(size_t *counts, int p, int ndim, const size_t *shape, coll_sbp sbp)
{
    int r;
    for (r = 0; r < p; r++) counts[r] = coll_layout_local_shape(r, p, ndim, shape, sbp, NULL);
}

/* S(d) -> B: all-gather; a strided slab arrives back to back in the
   workspace and is put in place after. counts as above. */
static int coll__layout_allgather(coll_comm *c, int ndim, const size_t *shape, size_t es, coll_dtype dtype,
                                  const unsigned char *s, unsigned char *o, coll_sbp from, size_t nsrc,
                                  size_t *counts, unsigned char *w)
{
    int p = c->nranks, packed = !coll__layout_contiguous(shape, from.dim), rc;
    unsigned char *gather = packed ? w : o;
    if (counts) {
        coll__layout_counts(counts, p, ndim, shape, from);
        rc = coll__layout_run(c, COLL_ALLGATHERV, s, gather, 0, counts, dtype);
    } else {
        rc = coll__layout_run(c, COLL_ALLGATHER, s, gather, nsrc / es, NULL, dtype);
    }
    if (rc || !packed) return rc;
    coll__layout_boxes(0, p, p, ndim, shape, from, es, w, o, 0);
    return COLL_OK;
}

COLL_API int coll_layout_convert(coll_comm *c, int ndim, const size_t *shape, coll_dtype dtype,
                                 const void *src, coll_sbp from, void *dst, coll_sbp to,
                                 void *work, size_t work_bytes)
{
    size_t es = coll_dtype_size(dtype), total, nsrc, ndst, data, *counts = NULL;
    const unsigned char *s = (const unsigned char *)src;
    unsigned char *o = (unsigned char *)dst, *w = NULL;
    int p, me, need_counts;
    if (!c || ndim < 1 || ndim > COLL_LAYOUT_MAX_DIMS || !shape || es == 0 || !coll__layout_sbp_ok(from, ndim) ||
        !coll__layout_sbp_ok(to, ndim))
        return COLL_ERR_INVAL;
    p = c->nranks; me = c->rank; total = coll__layout_count(ndim, shape);
    nsrc = coll_layout_local_shape(me, p, ndim, shape, from, NULL) * es;
    ndst = coll_layout_local_shape(me, p, ndim, shape, to, NULL) * es;
    if ((nsrc && !s) || (ndst && !o) || (nsrc && ndst && s < o + ndst && o < s + nsrc))
        return COLL_ERR_INVAL;
    if (total == 0) return COLL_OK;
    coll__layout_needs(p, ndim, shape, from, to, &data, &need_counts);
    if (work_bytes < coll_layout_work_bytes(p, ndim, shape, dtype, from, to) || ((data || need_counts) && !work))
        return COLL_ERR_NOSPC;
    if (data || need_counts) w = coll__layout_align((unsigned char *)work);
    if (need_counts) {                                 /* the counts, then the data */
        counts = (size_t *)(void *)w;
        w = coll__layout_align(w + (size_t)p * sizeof(size_t));
    }
    if (from.kind == to.kind && (from.kind != COLL_SBP_SPLIT || from.dim == to.dim)) {   /* a copy */
        if (ndst) COLL_MEMCPY(o, s, ndst);
        return COLL_OK;
    }
    switch (from.kind) {
    case COLL_SBP_BROADCAST:
        if (to.kind == COLL_SBP_PARTIAL_SUM) {         /* rank 0 holds it all */
            if (me == 0) COLL_MEMCPY(o, s, ndst);
            else COLL_MEMSET(o, 0, ndst);
            return COLL_OK;
        }
        coll__layout_boxes(me, me + 1, p, ndim, shape, to, es, s, o, 1);   /* B -> S(d): my slab */
        return COLL_OK;
    case COLL_SBP_PARTIAL_SUM:
        if (to.kind == COLL_SBP_BROADCAST) return coll__layout_run(c, COLL_ALLREDUCE, s, o, total, NULL, dtype);
        /* P -> S(d): reduce-scatter, a strided slab packed first (rank r's part r-th) */
        if (!coll__layout_contiguous(shape, to.dim)) {
            coll__layout_boxes(0, p, p, ndim, shape, to, es, s, w, 1);
            s = w;
        }
        if (!need_counts) return coll__layout_run(c, COLL_REDUCE_SCATTER, s, o, ndst / es, NULL, dtype);
        coll__layout_counts(counts, p, ndim, shape, to);
        return coll__layout_run(c, COLL_REDUCE_SCATTERV, s, o, 0, counts, dtype);
    case COLL_SBP_SPLIT:
        if (to.kind == COLL_SBP_SPLIT)
            return coll__layout_split_to_split(c, ndim, shape, es, dtype, s, from.dim, o, to.dim, w);
        if (to.kind == COLL_SBP_PARTIAL_SUM) {         /* my slab, zeros around */
            COLL_MEMSET(o, 0, ndst);
            coll__layout_boxes(me, me + 1, p, ndim, shape, from, es, s, o, 0);
            return COLL_OK;
        }
        return coll__layout_allgather(c, ndim, shape, es, dtype, s, o, from, nsrc, counts, w);
    }
    return COLL_ERR_INVAL;
}


#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
#endif /* COLL_IMPLEMENTATION */

/* LICENCE: MIT, as coll.h. */
