// SPDX-License-Identifier: BSD-2-Clause

// gotruth SECONDS: a Go program of known shares for tests/unwind/run.sh,
// built stripped (-ldflags=-s -w, as Go services ship) and not. Until its
// main thread has used SECONDS of CPU it spends 60 %, 30 % and 10 % of that
// thread's CPU time under three chains of callers:
//
//	main.main > main.alphaOuter > main.alphaInner > crypto/sha256.Sum256 (assembly
//	  that uses rbp as a scratch register)
//	main.main > main.betaOnly > main.betaSpin (plain Go)
//	main.main > main.gammaOuter > main.gammaMiddle > main.gammaInner >
//	  crypto/sha512.Sum512 (assembly)
//
// The shares are thread CPU time, read every few microseconds of work
// inside each chain (the clock's own cost lands in its chain). Nothing is
// allocated in the loop, so the collector stays idle.
package main

import (
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"unsafe"
)

const (
	clockThreadCPUTime = 3 // CLOCK_THREAD_CPUTIME_ID
	roundNanos         = 10_000_000
)

var (
	buf   = make([]byte, 1024)
	sink  uint64
	sum32 [32]byte
	sum64 [64]byte
)

func threadNanos() int64 {
	var ts syscall.Timespec
	syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime,
		uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

//go:noinline
func alphaInner(until int64) {
	for threadNanos() < until {
		for i := 0; i < 4; i++ {
			sum32 = sha256.Sum256(buf)
			buf[0] ^= sum32[0]
		}
	}
}

//go:noinline
func alphaOuter(until int64) { alphaInner(until); sink++ }

//go:noinline
func betaSpin(until int64) {
	x := sink
	for threadNanos() < until {
		for i := 0; i < 20000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	sink = x
}

//go:noinline
func betaOnly(until int64) { betaSpin(until); sink++ }

//go:noinline
func gammaInner(until int64) {
	for threadNanos() < until {
		for i := 0; i < 4; i++ {
			sum64 = sha512.Sum512(buf)
			buf[1] ^= sum64[0]
		}
	}
}

//go:noinline
func gammaMiddle(until int64) { gammaInner(until); sink++ }

//go:noinline
func gammaOuter(until int64) { gammaMiddle(until); sink++ }

func main() {
	runtime.LockOSThread()
	seconds, _ := strconv.ParseFloat(os.Args[1], 64)
	start := threadNanos()
	for now := start; now-start < int64(seconds*1e9); now = threadNanos() {
		alphaOuter(now + roundNanos*6/10)
		betaOnly(threadNanos() + roundNanos*3/10)
		gammaOuter(threadNanos() + roundNanos*1/10)
	}
	fmt.Println(sink%10, sum32[0], sum64[0])
}
