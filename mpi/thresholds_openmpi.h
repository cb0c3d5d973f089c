/* thresholds_openmpi.h - from `make mpi-drop-in-tune`, 2026-11-26 01:34 UTC: the smallest
   size (bytes of the call's largest buffer) routed through coll, per
   collective, indexed by rank count 1..8 (8: 8 and more; 0 unused);
   DI_NEVER: never.
   Measured at 2, 4 ranks; see mpi/bench_drop_in.sh for the rule. */
static const long long di_min_openmpi[DI_KINDS][9] = {
    /* allreduce            */ { DI_NEVER, DI_NEVER, 4096, 16777216, 16777216, DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER },
    /* bcast                */ { DI_NEVER, DI_NEVER, 16777216, 67108864, 67108864, DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER },
    /* reduce               */ { DI_NEVER, DI_NEVER, 4194304, 67108864, 67108864, DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER },
    /* allgather            */ { DI_NEVER, DI_NEVER, 4194304, 4194304, 4194304, DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER },
    /* allgatherv           */ { DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER, 4194304, DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER },
    /* gather               */ { DI_NEVER, DI_NEVER, 67108864, 67108864, 67108864, DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER },
    /* gatherv              */ { DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER },
    /* scatter              */ { DI_NEVER, DI_NEVER, 67108864, DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER },
    /* scatterv             */ { DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER },
    /* alltoall             */ { DI_NEVER, DI_NEVER, 67108864, DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER },
    /* alltoallv            */ { DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER },
    /* reduce_scatter       */ { DI_NEVER, DI_NEVER, 32768, 262144, 262144, DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER },
    /* reduce_scatter_block */ { DI_NEVER, DI_NEVER, 32768, 32768, 64, DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER },
    /* scan                 */ { DI_NEVER, DI_NEVER, 4194304, 67108864, 67108864, DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER },
    /* exscan               */ { DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER, 67108864, DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER },
    /* barrier              */ { DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER, DI_NEVER }
};
