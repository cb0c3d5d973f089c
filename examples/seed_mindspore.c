/* seed_mindspore.c - MindSpore's four collective primitives over coll.h and MPI

   The seed page runs AllReduce(SUM), AllGather, ReduceScatter(SUM) and
   Broadcast(root 0) on 4 ranks started by `mpirun -np 4`, and shows what
   rank 0 prints. This program does the same over the coll MPI port
   (ports/coll_mpi.h) - MPI only carries the bytes; coll.h runs the
   algorithms - and rank 0 prints the same four results the way numpy
   prints them:

       mpirun -np 4 seed_mindspore          (Open MPI as root: add
                                             --allow-run-as-root --oversubscribe)
       [[6.]]                               AllReduce: 0 + 1 + 2 + 3
       [[0.]                                AllGather: the 1x1 inputs
        [1.]                                  stacked on dim 0 -> 4x1
        [2.]
        [3.]]
       [[0.]]                               ReduceScatter: 4x1 [[0],[1],[2],[3]]
                                              summed -> [0,4,8,12], rank 0's row
       [[0]]                                Broadcast: rank 0's int32 [[0]]

   Before each result rank 0 says which primitive it is and shows every
   rank's input (gathered from the ranks with coll_gather, so they are the
   inputs the ranks really had); the result lines themselves are exactly
   the seed's. Every rank checks its own four results (for any number of
   ranks), and the program exits non-zero if any rank got a wrong one. */
#define COLL_IMPLEMENTATION
#include "coll.h"
#define COLL_MPI_IMPLEMENTATION
#include "ports/coll_mpi.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* numpy's print of a 2-D array whose values are whole numbers: rows in
   brackets, the first on the opening line, the rest indented by one space;
   floats keep their trailing point ("6."), ints do not; values right-aligned
   to the widest. (Enough for these results, not a general formatter.) */
static void print_matrix(const void *data, int rows, int cols, int is_float)
{
    char cell[64];
    int width = 0, i, j, len;
    for (i = 0; i < rows * cols; i++) {
        len = is_float ? snprintf(cell, sizeof cell, "%.0f.", ((const float *)data)[i])
                       : snprintf(cell, sizeof cell, "%d", ((const int32_t *)data)[i]);
        if (len > width) width = len;
    }
    printf("[");
    for (i = 0; i < rows; i++) {
        printf("%s[", i ? " " : "");
        for (j = 0; j < cols; j++) {
            int k = i * cols + j;
            if (is_float) snprintf(cell, sizeof cell, "%.0f.", ((const float *)data)[k]);
            else snprintf(cell, sizeof cell, "%d", ((const int32_t *)data)[k]);
            printf("%s%*s", j ? " " : "", width, cell);
        }
        printf("]%s", i + 1 < rows ? "\n" : "");
    }
    printf("]\n");
}

static int wrong;

/* "label: rank 0 [[0.]], rank 1 [[1.]], ..." - one 1x1 input per rank */
static void print_inputs(const char *label, const void *vals, int p, int is_float)
{
    int i;
    printf("%s:", label);
    for (i = 0; i < p; i++) {
        if (is_float) printf("%s rank %d [[%.0f.]]", i ? "," : "", i, ((const float *)vals)[i]);
        else printf("%s rank %d [[%d]]", i ? "," : "", i, ((const int32_t *)vals)[i]);
    }
    printf("\n");
}

static void expect(int ok, int rank, const char *what)
{
    if (!ok) {
        wrong++;
        fprintf(stderr, "rank %d: wrong %s result\n", rank, what);
    }
}

int main(int argc, char **argv)
{
    static unsigned char scratch[4096];
    coll_mpi m;
    coll_port port;
    coll_comm c;
    int rank, p, i, rc, all_wrong = 0;
    float x[1], sum[1], *gathered, *rs_in, rs_out[1], *inputs;
    int32_t b[1], *b_inputs;

    MPI_Init(&argc, &argv);
    rc = coll_mpi_port_init(&m, MPI_COMM_WORLD, &port, &rank, &p);
    if (rc == 0) rc = coll_init(&c, rank, p, &port, scratch, sizeof scratch);
    if (rc) {
        fprintf(stderr, "rank %d: setting up: %s\n", rank, coll_result_str(rc));
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    gathered = (float *)malloc((size_t)p * sizeof(float));
    rs_in = (float *)malloc((size_t)p * sizeof(float));
    inputs = (float *)malloc((size_t)p * sizeof(float));
    b_inputs = (int32_t *)malloc((size_t)p * sizeof(int32_t));

    /* AllReduce(SUM): input [[rank]], float32 */
    x[0] = (float)rank;
    coll_gather(&c, x, inputs, 1, COLL_FLOAT32, 0, COLL_ALGO_AUTO);   /* to show them */
    rc = coll_allreduce(&c, x, sum, 1, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO);
    expect(rc == 0 && sum[0] == (float)(p * (p - 1) / 2), rank, "AllReduce");

    /* AllGather: input [[rank]], output p x 1, concatenated on dim 0 */
    rc = coll_allgather(&c, x, gathered, 1, COLL_FLOAT32, COLL_ALGO_AUTO);
    for (i = 0; i < p; i++)
        expect(rc == 0 && gathered[i] == (float)i, rank, "AllGather");

    /* ReduceScatter(SUM): input p x 1 [[0],[1],...] on every rank; the sum
       [0, p, 2p, ...] is split on dim 0, rank r keeps row r */
    for (i = 0; i < p; i++) rs_in[i] = (float)i;
    rc = coll_reduce_scatter(&c, rs_in, rs_out, 1, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO);
    expect(rc == 0 && rs_out[0] == (float)(p * rank), rank, "ReduceScatter");

    /* Broadcast(root 0), int32: the seed gives every rank [[0]]; the other
       ranks start from something else here, or a broadcast that moved
       nothing would pass unnoticed */
    b[0] = rank == 0 ? 0 : 100 + rank;
    coll_gather(&c, b, b_inputs, 1, COLL_INT32, 0, COLL_ALGO_AUTO);
    rc = coll_broadcast(&c, b, 1, COLL_INT32, 0, COLL_ALGO_AUTO);
    expect(rc == 0 && b[0] == 0, rank, "Broadcast");

    if (rank == 0) {
        printf("%d ranks; each primitive's inputs, then rank 0's result as the seed prints it\n", p);
        print_inputs("AllReduce(SUM), float32 1x1 inputs", inputs, p, 1);
        print_matrix(sum, 1, 1, 1);
        print_inputs("AllGather (concatenate on dim 0), float32 1x1 inputs", inputs, p, 1);
        print_matrix(gathered, p, 1, 1);
        printf("ReduceScatter(SUM) (split on dim 0): every rank's input is %dx1 [[0.] .. [%d.]]; "
               "rank 0 keeps row 0 of the sum\n", p, p - 1);
        print_matrix(rs_out, 1, 1, 1);
        print_inputs("Broadcast(root 0), int32 1x1 inputs", b_inputs, p, 0);
        print_matrix(b, 1, 1, 0);
        fflush(stdout);
    }
    MPI_Reduce(&wrong, &all_wrong, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0 && all_wrong)
        fprintf(stderr, "%d wrong results across the ranks\n", all_wrong);
    free(gathered);
    free(rs_in);
    free(inputs);
    free(b_inputs);
    coll_mpi_port_free(&m);
    MPI_Finalize();
    return rank == 0 ? all_wrong != 0 : wrong != 0;
}
