/*
 * launch_bench: what a launch and its synchronisation cost on this host and
 * GPU, by the kernel's parameter bytes, the stream and the call that waits.
 * The engine's call for a batch of 10^5 probes is about 15 us on an H100,
 * two thirds of it launch and synchronisation (bench/RESULTS.md, twenty-
 * fifth session), and it passes a 368-byte tree (TreeDev) where the binary
 * search passes a few pointers; this separates those costs from the search.
 *
 * Every kernel is empty in effect (count 0) but launched with the grid of
 * a batch of 10^5 probes (391 blocks of 256).  Variants alternate, each
 * timed run after an untimed one of its own kind (as kernel_bench's rows);
 * the table gives medians of 2001 runs: the launch call alone and the
 * launch with its synchronisation.
 */
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <vector>
#include <cuda_runtime.h>

#define CUDA_OK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); return 1; } } while (0)

struct Big
{
	uint64_t	w[46];			/* 368 bytes, as TreeDev<int64_t> */
};

/* A few pointers, as the binary search takes. */
__global__ void
small_kernel(const int64_t *probes, uint64_t count, uint64_t *first, uint64_t *last)
{
	uint64_t	i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x;

	if (i < count)
		first[i] = last[i] = (uint64_t) probes[i];
}

/* The tree's shape of arguments: the struct and nine more. */
__global__ void
big_kernel(Big T, int op, const int64_t *probes, const int64_t *hi, const void *skeys,
		   const uint32_t *sidx, uint64_t count, uint64_t *first, uint64_t *last, const int *gate)
{
	uint64_t	i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x;

	if (i < count)
		first[i] = last[i] = (uint64_t) probes[i] + T.w[op & 31];
}

static double
now_us(void)
{
	return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static double
median(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	return v[v.size() / 2];
}

int
main(void)
{
	const unsigned grid = 391;
	const int	reps = 2001;
	cudaStream_t st;
	Big			T = {};
	cudaDeviceProp prop;

	CUDA_OK(cudaGetDeviceProperties(&prop, 0));
	CUDA_OK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
	struct Variant
	{
		const char *name;
		std::function<void(void)> launch,
					wait;
	};
	std::vector<Variant> vs = {
		{"small args, default stream, cudaDeviceSynchronize",
			[&] { small_kernel<<<grid, 256>>>(NULL, 0, NULL, NULL); }, [] { cudaDeviceSynchronize(); }},
		{"368-byte struct + 9 args, default stream, cudaDeviceSynchronize",
			[&] { big_kernel<<<grid, 256>>>(T, 0, NULL, NULL, NULL, NULL, 0, NULL, NULL, NULL); }, [] { cudaDeviceSynchronize(); }},
		{"small args, own stream, cudaStreamSynchronize",
			[&] { small_kernel<<<grid, 256, 0, st>>>(NULL, 0, NULL, NULL); }, [&] { cudaStreamSynchronize(st); }},
		{"368-byte struct + 9 args, own stream, cudaStreamSynchronize",
			[&] { big_kernel<<<grid, 256, 0, st>>>(T, 0, NULL, NULL, NULL, NULL, 0, NULL, NULL, NULL); }, [&] { cudaStreamSynchronize(st); }},
		{"368-byte struct + 9 args, own stream, cudaDeviceSynchronize",
			[&] { big_kernel<<<grid, 256, 0, st>>>(T, 0, NULL, NULL, NULL, NULL, 0, NULL, NULL, NULL); }, [] { cudaDeviceSynchronize(); }},
	};
	std::vector<std::vector<double>> tl(vs.size()),
				tt(vs.size());

	for (auto &v : vs)
	{							/* load each kernel before timing */
		v.launch();
		v.wait();
	}
	CUDA_OK(cudaGetLastError());
	for (int r = 0; r < reps; r++)
		for (size_t i = 0; i < vs.size(); i++)
		{
			vs[i].launch();
			vs[i].wait();
			double		t0 = now_us();

			vs[i].launch();
			double		t1 = now_us();

			vs[i].wait();
			double		t2 = now_us();

			tl[i].push_back(t1 - t0);
			tt[i].push_back(t2 - t0);
		}
	CUDA_OK(cudaGetLastError());
	printf("launch_bench: %s, %u blocks of 256, medians of %d (us)\n\n", prop.name, grid, reps);
	printf("| variant | launch call | launch + synchronisation |\n| --- | --- | --- |\n");
	for (size_t i = 0; i < vs.size(); i++)
		printf("| %s | %.2f | %.2f |\n", vs[i].name, median(tl[i]), median(tt[i]));
	cudaStreamDestroy(st);
	return 0;
}
