# gpuidx - PGXS build.  Builds cuda/*.cu with nvcc when nvcc is found (the
# CUDA runtime linked statically), otherwise a CPU-only module.

EXTENSION = gpuidx
MODULE_big = gpuidx
DATA = gpuidx--0.1.sql gpuidx--0.2.sql gpuidx--0.1--0.2.sql
PGFILEDESC = "gpuidx - GPU-resident index for batched integer lookups"

PG_CONFIG ?= pg_config

# nvcc: on PATH, or the usual CUDA location.  `make NVCC=` forces CPU-only.
NVCC ?= $(shell command -v nvcc 2>/dev/null || { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
CUDA_ARCHS ?= -gencode arch=compute_80,code=sm_80 \
              -gencode arch=compute_90,code=sm_90 \
              -gencode arch=compute_90,code=compute_90
NVCCFLAGS ?= -O3 -std=c++17 $(CUDA_ARCHS) -Xcompiler -fPIC -Xcompiler -fvisibility=hidden \
             --expt-relaxed-constexpr -Iengine

SRC_OBJS = $(patsubst %.c,%.o,$(sort $(wildcard src/*.c)))
ENGINE_OBJS = $(patsubst %.c,%.o,$(filter-out engine/gpu_stub.c,$(sort $(wildcard engine/*.c))))
CUDA_SRCS = $(sort $(wildcard cuda/*.cu))
CUDA_OBJS = $(patsubst %.cu,%.o,$(CUDA_SRCS))

ifeq ($(strip $(NVCC)),)
GPU_OBJS = engine/gpu_stub.o
GPU_LIBS =
else
GPU_OBJS = $(CUDA_OBJS)
GPU_LIBS = -L$(CUDA_HOME)/lib64 -lcudart_static -lrt -ldl -lpthread -lstdc++
endif

OBJS = $(SRC_OBJS) $(ENGINE_OBJS) $(GPU_OBJS)
SHLIB_LINK += $(GPU_LIBS)
PG_CPPFLAGS = -Iengine -Isrc
PG_CFLAGS = -std=gnu11

# Regression tests: every sql/*.sql file, in name order.
REGRESS = $(sort $(basename $(notdir $(wildcard sql/*.sql))))
REGRESS_OPTS = --inputdir=. --load-extension=gpuidx
TAP_TESTS = 1

# The .cu objects have no LLVM bitcode; don't ask PGXS for any.
override with_llvm = no

EXTRA_CLEAN = $(CUDA_OBJS) engine/gpu_stub.o test/unit/test_engine bench/kernel_bench

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

cuda/%.o: cuda/%.cu $(wildcard cuda/*.cuh) $(wildcard engine/*.h)
	$(NVCC) $(NVCCFLAGS) -c $< -o $@

$(SRC_OBJS) $(ENGINE_OBJS): $(wildcard src/*.h) $(wildcard engine/*.h)

# Engine unit tests (no PostgreSQL): CPU engine always, GPU engine when built
# with CUDA and a device is present.
# test/common/ holds what only tests and benchmarks build (the classic vEB).
UNIT_CFLAGS = -O2 -g -std=gnu11 -Wall -Wextra -Iengine -Itest/common
UNIT_SRCS = $(wildcard test/unit/*.c) $(wildcard test/common/*.c)
test/unit/test_engine: $(UNIT_SRCS) $(wildcard test/common/*.h) $(patsubst %.o,%.c,$(ENGINE_OBJS)) $(GPU_OBJS) $(wildcard engine/*.h)
	$(CC) $(UNIT_CFLAGS) -o $@ $(UNIT_SRCS) $(patsubst %.o,%.c,$(ENGINE_OBJS)) $(GPU_OBJS) $(GPU_LIBS) -lm -pthread

unittest: test/unit/test_engine
	test/unit/test_engine

.PHONY: unittest
