// SPDX-License-Identifier: BSD-2-Clause
/* A program that pretends to be CPython 3.11 to kiln (tests/unwind/python.sh):
 * its name starts with "python" and it has the symbols kiln looks for, with
 * an interpreter state that passes kiln's checks (a code type whose member
 * table agrees, a thread state in the thread's glibc TSD under a key in
 * _PyRuntime's place for it, a current frame with a code object). Then it
 * turns its frames into garbage while _PyEval_EvalFrameDefault spins:
 * cycles, pointers to nothing, objects that are no code, unreadable
 * memory. kiln must count what it refuses and keep the native frames.
 *
 *   python_fake SECONDS [refuse]
 * refuse: the code type's size is wrong from the start: kiln refuses the
 * process (offsets) and reads nothing more. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* 3.11's layout, as unwind/python.c expects it. */
uint32_t Py_Version = 0x030b02f0;
uint8_t _PyRuntime[166688] __attribute__((aligned(64)));
uint8_t PyCode_Type[416] __attribute__((aligned(64)));

struct member {
	const char *name;
	int type;
	long offset;
	int flags;
	const char *doc;
};

static struct member members[] = {
	{ "co_argcount", 0, 56, 0, 0 },
	{ "co_flags", 0, 48, 0, 0 },
	{ "co_firstlineno", 0, 72, 0, 0 },
	{ "co_filename", 0, 112, 0, 0 },
	{ "co_name", 0, 120, 0, 0 },
	{ "co_qualname", 0, 128, 0, 0 },
	{ 0, 0, 0, 0, 0 },
};

static uint8_t interp[64], tstate[256], cframe[32];
static uint8_t frames[4][96] __attribute__((aligned(16)));
static uint8_t codes[2][256] __attribute__((aligned(16)));
static uint8_t garbage[4096];
static volatile uint64_t sink;

static void put(uint8_t *base, size_t off, uint64_t v)
{
	memcpy(base + off, &v, 8);
}

void *PyGILState_GetThisThreadState(void)
{
	return 0;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The "eval loop": burns CPU for a while. */
__attribute__((noinline)) void _PyEval_EvalFrameDefault(double until)
{
	while (now() < until)
		for (int i = 0; i < 100000; i++)
			sink += (uint64_t)i * i;
}

/* Makes the frame chain one kind of garbage or another. */
static void corrupt(unsigned round)
{
	for (size_t i = 0; i < sizeof(garbage); i++)
		garbage[i] = (uint8_t)rand();
	switch (round % 5) {
	case 0: /* a cycle of frames whose code objects are real */
		put(frames[0], 48, (uint64_t)frames[1]);
		put(frames[1], 48, (uint64_t)frames[0]);
		frames[0][68] = frames[1][68] = 0;
		break;
	case 1: /* code pointers to objects that are no code */
		put(frames[0], 32, (uint64_t)garbage);
		put(frames[0], 48, (uint64_t)garbage + 64);
		break;
	case 2: /* a frame pointer to unmapped memory */
		put(cframe, 8, 0x10);
		break;
	case 3: /* random bytes for a frame */
		memcpy(frames[0], garbage, sizeof(frames[0]));
		put(cframe, 8, (uint64_t)frames[0]);
		break;
	default: /* code objects with garbage names and line tables */
		memcpy(codes[0] + 16, garbage, sizeof(codes[0]) - 16);
		put(codes[0], 8, (uint64_t)PyCode_Type);
		put(frames[0], 32, (uint64_t)codes[0]);
		put(frames[0], 48, 0);
		put(cframe, 8, (uint64_t)frames[0]);
		break;
	}
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5, end = now() + seconds;
	int refuse = argc > 2 && strcmp(argv[2], "refuse") == 0;
	pthread_key_t key;
	unsigned round = 0;
	int32_t tss[2];

	put(PyCode_Type, 32, refuse ? 123 : 184); /* tp_basicsize */
	put(PyCode_Type, 240, (uint64_t)members); /* tp_members */
	pthread_key_create(&key, NULL);
	pthread_setspecific(key, tstate);
	tss[0] = 1;
	tss[1] = (int32_t)key;
	memcpy(_PyRuntime + 592, tss, sizeof(tss)); /* autoTSSkey */
	put(_PyRuntime, 40, (uint64_t)interp); /* interpreters.head */
	put(interp, 16, (uint64_t)tstate); /* threads.head */
	put(tstate, 152, (uint64_t)pthread_self()); /* thread_id */
	put(tstate, 56, (uint64_t)cframe); /* cframe */
	put(cframe, 8, (uint64_t)frames[0]); /* current_frame */
	for (int i = 0; i < 2; i++) {
		put(codes[i], 8, (uint64_t)PyCode_Type);
		put(frames[i], 32, (uint64_t)codes[i]);
		put(frames[i], 56, (uint64_t)codes[i] + 184 + 8);
	}
	put(frames[0], 48, (uint64_t)frames[1]);
	frames[1][68] = 1; /* is_entry */
	/* A second to be recognized with a sane state, then garbage. */
	_PyEval_EvalFrameDefault(now() + 1);
	while (now() < end) {
		corrupt(round++);
		_PyEval_EvalFrameDefault(now() + 0.1);
	}
	return 0;
}
