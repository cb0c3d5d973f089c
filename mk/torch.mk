# mk/torch.mk - coll as a torch.distributed backend (torch/, docs/torch.md).
#
#   make torch         the Python package build/python/coll_torch/ (the
#                      extension _C.so, __init__.py, the launcher run.py):
#                      PYTHONPATH=build/python, `import coll_torch`, then
#                      init_process_group(backend="coll"); ranks started by
#                      `python3 -m coll_torch.run --nproc-per-node N x.py`
#   make test-torch    every operation x dtype at 2, 3 and 4 processes (shm
#                      and TCP ports, env:// and tcp://), the torch seed's
#                      all-reduces, DDP against gloo, wrong calls raising on
#                      every rank; 4 ranks as two hosts (COLL_HOST_ID): the
#                      hosts port and coll_hier; then test_torch_jobs.py:
#                      ZeRO-2 and parameter-server jobs (and FSDP, where
#                      torch lets it run on CPU) against a one-process run
#   make test-torch-run  the launcher: jobs of 2 and 3 ranks, two "nodes",
#                      two hosts of 2 ranks (coll_hier), a rank that stops
#                      calling (the flight recorder's file), a failing
#                      rank, SIGTERM and SIGINT to the launcher
#   make bench-torch   dist.all_reduce, coll against gloo, 2 and 4 processes;
#                      then bench-torch-jobs: DDP, ZeRO-2 and parameter-server
#                      steps, 2 and 4 ranks; then bench-torch-ddp: DDP steps
#                      of wide models, 2 ranks
#
# Debian's torch: python3-torch (1.13) for /usr/bin/python3, its C++ headers
# from libtorch-dev, pybind11-dev. Plain g++, no setuptools.
TORCH_PY    := $(firstword $(wildcard /usr/bin/python3) python3)
TORCH_B     := $(B)/torch
TORCH_PKG   := $(B)/python/coll_torch
TORCH_MOD   := $(TORCH_PKG)/_C.so
TORCH_PYSRC := $(wildcard torch/python/coll_torch/*.py)
TORCH_PYOUT := $(patsubst torch/python/coll_torch/%,$(TORCH_PKG)/%,$(TORCH_PYSRC))
TORCH_HDRS  := coll.h coll_hier.h ports/coll_shm.h ports/coll_tcp.h ports/coll_hosts.h
# deferred (=): asked of Python only when the module is built
TORCH_PYINC  = $(shell $(TORCH_PY) -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
TORCH_CXXFLAGS := -std=c++17 -O2 -g -fPIC -Wall -Wextra -Werror -D_GLIBCXX_USE_CXX11_ABI=1 \
                  -isystem /usr/include/torch/csrc/api/include
TORCH_LIBS  := -ltorch_python -ltorch -ltorch_cpu -lc10
TORCH_NEED  := /usr/include/torch/csrc/distributed/c10d/ProcessGroup.hpp /usr/include/pybind11/pybind11.h

# coll.h, coll_hier.h and the ports, once, as C; their symbols stay inside the module
$(TORCH_B)/coll_ports.o: torch/coll_ports.c $(TORCH_HDRS)
	@mkdir -p $(@D)
	$(CC) -std=c99 -O2 -g -fPIC -fvisibility=hidden $(WARN) -I. -c -o $@ $<

$(TORCH_MOD): torch/coll_torch.cpp $(TORCH_B)/coll_ports.o $(TORCH_HDRS)
	@for f in $(TORCH_NEED); do [ -f $$f ] || { echo "$$f missing: apt-get install libtorch-dev pybind11-dev python3-torch python3-dev"; exit 1; }; done
	@mkdir -p $(@D)
	$(CXX) $(TORCH_CXXFLAGS) -isystem $(TORCH_PYINC) -I. -shared -o $@ torch/coll_torch.cpp $(TORCH_B)/coll_ports.o $(TORCH_LIBS)
	@rm -f $(B)/python/coll_torch.so   # the module before it was a package

# the package's Python, copied beside the extension
$(TORCH_PKG)/%.py: torch/python/coll_torch/%.py
	@mkdir -p $(@D)
	cp $< $@

.PHONY: torch test-torch test-torch-quick test-torch-run bench-torch bench-torch-jobs bench-torch-ddp
## torch: [run] the torch.distributed backend and its launcher, the package build/python/coll_torch (backend="coll")
torch: $(TORCH_MOD) $(TORCH_PYOUT)

# Without torch's headers: a skip here, a failure under CI.
TORCH_OR_SKIP = if ! $(TORCH_PY) -c 'import torch' 2>/dev/null || ! ls $(TORCH_NEED) >/dev/null 2>&1; then \
	    if [ "$$CI" = true ]; then echo "python3-torch, libtorch-dev or pybind11-dev not found (CI): failing"; \
	        echo "torch: 0 passed, 1 failed"; exit 1; fi; \
	    echo "*** SKIPPED $@: apt-get install python3-torch libtorch-dev pybind11-dev ***"; \
	    echo "torch: 0 passed, 0 failed"; exit 0; fi

## test-torch: the backend at 2, 3, 4 processes: every op x dtype, the torch seed, DDP vs gloo, wrong calls, two hosts (coll_hier); ZeRO-2, parameter-server, FSDP jobs vs one process
test-torch:
	@$(TORCH_OR_SKIP); $(MAKE) --no-print-directory torch && \
	    PYTHONPATH=$(B)/python timeout 600 $(TORCH_PY) torch/test_torch.py; a=$$?; \
	    PYTHONPATH=$(B)/python timeout 240 $(TORCH_PY) torch/test_torch_jobs.py; b=$$?; \
	    [ $$a -eq 0 ] && [ $$b -eq 0 ]

## test-torch-quick: the backend's checks at 2 processes over shm only
test-torch-quick:
	@$(TORCH_OR_SKIP); $(MAKE) --no-print-directory torch && \
	    PYTHONPATH=$(B)/python timeout 300 $(TORCH_PY) torch/test_torch.py quick

## test-torch-run: python3 -m coll_torch.run: 2, 3 ranks, two nodes, two hosts x 2 (coll_hier), the flight recorder, a failing rank, SIGTERM, SIGINT
test-torch-run:
	@$(TORCH_OR_SKIP); $(MAKE) --no-print-directory torch && \
	    PYTHONPATH=$(B)/python timeout 240 $(TORCH_PY) torch/test_torch_run.py

## bench-torch: dist.all_reduce float32 sum, coll against gloo, 2 and 4 processes, then bench-torch-jobs and bench-torch-ddp; medians
bench-torch: torch
	@PYTHONPATH=$(B)/python $(TORCH_PY) torch/bench_torch.py
	@PYTHONPATH=$(B)/python $(TORCH_PY) torch/bench_torch_jobs.py
	@PYTHONPATH=$(B)/python $(TORCH_PY) torch/bench_torch_ddp.py

## bench-torch-jobs: time per step of DDP, ZeRO-2 (all_gather + reduce_scatter) and parameter-server (broadcast + reduce) jobs, coll against gloo, 2 and 4 ranks
bench-torch-jobs: torch
	@PYTHONPATH=$(B)/python $(TORCH_PY) torch/bench_torch_jobs.py

## bench-torch-ddp: DDP steps of wide, cheap models (Linear 2048x2048 x2, EmbeddingBag 100000x64), coll against gloo, 2 ranks
bench-torch-ddp: torch
	@PYTHONPATH=$(B)/python $(TORCH_PY) torch/bench_torch_ddp.py

TEST_TARGETS += test-torch test-torch-run
