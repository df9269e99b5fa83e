# SPDX-License-Identifier: BSD-2-Clause
# CPU-bound Ruby for the unwind suite: recursion, string formatting, hashes,
# and blocks nested 6 deep (each level a C call back into the VM, about 6
# native frames), until this process has used ARGV[0] CPU seconds. User
# stacks: 18 frames on average, more than 64 (the least issue 14's walker
# must reach) in about 1 sample in 10 000. 40 levels made 250-frame stacks
# that even perf cuts (at its 127). Each round draws its sizes from a seeded
# generator, as cpu.py does and for its reason.
def fib(n)
  n < 2 ? n : fib(n - 1) + fib(n - 2)
end

def strings(k)
  s = 0
  k.times { |i| s += format("x%d-%s", i, "ab" * (i % 7)).upcase.size }
  s
end

def hashes(k)
  h = {}
  k.times { |i| h[i] = i * i }
  h.values.sum
end

def nested(depth)
  return fib(12) if depth.zero?
  [depth].each { |d| return nested(d - 1) }
end

limit = ARGV[0].to_f
t0 = Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID)
rng = Random.new(1)
n = 0
while Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID) - t0 < limit
  n += fib(rng.rand(14..17)) + strings(rng.rand(1000..3000)) + hashes(rng.rand(1500..4500)) +
       nested(6)
end
puts n % 1000
