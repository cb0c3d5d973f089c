/* seed_mindspore_mpi.c - MindSpore's four collective primitives in plain MPI

   The seed page runs AllReduce(SUM), AllGather, ReduceScatter(SUM) and
   Broadcast(root 0) on 4 ranks under `mpirun -np 4` and shows rank 0's
   results. This is the same, written as an MPI user would write it - no
   coll anywhere - so that the drop-in can take it over unchanged:

       mpirun -np 4 -x LD_PRELOAD=build/lib/libcoll_mpi_openmpi.so build/mpi/seed_mindspore_mpi.ompi
       [[6.]]                               AllReduce: 0 + 1 + 2 + 3
       [[0.]                                AllGather: the 1x1 inputs
        [1.]                                  stacked on dim 0 -> 4x1
        [2.]
        [3.]]
       [[0.]]                               ReduceScatter: rank 0's row of the sum
       [[0]]                                Broadcast: rank 0's int32 [[0]]

   Every rank checks its own four results (for any number of ranks); the
   program exits non-zero if any rank got a wrong one. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* numpy's print of a 2-D array of whole numbers (see examples/seed_mindspore.c) */
static void print_matrix(const void *data, int rows, int is_float)
{
    char cell[64];
    int width = 0, i, len;
    for (i = 0; i < rows; i++) {
        len = is_float ? snprintf(cell, sizeof cell, "%.0f.", ((const float *)data)[i])
                       : snprintf(cell, sizeof cell, "%d", ((const int32_t *)data)[i]);
        if (len > width) width = len;
    }
    printf("[");
    for (i = 0; i < rows; i++) {
        if (is_float) snprintf(cell, sizeof cell, "%.0f.", ((const float *)data)[i]);
        else snprintf(cell, sizeof cell, "%d", ((const int32_t *)data)[i]);
        printf("%s[%*s]%s", i ? " " : "", width, cell, i + 1 < rows ? "\n" : "");
    }
    printf("]\n");
}

static int wrong;
static void expect(int ok, int rank, const char *what)
{
    if (!ok) { wrong++; fprintf(stderr, "rank %d: wrong %s result\n", rank, what); }
}

int main(int argc, char **argv)
{
    int rank, p, i, all_wrong = 0;
    float x, sum, *gathered, *rs_in, rs_out;
    int32_t b;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    gathered = (float *)malloc((size_t)p * sizeof(float));
    rs_in = (float *)malloc((size_t)p * sizeof(float));

    x = (float)rank;                                    /* AllReduce(SUM) */
    MPI_Allreduce(&x, &sum, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    expect(sum == (float)(p * (p - 1) / 2), rank, "AllReduce");

    MPI_Allgather(&x, 1, MPI_FLOAT, gathered, 1, MPI_FLOAT, MPI_COMM_WORLD);   /* AllGather */
    for (i = 0; i < p; i++) expect(gathered[i] == (float)i, rank, "AllGather");

    for (i = 0; i < p; i++) rs_in[i] = (float)i;        /* ReduceScatter(SUM) */
    MPI_Reduce_scatter_block(rs_in, &rs_out, 1, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    expect(rs_out == (float)(p * rank), rank, "ReduceScatter");

    b = rank == 0 ? 0 : 100 + rank;                     /* Broadcast(root 0) */
    MPI_Bcast(&b, 1, MPI_INT32_T, 0, MPI_COMM_WORLD);
    expect(b == 0, rank, "Broadcast");

    if (rank == 0) {
        printf("%d ranks; rank 0's results as the seed prints them\n", p);
        print_matrix(&sum, 1, 1);
        print_matrix(gathered, p, 1);
        print_matrix(&rs_out, 1, 1);
        print_matrix(&b, 1, 0);
        fflush(stdout);
    }
    MPI_Reduce(&wrong, &all_wrong, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0 && all_wrong) fprintf(stderr, "%d wrong results across the ranks\n", all_wrong);
    free(gathered);
    free(rs_in);
    MPI_Finalize();
    return rank == 0 ? all_wrong != 0 : wrong != 0;
}
