/* test_kernels_host.cu - coll_cuda.h's kernel bodies, run thread by thread on the CPU

   The reduce and scale kernels are thin wrappers around __host__ __device__
   functions of (thread, thread count). Compiled by nvcc, those bodies run
   here on the host with the same split into head / 16-byte packs / tail
   that the launch computes, for every dtype and op, aligned, equally
   misaligned and differently misaligned pointers, in place, ragged counts,
   and thread counts from 1 to several blocks (so the grid-stride loops
   wrap). Each result is compared with cuda_ref.h's host arithmetic, the
   bytes around the output must be untouched, and the split itself is
   checked (packs exactly when the pointers agree modulo 16). The packed
   16-bit ops use cuda_fp16/cuda_bf16's host versions of the intrinsics,
   so this checks the code paths, not the GPU's arithmetic units: that is
   test_cuda.cu's job, on a GPU. Needs nvcc, no GPU.
*/
#define COLL_CUDA_IMPLEMENTATION
#include "coll_cuda.h"
#include "cuda_ref.h"

#include <stdio.h>
#include <stdlib.h>

static int g_pass, g_fail;

#define N_MAX 40000
#define PAD 64                                   /* elements */
static unsigned char A[(N_MAX + 2 * PAD) * 8], Bv[(N_MAX + 2 * PAD) * 8];
static unsigned char O[(N_MAX + 2 * PAD) * 8], Oref[(N_MAX + 2 * PAD) * 8];

/* Runs what the launch would run, one "thread" after the other. These take
   the place of coll_cuda.h's launches in its own dispatch (generated from
   coll.h's COLL_DTYPE_LIST), so the element type and operator struct each
   (dtype, op) gets here are the ones the GPU gets. */
struct emulate_reduce {
    template <typename T, typename Op>
    static int run(void *out, const void *a, const void *b, size_t n, size_t threads)
    {
        size_t head, npacks, t;
        coll_cuda__split(sizeof(T), out, a, b, n, &head, &npacks);
        for (t = 0; t < threads; t++)
            coll_cuda__reduce_range<T, Op>((T *)out, (const T *)a, (const T *)b, head, npacks, n,
                                           t, threads);
        return COLL_OK;
    }
};

struct emulate_scale {
    template <typename T, typename Div>
    static int run(void *buf, size_t n, long long d, size_t threads)
    {
        size_t head, npacks, t;
        coll_cuda__split(sizeof(T), buf, buf, NULL, n, &head, &npacks);
        for (t = 0; t < threads; t++)
            coll_cuda__scale_range<T, Div>((T *)buf, head, npacks, n, d, t, threads);
        return COLL_OK;
    }
};

static int run(coll_dtype t, void *o, const void *a, const void *b, size_t n, coll_op op, size_t th)
{
    return coll_cuda__reduce_dispatch<emulate_reduce>(t, op, o, a, b, n, th);
}

static int scale(coll_dtype t, void *buf, size_t n, size_t d, size_t th)
{
    return coll_cuda__scale_dispatch<emulate_scale>(t, buf, n, (long long)d, th);
}

typedef struct { int a, b, o, inplace; } align_t;

static void reduce_case(coll_dtype t, coll_op op, size_t n, align_t al, size_t threads)
{
    size_t es = dt_size(t), i, win = (n + 2 * PAD) * es, bad = (size_t)-1, head, npacks;
    unsigned char *a = A + al.a * es, *b = Bv + al.b * es;
    unsigned char *base = al.inplace ? Oref : O;       /* in place: a copy of A */
    size_t ooff = (size_t)(al.inplace ? al.a : al.o);
    unsigned char *out = base + ooff * es;
    int guards = 1, split_ok, rc;

    if (al.inplace) { memcpy(Oref, A, win); a = Oref + al.a * es; }
    else memset(O, 0xA5, win);
    rc = run(t, out, a, b, n, op, threads);
    for (i = 0; i < n && bad == (size_t)-1 && rc == COLL_OK; i++)
        if (get_bits(t, out, i) != ref_op(t, op, get_bits(t, A + al.a * es, i), get_bits(t, b, i))) bad = i;
    for (i = 0; i < win; i++) {
        int inside = i >= ooff * es && i < (ooff + n) * es;
        if (!inside && base[i] != (al.inplace ? A[i] : 0xA5)) { guards = 0; break; }
    }
    /* the split: packs iff the three agree mod 16, covering all but < 16 bytes at each end */
    coll_cuda__split(es, out, a, b, n, &head, &npacks);
    if (((uintptr_t)out - (uintptr_t)a) % 16 == 0 && ((uintptr_t)b - (uintptr_t)a) % 16 == 0)
        split_ok = head * es < 16 && (n - head - npacks * (16 / es)) * es < 16 &&
                   (head == n || ((uintptr_t)(a + head * es)) % 16 == 0);
    else split_ok = head == 0 && npacks == 0;
    if (rc == COLL_OK && bad == (size_t)-1 && guards && split_ok) { g_pass++; return; }
    g_fail++;
    printf("FAIL: reduce %s %s n=%zu align(a=%d b=%d out=%d%s) threads=%zu: rc %d, first bad %ld, guards %d, split %d (head %zu packs %zu)\n",
           dt_name(t), op_name(op), n, al.a, al.b, al.o, al.inplace ? " in-place" : "", threads,
           rc, bad == (size_t)-1 ? -1L : (long)bad, guards, split_ok, head, npacks);
}

static void scale_case(coll_dtype t, size_t n, int off, size_t d, size_t threads)
{
    size_t es = dt_size(t), i, win = (n + 2 * PAD) * es, bad = (size_t)-1;
    int guards = 1, rc;
    memcpy(O, A, win);
    rc = scale(t, O + off * es, n, d, threads);
    for (i = 0; i < n && bad == (size_t)-1 && rc == COLL_OK; i++)
        if (get_bits(t, O + off * es, i) != ref_div(t, get_bits(t, A + off * es, i), d)) bad = i;
    for (i = 0; i < win; i++) {
        int inside = i >= off * es && i < (off + n) * es;
        if (!inside && O[i] != A[i]) { guards = 0; break; }
    }
    if (rc == COLL_OK && bad == (size_t)-1 && guards) { g_pass++; return; }
    g_fail++;
    printf("FAIL: scale %s n=%zu off=%d /%zu threads=%zu: rc %d, first bad %ld, guards %d\n",
           dt_name(t), n, off, d, threads, rc, bad == (size_t)-1 ? -1L : (long)bad, guards);
}

int main(void)
{
    static const size_t counts[] = { 0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 100, 1001, 4099, N_MAX };
    static const align_t aligns[] = {
        {0, 0, 0, 0}, {1, 1, 1, 0}, {3, 3, 3, 0}, {7, 7, 7, 0},
        {0, 1, 0, 0}, {1, 0, 2, 0}, {0, 0, 1, 0}, {2, 3, 5, 0},
        {0, 0, 0, 1}, {1, 1, 1, 1}, {1, 2, 1, 1} };
    static const size_t threads[] = { 1, 5, 32, 256, 768 };
    int dt, op, k = 0;
    size_t c, a, i;

    for (dt = 0; dt < 10; dt++) {
        coll_dtype t = (coll_dtype)dt;
        for (i = 0; i < N_MAX + 2 * PAD; i++) {
            put_bits(t, A, i, rand_elem(t));
            put_bits(t, Bv, i, rand_elem(t));
        }
        for (op = 0; op < dt_nops(t); op++)
            for (c = 0; c < sizeof counts / sizeof counts[0]; c++)
                for (a = 0; a < sizeof aligns / sizeof aligns[0]; a++)
                    reduce_case(t, (coll_op)op, counts[c], aligns[a], threads[k++ % 5]);
        for (c = 0; c < sizeof counts / sizeof counts[0]; c++)
            for (a = 0; a < 5; a++) {
                static const size_t divs[] = { 1, 2, 3, 7, 8 };
                scale_case(t, counts[c], (int)(a + c) % 4, divs[a], threads[(a + c) % 5]);
            }
    }
    /* the dispatch has a case for every dtype of coll.h's list (sum and the
       division for all, the bitwise ops for the integers), and refuses the
       rest */
    for (dt = 0; dt < (int)COLL_USER_TYPE; dt++) {
        coll_dtype t = (coll_dtype)dt;
        int ok = run(t, O, A, Bv, 0, COLL_SUM, 1) == COLL_OK && scale(t, O, 0, 3, 1) == COLL_OK &&
                 run(t, O, A, Bv, 0, COLL_BXOR, 1) == (dt_is_int(t) ? COLL_OK : COLL_ERR_INVAL);
        if (ok) g_pass++;
        else { g_fail++; printf("FAIL: dispatch of dtype %d (%s)\n", dt, dt_name(t)); }
    }
    if (run(COLL_USER_TYPE, O, A, Bv, 1, COLL_SUM, 1) == COLL_ERR_NOSYS &&
        run(COLL_INT32, O, A, Bv, 1, COLL_USER_OP, 1) == COLL_ERR_NOSYS &&
        run(COLL_DTYPE_COUNT, O, A, Bv, 1, COLL_SUM, 1) == COLL_ERR_INVAL &&
        run(COLL_INT32, O, A, Bv, 1, COLL_OP_COUNT, 1) == COLL_ERR_INVAL &&
        scale(COLL_USER_TYPE, O, 1, 3, 1) == COLL_ERR_NOSYS &&
        scale(COLL_DTYPE_COUNT, O, 1, 3, 1) == COLL_ERR_INVAL) g_pass++;
    else { g_fail++; printf("FAIL: the dispatch accepts a user or unknown dtype or op\n"); }
    printf("cuda-kernels-host: %d passed, %d failed\n", g_pass, g_fail);
    return g_fail ? 1 : 0;
}
