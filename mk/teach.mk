# mk/teach.mk - seeing the algorithms: a step-by-step trace of any
# collective, diagrams of every schedule, and the seeds' own programs run
# beside coll's.
#
#   make trace COLL=allreduce ALGO=rabenseifner P=6 N=12 [ROOT= DTYPE= OP= INPLACE= GROUP= SCRATCH=]
#   make diagrams        build/diagrams/index.html + one SVG per (collective, algorithm, p)
#                        and per hierarchical form (tools/hier_trace.c --svg)
#   make test-trace      every registered (collective, algorithm) at p = 5 and 37, checked
#   make stepper         build/stepper/index.html: step through any schedule, every rank's buffers
#   make test-stepper    the stepper page in headless Chromium
#   make test-diagrams   the page in headless Chromium: loads, every diagram renders
#   make test-seeds-py   the torch and numpy seeds' own programs beside coll's
#   make trace-hier COLL=allreduce HOSTS=2 LOCAL=3 N=12 [ORDER=interleaved|host-major ROOT= CHECKS=]
#                        coll_hier.h's form, phase by phase, on H hosts x L ranks (threads), checked
#   make test-trace-hier every hierarchical collective traced at 2x3, 3x2, 4x2, both orders, checked
#   make trace-window COLL=allreduce FORM=two P=4 N=10 [ROOT= INPLACE= SCRATCH= INLINE=1]
#   make test-trace-window every collective over windows traced at 1-8 ranks, checked
TEACH_B      := $(B)/teach
TEACH_CFLAGS := -std=c99 $(CFLAGS) $(WARN) -I.
TEACH_HDRS   := coll.h tools/sched_sim.h ports/coll_mailbox.h

$(TEACH_B)/trace: tools/trace.c $(TEACH_HDRS)
	@mkdir -p $(@D)
	$(CC) $(TEACH_CFLAGS) -o $@ $< -lm

TRACE_ARGS = $(if $(COLL),coll=$(COLL)) $(if $(ALGO),algo=$(ALGO)) $(if $(P),p=$(P)) \
             $(if $(N),n=$(N)) $(if $(ROOT),root=$(ROOT)) $(if $(DTYPE),dtype=$(DTYPE)) \
             $(if $(OP),op=$(OP)) $(if $(INPLACE),inplace=$(INPLACE)) \
             $(if $(GROUP),group=$(GROUP)) $(if $(SCRATCH),scratch=$(SCRATCH))

.PHONY: trace test-trace
## trace: [docs] any collective step by step on every rank (COLL= ALGO= P= N= ...), checked against a plain loop
trace: $(TEACH_B)/trace
	@$(TEACH_B)/trace $(TRACE_ARGS)

# every (collective, algorithm) at p = 5 (a fold) and at p = 37 (a summary),
# the check's own check (a corrupted result must be reported), more than 16
# ranks, and bad names answered with the good ones
## test-trace: every registered (collective, algorithm) traced at p = 5 and 37 and checked; the command line's answers
test-trace: $(TEACH_B)/trace
	@sh test/teach_trace.sh $(TEACH_B)/trace

TEST_TARGETS += test-trace
EXAMPLES_TARGETS += $(TEACH_B)/trace

# ---- the hierarchical forms (coll_hier.h), traced over the threads port -------
$(TEACH_B)/hier_trace: tools/hier_trace.c tools/diagrams.c coll_hier.h ports/coll_threads.h $(TEACH_HDRS)
	@mkdir -p $(@D)
	$(CC) $(TEACH_CFLAGS) -o $@ $< $(LDLIBS_THREADS) -lm

HIER_TRACE_ARGS = $(if $(COLL),coll=$(COLL)) $(if $(HOSTS),hosts=$(HOSTS)) $(if $(LOCAL),local=$(LOCAL)) \
                  $(if $(N),n=$(N)) $(if $(ROOT),root=$(ROOT)) $(if $(ORDER),order=$(ORDER)) \
                  $(if $(CHECKS),checks=$(CHECKS))

.PHONY: trace-hier test-trace-hier
## trace-hier: [docs] a hierarchical collective phase by phase on H hosts x L ranks (COLL= HOSTS= LOCAL= N= ORDER= ROOT=), bytes across hosts counted, checked against a plain loop
trace-hier: $(TEACH_B)/hier_trace
	@$(TEACH_B)/hier_trace $(HIER_TRACE_ARGS)

# every collective coll_hier.h has at 2x3, 3x2 and 4x2, both rank orders,
# checked (result, road, levels, phase order), a corrupted result caught;
# then the command line's answers
## test-trace-hier: every hierarchical collective traced at 2x3, 3x2, 4x2, both orders, checked; the command line's answers
test-trace-hier: $(TEACH_B)/hier_trace
	@sh test/teach_trace_hier.sh $(TEACH_B)/hier_trace

TEST_TARGETS += test-trace-hier
EXAMPLES_TARGETS += $(TEACH_B)/hier_trace

# ---- the collectives over windows (coll_window.h), move by move -----------------
$(TEACH_B)/window_trace: tools/window_trace.c tools/diagrams.c coll_window.h $(TEACH_HDRS)
	@mkdir -p $(@D)
	$(CC) $(TEACH_CFLAGS) -o $@ $< -lm

WINDOW_TRACE_ARGS = $(if $(COLL),coll=$(COLL)) $(if $(FORM),form=$(FORM)) $(if $(P),p=$(P)) $(if $(N),n=$(N)) \
                    $(if $(ROOT),root=$(ROOT)) $(if $(INPLACE),inplace=$(INPLACE)) $(if $(SCRATCH),scratch=$(SCRATCH)) \
                    $(if $(INLINE),inline=$(INLINE))

.PHONY: trace-window test-trace-window
## trace-window: [docs] a collective over windows phase by phase (COLL= FORM=one|two P= N= ROOT= INPLACE= SCRATCH= INLINE=1): who reads whom, which bytes, copy or fold, checked against a plain loop
trace-window: $(TEACH_B)/window_trace
	@$(TEACH_B)/window_trace $(WINDOW_TRACE_ARGS)

## test-trace-window: every collective over windows traced at 1-8 ranks, in place and out, checked (plain loop, no overlap in a phase, coll_window.h's executor bitwise), a corrupted move caught; the command line's answers
test-trace-window: $(TEACH_B)/window_trace
	@sh test/teach_trace_window.sh $(TEACH_B)/window_trace

TEST_TARGETS += test-trace-window
EXAMPLES_TARGETS += $(TEACH_B)/window_trace

# ---- diagrams ------------------------------------------------------------------
$(TEACH_B)/diagrams: tools/diagrams.c $(TEACH_HDRS)
	@mkdir -p $(@D)
	$(CC) $(TEACH_CFLAGS) -o $@ $< -lm

.PHONY: diagrams docs-diagrams test-diagrams
## diagrams: [docs] build/diagrams/index.html, one SVG per (collective, algorithm, p), per hierarchical form and per collective over windows
diagrams: $(TEACH_B)/diagrams $(TEACH_B)/hier_trace $(TEACH_B)/window_trace
	@mkdir -p $(B)/diagrams
	@$(TEACH_B)/diagrams $(B)/diagrams
	@$(TEACH_B)/hier_trace --svg $(B)/diagrams/svg
	@$(TEACH_B)/window_trace --svg $(B)/diagrams/svg --page $(B)/diagrams/index.html
	@echo "open $(B)/diagrams/index.html"

# the copy under docs/ that README.md links to
## docs-diagrams: [docs] the diagrams again under docs/diagrams, the copy README.md links to
docs-diagrams: $(TEACH_B)/diagrams $(TEACH_B)/hier_trace $(TEACH_B)/window_trace
	@rm -rf docs/diagrams && mkdir -p docs/diagrams
	@$(TEACH_B)/diagrams docs/diagrams
	@$(TEACH_B)/hier_trace --svg docs/diagrams/svg
	@$(TEACH_B)/window_trace --svg docs/diagrams/svg --page docs/diagrams/index.html

## test-diagrams: the diagrams page in headless Chromium: loads, every diagram renders
test-diagrams: diagrams
	@sh test/teach_diagrams.sh $(B)/diagrams

TEST_TARGETS += test-diagrams
EXAMPLES_TARGETS += $(TEACH_B)/diagrams

# ---- the seeds' own programs beside coll's ------------------------------------
# Debian's python3-torch and python3-numpy live in /usr/bin/python3.
TEACH_PY := $(firstword $(wildcard /usr/bin/python3) python3)

.PHONY: test-seeds-py
## test-seeds-py: the torch and numpy seeds' own programs beside coll's
test-seeds-py: $(B)/tcp/seed_torch $(B)/ports-mpi-shm/seed_ring_sim
	@if ! $(TEACH_PY) -c 'import torch, numpy' 2>/dev/null; then \
	    if [ "$$CI" = true ]; then echo "python3-torch or python3-numpy not found (CI): failing"; \
	        echo "seeds-py: 0 passed, 1 failed"; exit 1; fi; \
	    echo "*** SKIPPED $@: python3-torch / python3-numpy not found (apt-get install python3-torch python3-numpy) ***"; \
	    echo "seeds-py: 0 passed, 0 failed"; exit 0; fi; \
	timeout 300 $(TEACH_PY) test/teach_seeds.py $(B)/tcp/seed_torch $(B)/ports-mpi-shm/seed_ring_sim

TEST_TARGETS += test-seeds-py

# ---- the stepper: one page to step through any schedule ----------------------
$(TEACH_B)/stepper: tools/stepper.c $(TEACH_HDRS)
	@mkdir -p $(@D)
	$(CC) $(TEACH_CFLAGS) -o $@ $< -lm

$(B)/stepper/index.html: $(TEACH_B)/stepper tools/stepper.html coll.h
	@mkdir -p $(@D)
	@$(TEACH_B)/stepper coll.h tools/stepper.html $@

.PHONY: stepper test-stepper
## stepper: [docs] build/stepper/index.html, every schedule step by step with every rank's buffers (one file)
stepper: $(B)/stepper/index.html
	@echo "open $(B)/stepper/index.html"

## test-stepper: the stepper page in headless Chromium: loads, steps, filters, compares, ends at the plain loop's values
test-stepper: $(B)/stepper/index.html
	@sh test/test_stepper.sh $(B)/stepper/index.html

TEST_TARGETS += test-stepper
EXAMPLES_TARGETS += $(TEACH_B)/stepper
