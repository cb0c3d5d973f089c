# mk/cuda.mk - coll_cuda.h (device kernels and memops) and the CUDA port.
#
#   make test-cuda-compile  every CUDA file through nvcc, warnings as errors,
#                           for sm_80 and sm_90 (one check per compile or
#                           link), plus the plain C / C++ view of the
#                           headers and the port compiled as C. Needs no
#                           GPU; part of `make test`.
#   make test-cuda-kernels-host  the reduce/scale kernel bodies, compiled by
#                           nvcc and run thread by thread on the CPU, every
#                           dtype/op/alignment; needs nvcc, no GPU; part of
#                           `make test`.
#   make test-cuda-port-sim the CUDA port under a simulated CUDA runtime
#                           (sim_cudart.c: streams run late, in random
#                           order): coll.h's collectives over the port,
#                           stream ordering included, on the CPU. Needs
#                           the CUDA headers only; part of `make test`.
#   make test-cuda-check-port  the public port checker (test/check_port.h)
#                           over the CUDA port under the same simulated
#                           runtime, with its negative control, and the
#                           port's lifecycle (init, port, abort, close).
#                           Needs the CUDA headers only; part of `make test`.
#   make test-cuda          build and run test/cuda/test_cuda.cu on the GPU
#   make test-cuda-sanitize the same under compute-sanitizer (memcheck,
#                           initcheck) on a shorter case list
#   make bench-cuda         kernel bandwidth vs cudaMemcpy, all-reduce
#                           algbw/busbw over the CUDA port (--quick: BENCH_CUDA_ARGS=--quick)
#
# test-cuda and bench-cuda mean something only where a GPU is present:
# without one the programs say "NOT RUN" and exit 77, so make fails - a run
# without a GPU is never mistaken for a pass. They are not in TEST_TARGETS.
# Outside CI a missing nvcc skips test-cuda-compile loudly; with CI=true it
# fails. The same for test-cuda-kernels-host (nvcc) and, with the CUDA
# headers missing, test-cuda-port-sim and test-cuda-check-port.

CUDA_HOME  ?= /usr/local/cuda
NVCC       ?= $(firstword $(shell command -v nvcc 2>/dev/null) $(wildcard $(CUDA_HOME)/bin/nvcc))
# sm_80 (A100) and sm_90 (H100/H200) machine code, plus sm_90 PTX so newer
# GPUs can JIT it. CUDA 13 no longer targets sm_70.
CUDA_ARCH  ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
              -gencode arch=compute_90,code=compute_90
NVCCFLAGS  ?= -std=c++17 -O2 -g -lineinfo
CUDA_WARN  := -Werror all-warnings -Xcompiler -Wall,-Wextra
CUDA_SANITIZER ?= $(firstword $(shell command -v compute-sanitizer 2>/dev/null) $(wildcard $(CUDA_HOME)/bin/compute-sanitizer))
BENCH_CUDA_ARGS ?=
CB := $(B)/cuda

TEST_TARGETS += test-cuda-compile test-cuda-kernels-host test-cuda-port-sim test-cuda-check-port
.PHONY: test-cuda-compile test-cuda-kernels-host test-cuda-port-sim test-cuda-check-port \
        test-cuda test-cuda-sanitize bench-cuda

# stop the recipe with a loud message if nvcc is missing
cuda_need_nvcc = if [ -z "$(NVCC)" ]; then \
    echo "*** cuda: nvcc not found (PATH, $(CUDA_HOME)/bin): cannot build $@ ***"; exit 1; fi

# the CUDA headers, or a loud skip (outside CI) / one failure (CI=true)
cuda_need_headers = if [ ! -f $(CUDA_HOME)/include/cuda_runtime_api.h ]; then \
    if [ "$$CI" = true ]; then echo "cuda: $(CUDA_HOME)/include/cuda_runtime_api.h not found (required under CI)"; \
        echo "$(1): 0 passed, 1 failed"; exit 1; fi; \
    echo "*** cuda: CUDA headers not found in $(CUDA_HOME)/include: $@ SKIPPED ***"; exit 0; fi

CUDA_HDRS := coll.h coll_cuda.h ports/coll_cuda_port.h

$(CB)/coll_impl.o: test/cuda/coll_impl.c coll.h
	@mkdir -p $(CB)
	$(CC) -std=c99 $(CFLAGS) $(WARN) -I. -c $< -o $@

$(CB)/coll_cuda_impl.o: test/cuda/coll_cuda_impl.cu $(CUDA_HDRS)
	@$(cuda_need_nvcc)
	@mkdir -p $(CB)
	$(NVCC) $(NVCCFLAGS) $(CUDA_WARN) $(CUDA_ARCH) -I. -Itest/cuda -c $< -o $@

$(CB)/test_cuda.o: test/cuda/test_cuda.cu test/cuda/cuda_ref.h test/cuda/a2av.h $(CUDA_HDRS)
	@$(cuda_need_nvcc)
	@mkdir -p $(CB)
	$(NVCC) $(NVCCFLAGS) $(CUDA_WARN) $(CUDA_ARCH) -I. -Itest/cuda -c $< -o $@

$(CB)/bench_cuda.o: bench/bench_cuda.cu $(CUDA_HDRS)
	@$(cuda_need_nvcc)
	@mkdir -p $(CB)
	$(NVCC) $(NVCCFLAGS) $(CUDA_WARN) $(CUDA_ARCH) -I. -Itest/cuda -c $< -o $@

$(CB)/test_cuda $(CB)/bench_cuda: $(CB)/%: $(CB)/%.o $(CB)/coll_cuda_impl.o $(CB)/coll_impl.o
	$(NVCC) $(CUDA_ARCH) -o $@ $^ $(LDLIBS_THREADS)

## test-cuda-compile: every CUDA file through nvcc, warnings as errors (no GPU needed)
test-cuda-compile:
	@NVCC='$(NVCC)' CC='$(CC)' CXX='$(CXX)' CFLAGS='$(CFLAGS)' WARN='$(WARN)' \
	 NVCCFLAGS='$(NVCCFLAGS)' CUDA_WARN='$(CUDA_WARN)' CUDA_ARCH='$(CUDA_ARCH)' \
	 CUDA_HOME='$(CUDA_HOME)' LDLIBS_THREADS='$(LDLIBS_THREADS)' OUT='$(CB)/check' \
	 sh test/cuda/compile_check.sh

# one architecture is enough here: only the host side of it runs
$(CB)/test_kernels_host: test/cuda/test_kernels_host.cu test/cuda/cuda_ref.h $(CB)/coll_impl.o $(CUDA_HDRS)
	@mkdir -p $(CB)
	$(NVCC) $(NVCCFLAGS) $(CUDA_WARN) -arch=sm_90 -I. -Itest/cuda $< $(CB)/coll_impl.o -o $@

## test-cuda-kernels-host: the CUDA reduce/scale kernels run thread by thread on the CPU (nvcc)
test-cuda-kernels-host:
	@if [ -z "$(NVCC)" ]; then \
	    if [ "$$CI" = true ]; then echo "cuda: nvcc not found (required under CI)"; \
	        echo "cuda-kernels-host: 0 passed, 1 failed"; exit 1; fi; \
	    echo "*** cuda: nvcc not found: test-cuda-kernels-host SKIPPED ***"; exit 0; fi; \
	$(MAKE) --no-print-directory $(CB)/test_kernels_host && $(CB)/test_kernels_host

$(CB)/test_port_sim: test/cuda/test_port_sim.c test/cuda/sim_cudart.c test/cuda/sim_memops.h test/cuda/a2av.h coll.h ports/coll_cuda_port.h coll_cuda.h
	@mkdir -p $(CB)
	$(CC) -std=c99 $(CFLAGS) $(WARN) -I. -isystem $(CUDA_HOME)/include \
	    test/cuda/test_port_sim.c test/cuda/sim_cudart.c -o $@ $(LDLIBS_THREADS)

## test-cuda-port-sim: the CUDA port under a simulated CUDA runtime, on the CPU
test-cuda-port-sim:
	@$(call cuda_need_headers,cuda-port-sim); \
	$(MAKE) --no-print-directory $(CB)/test_port_sim && $(CB)/test_port_sim

$(CB)/test_check_port_sim: test/cuda/test_check_port_sim.c test/cuda/sim_cudart.c test/cuda/sim_memops.h test/cuda/cuda_ref.h \
        test/check_port.h test/coll_test.h test/test_values.h coll.h ports/coll_cuda_port.h coll_cuda.h
	@mkdir -p $(CB)
	$(CC) -std=c99 $(CFLAGS) $(WARN) -I. -isystem $(CUDA_HOME)/include \
	    test/cuda/test_check_port_sim.c test/cuda/sim_cudart.c -o $@ $(LDLIBS_THREADS) -lm

## test-cuda-check-port: the port checker and the lifecycle over the CUDA port, simulated runtime, CPU
test-cuda-check-port:
	@$(call cuda_need_headers,cuda-check-port); \
	$(MAKE) --no-print-directory $(CB)/test_check_port_sim && $(CB)/test_check_port_sim

## test-cuda: the CUDA tests on the GPU (needs a GPU)
test-cuda: $(CB)/test_cuda
	$(CB)/test_cuda

## test-cuda-sanitize: the CUDA tests under compute-sanitizer memcheck and initcheck (GPU)
test-cuda-sanitize: $(CB)/test_cuda
	@if [ -z "$(CUDA_SANITIZER)" ]; then \
	    echo "*** cuda: compute-sanitizer not found: sanitizer run NOT DONE ***"; exit 1; fi
	COLL_TEST_QUICK=1 COLL_TEST_SANITIZER=1 $(CUDA_SANITIZER) --tool memcheck --error-exitcode 9 $(CB)/test_cuda
	COLL_TEST_QUICK=1 COLL_TEST_SANITIZER=1 $(CUDA_SANITIZER) --tool initcheck --error-exitcode 9 $(CB)/test_cuda

## bench-cuda: kernel bandwidth and all-reduce over the CUDA port (GPU; BENCH_CUDA_ARGS)
bench-cuda: $(CB)/bench_cuda
	$(CB)/bench_cuda $(BENCH_CUDA_ARGS)
