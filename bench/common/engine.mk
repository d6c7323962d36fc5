# bench/common/engine.mk - what the device benchmarks share: the engine and
# CUDA objects built into $(OBJ) and the rules for them.  A Makefile sets
# ROOT, NVCCFLAGS (optional) and its targets, then includes this file.
NVCC      ?= $(shell command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)
ARCHS     ?= -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90
NVCCFLAGS ?= -O3 -std=c++17 $(ARCHS) --expt-relaxed-constexpr -Xcompiler -fvisibility=hidden
CC        ?= gcc
CFLAGS    ?= -O2 -g -std=gnu11 -Wall
INC        = -I$(ROOT)/engine -I$(ROOT)/cuda -I$(ROOT)/bench/common
OBJ        = obj

ENGINE_C   = $(filter-out $(ROOT)/engine/gpu_stub.c,$(wildcard $(ROOT)/engine/*.c))
ENGINE_O   = $(patsubst $(ROOT)/engine/%.c,$(OBJ)/%.o,$(ENGINE_C))
CUDA_O     = $(patsubst $(ROOT)/cuda/%.cu,$(OBJ)/%.o,$(wildcard $(ROOT)/cuda/*.cu))
DEPS       = $(wildcard $(ROOT)/cuda/*.cuh) $(wildcard $(ROOT)/engine/*.h) \
             $(wildcard $(ROOT)/bench/common/*.cuh)

$(OBJ)/%.o: $(ROOT)/engine/%.c $(DEPS) | $(OBJ)
	$(CC) $(CFLAGS) $(INC) -c $< -o $@

$(OBJ)/%.o: $(ROOT)/cuda/%.cu $(DEPS) | $(OBJ)
	$(NVCC) $(NVCCFLAGS) $(INC) -c $< -o $@

$(OBJ)/%.o: %.cu $(DEPS) | $(OBJ)
	$(NVCC) $(NVCCFLAGS) $(INC) -c $< -o $@

$(OBJ):
	mkdir -p $(OBJ)
