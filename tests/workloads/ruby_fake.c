// SPDX-License-Identifier: BSD-2-Clause
/* A program that pretends to be Ruby 3.1 to kiln (tests/unwind/ruby.sh):
 * its name starts with "ruby" and it has the symbols kiln looks for, with
 * a VM that passes kiln's checks (a main thread whose execution context
 * points back to it and holds its own thread pointer, ruby_current_ec in
 * this executable's TLS, control frames holding instruction sequences).
 * Then it turns its frames into garbage while rb_vm_exec spins: frames out
 * of the VM stack, pointers to nothing, objects that are no iseq, bodies
 * of random bytes, a stack of more frames than kiln keeps. kiln must count
 * what it refuses and keep the native frames.
 *
 *   ruby_fake SECONDS [refuse | gvl]
 * refuse: the frames hold no iseqs for the whole run: kiln tries again
 * while the process is young (a VM half built looks so too), then
 * refuses it (offsets) and reads nothing more.
 * gvl: ruby_current_ec stays unset, so kiln falls back to the main
 * ractor's running EC (the main thread's, a sane state throughout), while
 * a second thread spins in rb_vm_exec too: only the main thread's samples
 * may get Ruby frames. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FRAMES 256 /* control frames the VM stack holds */
#define CFP 64 /* sizeof(rb_control_frame_t) */

/* 3.1's layout, as unwind/ruby.c expects it. */
__attribute__((used)) const char ruby_version[] = "3.1.2";
__thread void *ruby_current_ec;
void *ruby_current_vm_ptr;
void *ruby_single_main_ractor;

static uint8_t vm[64], ractor[1024], thread[512], ec[64];
static uint64_t stack[FRAMES * CFP / 8] __attribute__((aligned(64)));
static uint64_t eps[FRAMES];
static uint8_t iseqs[2][32], bodies[2][256], strings[2][40], code[64];
static uint8_t garbage[4096];
static volatile uint64_t sink;

static void put(uint8_t *base, size_t off, uint64_t v)
{
	memcpy(base + off, &v, 8);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The "VM": burns CPU for a while. */
__attribute__((noinline)) void rb_vm_exec(double until)
{
	while (now() < until)
		for (int i = 0; i < 100000; i++)
			sink += (uint64_t)i * i;
}

static uint8_t *frame(int i)
{
	return (uint8_t *)stack + sizeof(stack) - (size_t)(i + 1) * CFP;
}

/* n control frames below the dummy at the stack's end: the innermost
 * first, each running iseq 0 but the outermost (iseq 1, FINISH). */
static void frames(int n, int refuse)
{
	memset(stack, 0, sizeof(stack));
	eps[0] = 0x79990001 | 0x80 | 0x20; /* the dummy: a C frame */
	put(frame(0), 32, (uint64_t)&eps[0]);
	for (int i = 1; i <= n; i++) {
		int outer = i == 1;
		uint8_t *f = frame(i);

		eps[i] = outer ? 0x77770001 | 0x20 : 0x11110001;
		put(f, 0, (uint64_t)code + 16); /* pc */
		put(f, 16, refuse ? (uint64_t)garbage : (uint64_t)iseqs[!outer ? 0 : 1]);
		put(f, 32, (uint64_t)&eps[i]);
	}
	put(ec, 16, (uint64_t)frame(n)); /* cfp */
}

/* An embedded String (flags: T_STRING, length in bits 14-18). */
static void string(uint8_t *s, const char *text)
{
	size_t len = strlen(text);

	put(s, 0, 0x05 | (uint64_t)len << 14);
	memcpy(s + 16, text, len);
}

static void setup(int refuse)
{
	static uint32_t lines[3] = { 7, 0, 0 }; /* one insns_info entry: line 7 */

	ruby_current_vm_ptr = vm;
	ruby_single_main_ractor = ractor;
	ruby_current_ec = ec;
	put(vm, 32, (uint64_t)ractor); /* ractor.main_ractor */
	put(vm, 40, (uint64_t)thread); /* ractor.main_thread */
	put(ractor, 520, (uint64_t)ec); /* threads.running_ec */
	put(thread, 40, (uint64_t)ec); /* ec */
	put(thread, 80, (uint64_t)pthread_self()); /* thread_id */
	put(ec, 0, (uint64_t)stack); /* vm_stack */
	put(ec, 8, sizeof(stack) / 8); /* vm_stack_size */
	put(ec, 48, (uint64_t)thread); /* thread_ptr */
	string(strings[0], "fake_method");
	string(strings[1], "/fake/script.rb");
	for (int i = 0; i < 2; i++) {
		put(iseqs[i], 0, 0x1a | 7 << 12); /* T_IMEMO, imemo_iseq */
		put(iseqs[i], 16, (uint64_t)bodies[i]);
		put(bodies[i], 0, 1); /* type, iseq_size 0 */
		put(bodies[i], 4, 8); /* iseq_size */
		put(bodies[i], 8, (uint64_t)code); /* iseq_encoded */
		put(bodies[i], 64, (uint64_t)strings[1]); /* location.pathobj */
		put(bodies[i], 80, (uint64_t)strings[0]); /* location.label */
		put(bodies[i], 88, 2 * 5 + 1); /* first_lineno: 5 */
		put(bodies[i], 120, (uint64_t)lines); /* insns_info.body */
		put(bodies[i], 136, 1); /* insns_info.size */
	}
	frames(2, refuse);
}

/* Makes the VM's frames one kind of garbage or another. */
static void corrupt(unsigned round)
{
	for (size_t i = 0; i < sizeof(garbage); i++)
		garbage[i] = (uint8_t)rand();
	frames(2, 0);
	switch (round % 6) {
	case 0: /* the current frame outside the VM stack */
		put(ec, 16, (uint64_t)garbage);
		break;
	case 1: /* iseq pointers to objects that are no iseq */
		put(frame(2), 16, (uint64_t)garbage);
		break;
	case 2: /* an environment pointer to unmapped memory */
		put(frame(2), 32, 0x10);
		break;
	case 3: /* random bytes for frames */
		memcpy(frame(2), garbage, 2 * CFP);
		break;
	case 4: /* iseqs whose bodies are random bytes */
		memcpy(bodies[0], garbage, sizeof(bodies[0]));
		memcpy(bodies[1], garbage + 256, sizeof(bodies[1]));
		break;
	default: /* more frames than a stack keeps, none ending the call */
		frames(FRAMES - 1, 0);
		eps[1] = 0x11110001;
		break;
	}
}

static void *other_thread(void *until)
{
	rb_vm_exec(*(double *)until);
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5, end = now() + seconds;
	int refuse = argc > 2 && strcmp(argv[2], "refuse") == 0;
	unsigned round = 0;
	pthread_t th;

	setup(refuse);
	if (argc > 2 && strcmp(argv[2], "gvl") == 0) {
		ruby_current_ec = NULL;
		if (pthread_create(&th, NULL, other_thread, &end))
			return 1;
		rb_vm_exec(end);
		pthread_join(th, NULL);
		return 0;
	}
	if (refuse) {
		rb_vm_exec(end);
		return 0;
	}
	/* A second to be recognized with a sane state, then garbage. */
	rb_vm_exec(now() + 1);
	while (now() < end) {
		corrupt(round++);
		rb_vm_exec(now() + 0.1);
		setup(0);
	}
	return 0;
}
