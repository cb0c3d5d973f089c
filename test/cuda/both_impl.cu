/* both_impl.cu - a user's one file with both implementations, built by
   nvcc with every warning an error (test/cuda/compile_check.sh): coll.h's
   own code must pass the device compiler's front end and the host
   compiler behind it, for each architecture the build lists. */
#define COLL_IMPLEMENTATION
#define COLL_CUDA_IMPLEMENTATION
#include "coll_cuda.h"

int both_impl_linked(void) { return coll_dtype_size(COLL_FLOAT32) == 4 ? 0 : 1; }
